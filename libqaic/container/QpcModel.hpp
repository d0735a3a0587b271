// SPDX-License-Identifier: Apache-2.0
// What a program container holds, as plain structs shared by the writer (qaic-exec), the
// reader (QpcImage: runtime, emulator, qaic-util) and the tests. The byte layout is in
// docs/formats/qpc.md and lives only in QpcWriter.cpp / QpcImage.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <qaic/Types.hpp>
#include "ir/Graph.hpp"
#include "ir/Weights.hpp"

namespace qaic::container {

// The newest version written; the reader takes 1 to 4. A container without retained state and
// without per-specialization programs is written as version 1, readable by older readers;
// version 3 (version 2's sections) only when a constant is encoded (MXFP6 weights); version 4
// only when the program spans several devices (device parts).
inline constexpr uint32_t kFormatVersion = 4;
inline constexpr uint32_t kOldestFormatVersion = 1;
// The newest version a nested device part's image may have: a single-device container.
inline constexpr uint32_t kSingleDeviceFormatVersion = 3;

// Limits the loader enforces before allocating anything.
inline constexpr std::size_t kMaxBuffers = 4096;
inline constexpr std::size_t kMaxPrograms = 256;
inline constexpr std::size_t kMaxConstants = 1u << 20;
inline constexpr std::size_t kMaxStrings = 1u << 22;
inline constexpr std::size_t kMaxShapeCombinations = 1u << 16;
inline constexpr std::size_t kMaxStringLength = 4096;
inline constexpr std::size_t kConstantAlignment = 64;
// A multi-device program's parts (device_parts): 2..16 devices, each part on 1..16 NSPs (what
// the partition config's numCores may say), a partition config of at most 1 MiB.
inline constexpr std::size_t kMinDeviceParts = 2;
inline constexpr std::size_t kMaxDeviceParts = 16;
inline constexpr uint32_t kMaxPartCores = 16;
inline constexpr std::size_t kMaxPartitionConfigBytes = 1u << 20;

// Program flags.
inline constexpr uint32_t kProgramFlagFp16Constants = 1u << 0;  // -convert-to-fp16 was used

// One IO buffer (a BufferMapping V2 entry). `io` carries name, bound tensor, direction, user
// dtype / layout, full dims, the partial / skip-header / allow-skip flags and the device format.
struct QpcBuffer {
  uint32_t index = 0;  // position in the IO descriptor
  ir::IoBuffer io;
  uint64_t size = 0;  // user bytes at full dims
  rt::QAicBufferDataTypeEnum dataType = rt::BUFFER_DATA_TYPE_INVAL;
  uint64_t deviceOffset = 0;  // in the IO region, 4 KiB aligned
  uint64_t deviceSize = 0;    // device-format bytes at full dims, 4 KiB aligned
};

// One compiled program (seed 001 QpcProgramInfo plus docs/device-protocol.md fields).
struct QpcProgram {
  std::string name;
  uint32_t programIndex = 0;
  uint32_t numCores = 1;
  uint32_t batchSize = 1;
  uint32_t numSemaphores = 1;
  uint32_t numMulticastIds = 0;
  uint32_t flags = 0;  // kProgramFlag*
  uint32_t doneSemaphore = 0;
  uint64_t totalRequiredMemory = 0;
  uint64_t ioRegionSize = 0;
  uint64_t doorbellAddress = 0;
  uint64_t requestDescriptorOffset = 0;
  uint64_t responseDescriptorOffset = 0;
  std::vector<uint32_t> bufferIndices;  // IO descriptor entries this program uses
  // The compiled graph as JSON IR (ir::toJson, shapes inferred). Its size is QpcProgramInfo's
  // "size". In a loaded image it points into the file; for the writer the caller owns it.
  std::span<const std::byte> payload;
};

// One constant (seed 001 QpcConstantsInfo: name, index, size = tensor.data.size()). The tensor's
// name is the tensor of the `create` op (from_file=true) it feeds, so an executor can use
// `&constant.tensor` as its ir::WeightTensor. In a loaded image `tensor.data` points into the
// file (64-byte aligned there), never a copy.
//
// A constant the compiler converts (fp16, MXFP6) carries an `encoder`: then `tensor.data` is the
// source the encoder reads, and the writer asks it for the stored bytes a bounded chunk at a time
// while it writes the file, so no converted copy of the whole constant is ever held.
struct ConstantEncoder {
  uint64_t storedBytes = 0;  // what the container holds for the constant; a multiple of unitBytes
  uint64_t unitBytes = 1;    // output bytes of one unit (fp16: an element; MXFP6: a block)
  // Writes units [firstUnit, firstUnit + unitCount) of the stored form into `out`, which holds
  // exactly unitCount * unitBytes bytes. May throw; the writer then leaves no file behind.
  std::function<void(uint64_t firstUnit, uint64_t unitCount, std::span<std::byte> out)> encode;
};

// The encoder of a pure function `encode(source, firstUnit, unitCount, out)` over `units` units
// of `unitBytes` each: how a conversion (fp16, MXFP6) plugs into the writer in one line.
using EncodeFunction = void (*)(std::span<const std::byte> source, uint64_t firstUnit, uint64_t unitCount,
                                std::span<std::byte> out);
inline std::shared_ptr<const ConstantEncoder> encoderOver(std::span<const std::byte> source, uint64_t units,
                                                          uint64_t unitBytes, EncodeFunction encode) {
  auto encoder = std::make_shared<ConstantEncoder>();
  encoder->storedBytes = units * unitBytes;
  encoder->unitBytes = unitBytes;
  encoder->encode = [source, encode](uint64_t first, uint64_t count, std::span<std::byte> out) {
    encode(source, first, count, out);
  };
  return encoder;
}

struct QpcConstant {
  uint32_t index = 0;
  ir::WeightTensor tensor;
  std::shared_ptr<const ConstantEncoder> encoder;  // null: tensor.data is stored as it is

  uint64_t storedSize() const { return encoder ? encoder->storedBytes : tensor.data.size(); }
};

// One retained-state pair (qaic-exec -retained-state): the input `name` and the output
// `stateName` (<name>_RetainedState) are one buffer of device memory per activation, zeros at
// activation, never in the IO descriptor (the user never maps them).
struct QpcRetainedState {
  std::string name;       // the input buffer, e.g. past_key.0
  std::string stateName;  // the output buffer, e.g. past_key.0_RetainedState
  std::string tensor;     // the IR tensors they bind in the program payloads
  std::string stateTensor;
  ir::DType dtype = ir::DType::Float;
  ir::Dims dims;
  uint64_t size = 0;  // bytes: product(dims) x size(dtype)
};

// The program compiled for one allowed shape combination (qaic-exec
// -network-specialization-config): its payload replaces the program's own when a request's dims
// are that combination's. `combination` indexes QpcImage::allShapeCombinations() (>= 1; the
// default combination 0 always runs the program's own payload).
struct QpcSpecializationPayload {
  uint32_t programIndex = 0;
  uint32_t combination = 1;
  std::span<const std::byte> payload;  // JSON IR, like QpcProgram::payload
};

struct QpcContents;

// How the devices of a multi-device program exchange data (the partition config's
// "connections[].type").
enum class DeviceConnection : uint32_t {
  P2p = 1,  // peer to peer between the cards' memories
};
const char* deviceConnectionName(DeviceConnection connection);  // "p2p"

// One device's part of a multi-device program (the device_parts section, version 4). Part 0 is
// the container itself (its IO descriptor is the network's, what the user maps); every other
// part is a complete single-device container (version 1..3) nested in the file, with its own IO
// descriptor, constants and retained state. The byte figures are the compiler's report of the
// split, shown by qaic-util --qpc; the reader checks their form, not their sums.
struct QpcDevicePart {
  uint32_t slot = 0;      // the partition config's deviceId for this part
  uint32_t numCores = 1;  // NSPs the part runs on, 1..16
  uint64_t weightBytes = 0;
  uint64_t retainedBytes = 0;  // retained state per activation
  uint64_t sentBytes = 0;      // to other cards, per inference
  uint64_t receivedBytes = 0;  // from other cards, per inference
  // Parts 1..N-1: the nested container's bytes (for the writer, the caller's serialized inner
  // QpcContents; in a loaded image, a span into the file). Part 0: empty.
  std::span<const std::byte> image;
  // A loaded image's parse of `image` (the same parser's, checked when the outer one was); null
  // for part 0 and in the writer's input.
  std::shared_ptr<const QpcContents> contents;
};

struct QpcContents {
  uint32_t formatVersion = kFormatVersion;  // as read (the writer picks the oldest that fits)
  std::vector<QpcBuffer> buffers;
  // Specializations only; the default combination (every buffer at its full dims) is implied.
  std::vector<ir::ShapeCombination> allowedShapes;
  std::vector<QpcProgram> programs;
  std::vector<QpcConstant> constants;
  std::vector<QpcRetainedState> retainedState;                   // version 2
  std::vector<QpcSpecializationPayload> specializationPayloads;  // version 2
  // Version 4: empty for a single-device program, else one entry per device, part 0 first.
  std::vector<QpcDevicePart> deviceParts;
  std::string partitionConfig;  // the partition config JSON used (-mdp-dump-partition-config)
  DeviceConnection connection = DeviceConnection::P2p;

  // The devices the program spans: 1 without device parts.
  std::size_t deviceCount() const { return deviceParts.empty() ? 1 : deviceParts.size(); }
};

// The runtime data type for a user element type (BUFFER_DATA_TYPE_INVAL when there is none).
rt::QAicBufferDataTypeEnum bufferDataTypeFor(ir::DType dtype);
const char* bufferDataTypeName(rt::QAicBufferDataTypeEnum type);  // "BUFFER_DATA_TYPE_FLOAT"

}  // namespace qaic::container
