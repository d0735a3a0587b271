// SPDX-License-Identifier: Apache-2.0
#include "ir/OpError.hpp"

namespace qaic::ir {

void throwOpError(const Op& op, std::string_view kind, std::string_view argName, const std::string& detail) {
  std::string message = "op '" + op.name + "' (" + op.optype + "): ";
  if (!kind.empty()) {
    message += std::string(kind) + " '" + std::string(argName) + "': ";
  }
  message += detail;
  throw IrError(std::move(message), op.name, std::string(argName));
}

void rethrowWithSource(const IrError& error, const std::string& sourceName) {
  throw IrError(sourceName + ": " + error.what(), error.opName(), error.argName());
}

std::string formatDims(const Dims& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i != 0) text += ",";
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

int64_t checkedMul(const Op& op, std::string_view arg, int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) {
    throwOpError(op, arg.empty() ? "" : "param", arg, "dimension arithmetic overflows");
  }
  return result;
}

int64_t checkedAdd(const Op& op, std::string_view arg, int64_t a, int64_t b) {
  int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) {
    throwOpError(op, arg.empty() ? "" : "param", arg, "dimension arithmetic overflows");
  }
  return result;
}

}  // namespace qaic::ir
