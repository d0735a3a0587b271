// SPDX-License-Identifier: Apache-2.0
// The one message form for operator problems: "op 'NAME' (OPTYPE): KIND 'ARG': detail", so the
// parser, the shape rules and the typed getters all name the op and argument the same way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/Graph.hpp"

namespace qaic::ir {

// kind is "param", "input" or "output"; empty kind/arg gives "op 'NAME' (OPTYPE): detail".
[[noreturn]] void throwOpError(const Op& op, std::string_view kind, std::string_view argName,
                               const std::string& detail);
[[noreturn]] inline void throwParamError(const Op& op, std::string_view arg, const std::string& d) {
  throwOpError(op, "param", arg, d);
}
[[noreturn]] inline void throwInputError(const Op& op, std::string_view arg, const std::string& d) {
  throwOpError(op, "input", arg, d);
}

// Prefixes an error with the IR's source name, keeping the op and arg it names.
[[noreturn]] void rethrowWithSource(const IrError& error, const std::string& sourceName);

std::string formatDims(const Dims& dims);  // "[1,3,16,16]"

// Dimension arithmetic that reports overflow instead of wrapping (fuzzed inputs reach here).
int64_t checkedMul(const Op& op, std::string_view arg, int64_t a, int64_t b);
int64_t checkedAdd(const Op& op, std::string_view arg, int64_t a, int64_t b);

}  // namespace qaic::ir
