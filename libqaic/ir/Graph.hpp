// SPDX-License-Identifier: Apache-2.0
// The in-memory network IR (seed 004 plus the project's `io` section). One model shared by
// the compiler (qaic-exec), the ONNX importer, the host executor (lightnet, emulated NSPs)
// and the program container, so every part reads a network the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace qaic::ir {

// Element types. The TL_* spellings are LightNet's; Float16 exists for device formats and
// -convert-to-fp16 (spelled TL_FLOAT16, a project extension).
enum class DType : uint8_t {
  Double,
  Float,
  Float16,
  Int64,
  Int32,
  Int16,
  Int8,
  UInt64,
  UInt32,
  UInt16,
  UInt8,
  Bool,
};

std::string_view dtypeName(DType type);                  // "TL_FLOAT"
std::optional<DType> parseDType(std::string_view name);  // inverse of dtypeName
std::size_t dtypeSize(DType type);                       // bytes per element

inline constexpr std::size_t kMaxRank = 8;
using Dims = std::vector<int64_t>;
int64_t elementCount(const Dims& dims);  // product; 1 for rank 0

struct TensorArg {
  std::string argName;
  std::string name;  // tensor name, unique in the graph
};

// A parameter value as written in JSON: a scalar or a homogeneous non-empty array.
using ParamValue =
    std::variant<double, std::string, bool, std::vector<double>, std::vector<std::string>, std::vector<bool>>;

struct Param {
  std::string argName;
  ParamValue value;
};

struct Op {
  std::string name;
  std::string optype;
  std::vector<TensorArg> inputs;
  std::vector<TensorArg> outputs;
  std::vector<Param> params;

  // Lookups by arg_name. The typed getters throw IrError naming this op and the arg_name when
  // the parameter is absent or of the wrong type; integers truncate toward zero.
  const Param* findParam(std::string_view argName) const;
  const TensorArg* findInput(std::string_view argName) const;
  const TensorArg* findOutput(std::string_view argName) const;
  double number(std::string_view argName) const;
  int64_t integer(std::string_view argName) const;
  bool boolean(std::string_view argName) const;
  const std::string& string(std::string_view argName) const;
  std::vector<double> numbers(std::string_view argName) const;
  std::vector<int64_t> integers(std::string_view argName) const;
};

enum class Direction : uint8_t { In, Out };

// Seed 003's device-native layouts. Flat: the tensor's row-major bytes. DWHC / DHWC: channels
// innermost in chunks of 8, W-major (DWHC) or H-major (DHWC, "transposed").
enum class DeviceLayout : uint8_t { Flat, DWHC, DHWC };
// How the user's buffer is laid out (the tensor itself is always NCHW inside the network).
enum class UserLayout : uint8_t { NCHW, NHWC };

struct DeviceFormat {
  DeviceLayout layout = DeviceLayout::Flat;
  DType elementType = DType::Float;  // FP16 for native inputs, Float for native outputs
};

// One network input or output as the runtime sees it (a BufferMapping V2 entry).
struct IoBuffer {
  std::string bufferName;  // what a batch JSON's map-to names
  std::string tensor;      // the IR tensor it binds
  Direction direction = Direction::In;
  DType dtype = DType::Float;  // the user's element type
  Dims dims;                   // full (maximum) shape
  UserLayout userLayout = UserLayout::NCHW;
  bool isPartialAllowed = false;
  bool skipPartialHeader = false;
  bool allowSkip = false;  // selective IO: the buffer may be dropped from a request
  DeviceFormat deviceFormat;
};

// One allowed shape combination (specialization): dims for every io buffer, by io index.
using ShapeCombination = std::vector<Dims>;

struct TensorInfo {
  DType dtype = DType::Float;
  Dims dims;
};

struct Graph {
  std::vector<Op> ops;
  std::vector<IoBuffer> io;                     // empty when the IR has no `io` section
  std::vector<ShapeCombination> allowedShapes;  // empty: not specialized
  std::string weightsFile;                      // side file, relative to the IR's directory
  std::string sourceName;                       // file name for messages
  std::map<std::string, TensorInfo> tensors;    // filled by inferShapes()
};

// Every IR problem: the message names the op, the arg_name and what was wrong.
class IrError : public std::runtime_error {
 public:
  IrError(std::string message, std::string opName = {}, std::string argName = {})
      : std::runtime_error(std::move(message)), op_(std::move(opName)), arg_(std::move(argName)) {}
  const std::string& opName() const noexcept { return op_; }
  const std::string& argName() const noexcept { return arg_; }

 private:
  std::string op_;
  std::string arg_;
};

// Parses and validates structure and every per-op rule of seed 004 / lightnet-ops.md and the
// `io` section. Does not read the weights file.
Graph parseGraph(std::string_view jsonText, std::string sourceName = "<memory>");
Graph loadGraph(const std::string& path);  // reads the file, then parseGraph

// Every rule parseGraph enforces, for a graph built in memory (e.g. by the ONNX importer).
void validateGraph(const Graph& graph);

// Serializes back to the JSON IR (parseGraph(toJson(g)) reproduces g's ops, io and shapes).
std::string toJson(const Graph& graph, bool pretty = false);

// Runs every operator's shape rule in order, filling graph.tensors. Tensors bound to io inputs
// take their dtype and dims from the io section; `create` ops from their params.
// Also checks each io output's dtype and dims and re-infers every allowed_shapes combination.
void inferShapes(Graph& graph);

// The shapes of every tensor when the io buffers have `ioDims` (indexed like graph.io: an
// allowed_shapes combination, or a partial input's actual dims). An empty entry for an output
// buffer skips its dims check. Does not modify the graph. Throws IrError.
std::map<std::string, TensorInfo> inferTensorShapes(const Graph& graph, const ShapeCombination& ioDims);

}  // namespace qaic::ir
