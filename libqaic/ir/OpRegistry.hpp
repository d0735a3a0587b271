// SPDX-License-Identifier: Apache-2.0
// The operator registry: for every optype its tensor argument names, its parameters (name, type,
// constraint) and its shape rule. The parser, shape inference, the executor, the ONNX importer
// and docs/formats/ir.md all follow this one table.
#pragma once

#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "ir/Graph.hpp"

namespace qaic::ir {

enum class ParamKind : uint8_t {
  Number,  // JSON number
  Int,     // JSON number, truncated toward zero
  Bool,
  String,       // any string
  Enum,         // one of ParamSpec::enumValues
  NumberArray,  // non-empty array of numbers
  IntArray,     // non-empty array of numbers, each truncated toward zero
};

// Applies to a scalar, or to each element of an array.
enum class Bound : uint8_t { None, Positive, NonNegative, AtLeastOne };

enum class LengthRule : uint8_t {
  Any,          // any non-empty length (at most kMaxRank for dims-like params)
  Fixed,        // exactly ParamSpec::length
  Rank,         // the rank of the op's first input (checked by shape inference)
  TwiceRank,    // 2 * the rank of the op's first input (checked by shape inference)
  UpToMaxRank,  // 1..kMaxRank (a shape)
};

struct ParamSpec {
  std::string_view argName;
  ParamKind kind = ParamKind::Number;
  Bound bound = Bound::None;
  LengthRule lengthRule = LengthRule::Any;
  std::size_t length = 0;                    // for LengthRule::Fixed
  std::vector<std::string_view> enumValues;  // for ParamKind::Enum
  bool optional = false;                     // may be absent (added later; older graphs lack it)
};

// Checks across parameters that need no input shapes (e.g. ran[0] <= ran[1]). Throws IrError.
using StructuralCheck = void (*)(const Op& op);
// Output infos in the order of OpSpec::outputs, from input infos in the order of OpSpec::inputs.
// Throws IrError naming the op and argument for any shape-dependent violation.
using ShapeRule = std::vector<TensorInfo> (*)(const Op& op, std::span<const TensorInfo> inputs);

struct OpSpec {
  std::string_view optype;
  std::vector<std::string_view> inputs;
  std::vector<std::string_view> outputs;
  std::vector<ParamSpec> params;
  StructuralCheck check = nullptr;
  ShapeRule shape = nullptr;
  bool hostOnly = false;    // print / fprint: lightnet runs them, qaic-exec rejects them
  bool extension = false;   // a project extension, not a LightNet operator
  std::string_view result;  // the shape rule in words, for docs
};

const std::vector<OpSpec>& opSpecs();
const OpSpec* findOpSpec(std::string_view optype);  // nullptr for an unknown optype

// The string values of enum params, shared with the executor and importer.
inline constexpr std::string_view kElewOps[] = {"TL_MUL", "TL_DIV", "TL_SUM", "TL_SUB", "TL_MAX", "TL_MIN", "TL_POW"};
// How a collective's data travels between cards: as is, or as MXINT8 (-allow-mxint8-mdp-io).
inline constexpr std::string_view kWireFormats[] = {"native", "mxint8"};
inline constexpr std::string_view kAutopads[] = {"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"};
inline constexpr std::string_view kResizeModes[] = {"TL_NEAREST", "TL_LINEAR"};
inline constexpr std::string_view kSortDirs[] = {"TL_SORT_DIR_ASCENDING", "TL_SORT_DIR_DESCENDING"};
inline constexpr std::string_view kPadModes[] = {"constant", "reflect", "edge"};
// Project extensions. elew_bcast takes LightNet's elew_op values and these.
inline constexpr std::string_view kElewBcastOps[] = {"TL_MUL", "TL_DIV", "TL_SUM", "TL_SUB",  "TL_MAX",
                                                     "TL_MIN", "TL_POW", "TL_MOD", "TL_FMOD", "TL_PRELU"};
inline constexpr std::string_view kUnaryFuncs[] = {"abs",        "neg",         "sign",
                                                   "floor",      "ceil",        "round",
                                                   "reciprocal", "sqrt",        "exp",
                                                   "log",        "sin",         "cos",
                                                   "tan",        "asin",        "acos",
                                                   "atan",       "sinh",        "cosh",
                                                   "asinh",      "acosh",       "atanh",
                                                   "tanh",       "erf",         "gelu",
                                                   "gelu_tanh",  "softplus",    "softsign",
                                                   "hardswish",  "hardsigmoid", "elu",
                                                   "selu",       "celu",        "thresholded_relu",
                                                   "not"};
inline constexpr std::string_view kCompareOps[] = {"equal", "less", "less_equal", "greater", "greater_equal"};
inline constexpr std::string_view kLogicalOps[] = {"and", "or", "xor"};
inline constexpr std::string_view kReduceOps[] = {"sum",        "mean", "max", "min",     "prod",
                                                  "sum_square", "l1",   "l2",  "log_sum", "log_sum_exp"};
inline constexpr std::string_view kArgOps[] = {"max", "min"};
inline constexpr std::string_view kScatterReductions[] = {"none", "add", "mul", "max", "min"};
inline constexpr std::string_view kPoolOps[] = {"max", "avg"};
inline constexpr std::string_view kInterpolationModes[] = {"nearest", "linear", "cubic"};
inline constexpr std::string_view kCoordinateModes[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                                        "asymmetric", "tf_half_pixel_for_nn"};
inline constexpr std::string_view kNearestModes[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
inline constexpr std::string_view kGridPaddingModes[] = {"zeros", "border", "reflection"};

// Validates one op's params against its spec: presence, no extras, type, enum value, array
// length (fixed rules) and bounds. Throws IrError naming the op and arg_name.
void validateParams(const Op& op, const OpSpec& spec);

// Every shape-free rule for one op: known optype, unique arg_names, exact tensor arguments,
// params (validateParams) and the op's structural check. Returns its spec. Throws IrError.
const OpSpec& validateOp(const Op& op);

}  // namespace qaic::ir
