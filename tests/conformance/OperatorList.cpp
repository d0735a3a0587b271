// Prints the ONNX operators the importer claims, one per line (its OperatorTable), for
// scripts/check-model-operators.py (make model-operators).
#include <iostream>

#include "onnx/OperatorTable.hpp"

int main() {
  for (const auto& op : qaic::onnx::supportedOperators()) std::cout << op << '\n';
  return 0;
}
