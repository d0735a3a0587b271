// SPDX-License-Identifier: Apache-2.0
#include <cmath>

#include "ir/Graph.hpp"
#include "ir/OpError.hpp"

namespace qaic::ir {
namespace {

template <typename T>
const T& expect(const Op& op, std::string_view argName, const char* typeName) {
  const Param* param = op.findParam(argName);
  if (param == nullptr) throwParamError(op, argName, "missing");
  const T* value = std::get_if<T>(&param->value);
  if (value == nullptr) throwParamError(op, argName, std::string("expected ") + typeName);
  return *value;
}

// Integer params truncate toward zero; values beyond 2^53 are not exact doubles.
int64_t truncateToInt(const Op& op, std::string_view argName, double value) {
  constexpr double kLimit = 9007199254740992.0;  // 2^53
  if (!std::isfinite(value) || std::fabs(value) > kLimit) {
    throwParamError(op, argName, "integer value out of range");
  }
  return static_cast<int64_t>(std::trunc(value));
}

template <typename T>
const T* findByArg(const std::vector<T>& items, std::string_view argName) {
  for (const auto& item : items) {
    if (item.argName == argName) return &item;
  }
  return nullptr;
}

}  // namespace

const Param* Op::findParam(std::string_view argName) const { return findByArg(params, argName); }
const TensorArg* Op::findInput(std::string_view argName) const { return findByArg(inputs, argName); }
const TensorArg* Op::findOutput(std::string_view argName) const { return findByArg(outputs, argName); }

double Op::number(std::string_view argName) const { return expect<double>(*this, argName, "a number"); }

int64_t Op::integer(std::string_view argName) const { return truncateToInt(*this, argName, number(argName)); }

bool Op::boolean(std::string_view argName) const { return expect<bool>(*this, argName, "a bool"); }

const std::string& Op::string(std::string_view argName) const {
  return expect<std::string>(*this, argName, "a string");
}

std::vector<double> Op::numbers(std::string_view argName) const {
  return expect<std::vector<double>>(*this, argName, "an array of numbers");
}

std::vector<int64_t> Op::integers(std::string_view argName) const {
  std::vector<int64_t> result;
  for (double value : numbers(argName)) result.push_back(truncateToInt(*this, argName, value));
  return result;
}

}  // namespace qaic::ir
