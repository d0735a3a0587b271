// SPDX-License-Identifier: Apache-2.0
// Checks one op's params against its registry entry: the declared set exactly, then each value's
// type, enum membership, fixed array length and per-element bound.
#include <cmath>
#include <set>
#include <string>

#include "ir/OpError.hpp"
#include "ir/OpRegistry.hpp"

namespace qaic::ir {
namespace {

constexpr double kMaxExactInt = 9007199254740992.0;  // 2^53

const char* kindName(ParamKind kind) {
  switch (kind) {
    case ParamKind::Number: return "a number";
    case ParamKind::Int: return "an integer number";
    case ParamKind::Bool: return "a bool";
    case ParamKind::String: return "a string";
    case ParamKind::Enum: return "a string";
    case ParamKind::NumberArray: return "an array of numbers";
    case ParamKind::IntArray: return "an array of integer numbers";
  }
  return "?";
}

const char* boundText(Bound bound) {
  switch (bound) {
    case Bound::Positive: return "> 0";
    case Bound::NonNegative: return ">= 0";
    case Bound::AtLeastOne: return ">= 1";
    case Bound::None: break;
  }
  return "";
}

std::string formatNumber(double value) {
  if (std::isfinite(value) && std::fabs(value) < 1e15 && value == std::trunc(value)) {
    return std::to_string(static_cast<int64_t>(value));
  }
  return std::to_string(value);
}

// For integer kinds the bound applies to the truncated value, matching what the op will use.
void checkElement(const Op& op, const ParamSpec& spec, double value, const std::string& where) {
  const bool isInt = spec.kind == ParamKind::Int || spec.kind == ParamKind::IntArray;
  if (isInt) {
    if (!std::isfinite(value) || std::fabs(value) > kMaxExactInt) {
      throwParamError(op, spec.argName, where + "integer value out of range");
    }
    value = std::trunc(value);
  }
  bool ok = true;
  switch (spec.bound) {
    case Bound::Positive: ok = value > 0; break;
    case Bound::NonNegative: ok = value >= 0; break;
    case Bound::AtLeastOne: ok = value >= 1; break;
    case Bound::None: break;
  }
  if (!ok) {
    throwParamError(op, spec.argName, where + "value " + formatNumber(value) + " must be " + boundText(spec.bound));
  }
}

void checkLength(const Op& op, const ParamSpec& spec, std::size_t length) {
  if (spec.lengthRule == LengthRule::Fixed && length != spec.length) {
    throwParamError(op, spec.argName,
                    "expected " + std::to_string(spec.length) + " elements, got " + std::to_string(length));
  }
  if (spec.lengthRule == LengthRule::UpToMaxRank && length > kMaxRank) {
    throwParamError(op, spec.argName,
                    std::to_string(length) + " dims exceed the maximum of " + std::to_string(kMaxRank));
  }
}

void checkValue(const Op& op, const ParamSpec& spec, const ParamValue& value) {
  const auto wrongType = [&] { throwParamError(op, spec.argName, std::string("expected ") + kindName(spec.kind)); };
  switch (spec.kind) {
    case ParamKind::Number:
    case ParamKind::Int: {
      const double* number = std::get_if<double>(&value);
      if (number == nullptr) wrongType();
      checkElement(op, spec, *number, "");
      return;
    }
    case ParamKind::Bool:
      if (!std::holds_alternative<bool>(value)) wrongType();
      return;
    case ParamKind::String:
      if (!std::holds_alternative<std::string>(value)) wrongType();
      return;
    case ParamKind::Enum: {
      const std::string* text = std::get_if<std::string>(&value);
      if (text == nullptr) wrongType();
      for (std::string_view allowed : spec.enumValues) {
        if (allowed == *text) return;
      }
      std::string list;
      for (std::string_view allowed : spec.enumValues) {
        list += (list.empty() ? "" : ", ") + std::string(allowed);
      }
      throwParamError(op, spec.argName, "unknown value '" + *text + "' (expected one of " + list + ")");
    }
    case ParamKind::NumberArray:
    case ParamKind::IntArray: {
      const auto* array = std::get_if<std::vector<double>>(&value);
      if (array == nullptr) wrongType();
      checkLength(op, spec, array->size());
      for (std::size_t i = 0; i < array->size(); ++i) {
        checkElement(op, spec, (*array)[i], "element " + std::to_string(i) + ": ");
      }
      return;
    }
  }
}

}  // namespace

void validateParams(const Op& op, const OpSpec& spec) {
  for (const Param& param : op.params) {
    bool declared = false;
    for (const ParamSpec& ps : spec.params) declared = declared || ps.argName == param.argName;
    if (!declared) throwParamError(op, param.argName, "not a parameter of " + op.optype);
  }
  for (const ParamSpec& ps : spec.params) {
    const Param* param = op.findParam(ps.argName);
    if (param == nullptr && ps.optional) continue;
    if (param == nullptr) throwParamError(op, ps.argName, "missing");
    checkValue(op, ps, param->value);
  }
}

}  // namespace qaic::ir

namespace qaic::ir {
namespace {

std::string joined(const std::vector<std::string_view>& names) {
  std::string text;
  for (std::string_view name : names) text += (text.empty() ? "" : ", ") + std::string(name);
  return text.empty() ? "none" : text;
}

void checkTensorArgs(const Op& op, const std::vector<TensorArg>& args, const std::vector<std::string_view>& expected,
                     std::string_view kind, std::string_view listKey) {
  if (args.size() != expected.size()) {
    throwOpError(op, "", "",
                 std::string(listKey) + ": expected " + std::to_string(expected.size()) + " (" + joined(expected) +
                     "), got " + std::to_string(args.size()));
  }
  for (const TensorArg& arg : args) {
    bool known = false;
    for (std::string_view name : expected) known = known || name == arg.argName;
    if (!known) {
      throwOpError(op, kind, arg.argName, "not an argument of " + op.optype + " (expected " + joined(expected) + ")");
    }
  }
}

void checkUniqueArgNames(const Op& op) {
  std::set<std::string> seen;
  const auto visit = [&](const std::string& argName, std::string_view kind) {
    if (!seen.insert(argName).second) throwOpError(op, kind, argName, "duplicate arg_name");
  };
  for (const auto& arg : op.inputs) visit(arg.argName, "input");
  for (const auto& arg : op.outputs) visit(arg.argName, "output");
  for (const auto& param : op.params) visit(param.argName, "param");
}

}  // namespace

const OpSpec& validateOp(const Op& op) {
  const OpSpec* spec = findOpSpec(op.optype);
  if (spec == nullptr) throwOpError(op, "", "", "unknown optype '" + op.optype + "'");
  checkUniqueArgNames(op);
  checkTensorArgs(op, op.inputs, spec->inputs, "input", "tensors_in");
  checkTensorArgs(op, op.outputs, spec->outputs, "output", "tensors_out");
  validateParams(op, *spec);
  if (spec->check != nullptr) spec->check(op);
  return *spec;
}

}  // namespace qaic::ir
