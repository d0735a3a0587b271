// SPDX-License-Identifier: Apache-2.0
// The three tables keyed by operator names stay consistent: every IR optype an ONNX operator's
// conversion may emit has a registry entry with a shape rule and a host kernel, every registry
// entry has a kernel, and every kernel belongs to a registry entry.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "HostExecutor.hpp"
#include "IrGraphs.hpp"
#include "onnx/OperatorTable.hpp"

namespace qaic::onnx {
namespace {

std::set<std::string, std::less<>> kernelNames() {
  std::set<std::string, std::less<>> names;
  for (std::string_view name : kernels::kernelOptypes()) names.emplace(name);
  return names;
}

TEST(OperatorRegistries, EveryEmittedIrOpHasAShapeRuleAndAKernel) {
  const auto kernels = kernelNames();
  for (const std::string& onnxOp : supportedOperators()) {
    const OperatorEntry* entry = findOperator(onnxOp);
    ASSERT_NE(entry, nullptr) << onnxOp;
    EXPECT_TRUE(entry->convert != nullptr || entry->fold != nullptr || entry->selectsBranch)
        << onnxOp << " has neither convert nor fold";
    for (std::string_view irOp : entry->irOps) {
      const ir::OpSpec* spec = ir::findOpSpec(irOp);
      ASSERT_NE(spec, nullptr) << onnxOp << " maps to IR op '" << irOp << "', which the IR registry lacks";
      EXPECT_NE(spec->shape, nullptr) << irOp << " has no shape rule";
      EXPECT_FALSE(spec->hostOnly) << onnxOp << " maps to host-only IR op '" << irOp << "'";
      EXPECT_TRUE(kernels.count(irOp)) << onnxOp << " maps to IR op '" << irOp << "', which has no host kernel";
    }
  }
}

TEST(OperatorRegistries, EveryIrOpHasAKernelAndEveryKernelAnIrOp) {
  const auto kernels = kernelNames();
  std::set<std::string, std::less<>> specs;
  for (const ir::OpSpec& spec : ir::opSpecs()) {
    specs.emplace(spec.optype);
    EXPECT_NE(spec.shape, nullptr) << spec.optype << " has no shape rule";
    EXPECT_TRUE(kernels.count(spec.optype)) << "IR op '" << spec.optype << "' has no host kernel";
  }
  for (const auto& name : kernels) EXPECT_TRUE(specs.count(name)) << "kernel '" << name << "' has no IR registry entry";
}

// Issue 18's list: what PyTorch 1.13 exports for transformers and current CNNs.
TEST(OperatorRegistries, ClaimsTheOperatorsOfModernNetworks) {
  const auto claimed = supportedOperators();
  EXPECT_GE(claimed.size(), 60u);
  for (const char* op : {"LayerNormalization",
                         "ReduceMean",
                         "Pow",
                         "Sqrt",
                         "Div",
                         "Erf",
                         "Tanh",
                         "Exp",
                         "Log",
                         "Neg",
                         "Reciprocal",
                         "Sub",
                         "Max",
                         "Min",
                         "Where",
                         "Equal",
                         "Less",
                         "Greater",
                         "Not",
                         "And",
                         "Cast",
                         "Slice",
                         "Split",
                         "Gather",
                         "GatherElements",
                         "ScatterElements",
                         "ScatterND",
                         "Squeeze",
                         "Unsqueeze",
                         "Expand",
                         "Tile",
                         "Shape",
                         "ConstantOfShape",
                         "Range",
                         "ReduceSum",
                         "ReduceMax",
                         "ReduceMin",
                         "ReduceProd",
                         "ArgMax",
                         "HardSwish",
                         "HardSigmoid",
                         "Softplus",
                         "Einsum",
                         "Resize",
                         "Trilu",
                         "MatMul",
                         "Conv",
                         "MaxPool",
                         "AveragePool"}) {
    EXPECT_TRUE(std::binary_search(claimed.begin(), claimed.end(), std::string(op))) << op << " is not claimed";
  }
}

}  // namespace
}  // namespace qaic::onnx
