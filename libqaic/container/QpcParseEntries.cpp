// SPDX-License-Identifier: Apache-2.0
// The entries of an untrusted programqpc.bin (io buffers, allowed shapes, programs, constants):
// every enum, dims, size and index is checked, with overflow-checked arithmetic.
#include <algorithm>
#include <set>

#include "container/QpcParser.hpp"
#include "kernels/mx/Mxfp6Format.hpp"  // encodedBytes: inline, no link to the kernels

namespace qaic::container::detail {

using bytes::readLe;

// Reads rank and dims; returns the element count (overflow-checked).
uint64_t Parser::readDims(std::span<const std::byte> entry, std::size_t dimsAt, uint8_t rank, const std::string& field,
                          ir::Dims& dims, int64_t minDim) const {
  if (rank > L::kDimSlots) {
    fail(QpcErrorCode::BadValue, field + ".rank", std::to_string(rank) + " exceeds " + std::to_string(L::kDimSlots));
  }
  uint64_t elements = 1;
  dims.clear();
  for (std::size_t d = 0; d < L::kDimSlots; ++d) {
    const auto value = readLe<int64_t>(entry, dimsAt + d * 8);
    const std::string dimField = field + ".dims[" + std::to_string(d) + "]";
    if (d >= rank) {
      if (value != 0) fail(QpcErrorCode::BadValue, dimField, "unused dimension slot must be 0");
      continue;
    }
    if (value < minDim) {
      fail(QpcErrorCode::BadValue, dimField, std::to_string(value) + " is not >= " + std::to_string(minDim));
    }
    elements = checkedMul(elements, static_cast<uint64_t>(value), dimField);
    dims.push_back(value);
  }
  return elements;
}

void Parser::readBuffers() {
  const auto data = section(L::Section::IoDescriptor);
  const uint32_t n = count(L::Section::IoDescriptor);
  std::set<std::string> names;
  out_.buffers.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string field = "buffers[" + std::to_string(i) + "]";
    const auto e = data.subspan(std::size_t{i} * L::kIoEntrySize, L::kIoEntrySize);
    QpcBuffer b;
    b.index = readLe<uint32_t>(e, 0);
    if (b.index != i) fail(QpcErrorCode::BadValue, field + ".index", std::to_string(b.index) + " is not its position");
    b.io.bufferName = string(readLe<uint32_t>(e, 4), field + ".name");
    if (!names.insert(b.io.bufferName).second) {
      fail(QpcErrorCode::BadString, field + ".name", "'" + b.io.bufferName + "' is not unique");
    }
    b.io.tensor = string(readLe<uint32_t>(e, 8), field + ".tensor");
    b.io.direction = enumValue<ir::Direction>(readLe<uint8_t>(e, 12), 1, field + ".direction");
    b.io.dtype = enumValue<ir::DType>(readLe<uint8_t>(e, 13), static_cast<uint8_t>(ir::DType::Bool), field + ".dtype");
    b.io.userLayout = enumValue<ir::UserLayout>(readLe<uint8_t>(e, 14), 1, field + ".user_layout");
    const auto flags = readLe<uint8_t>(e, 15);
    if ((flags & ~L::kIoKnownFlags) != 0) fail(QpcErrorCode::BadValue, field + ".flags", "unknown flags set");
    b.io.isPartialAllowed = (flags & L::kIoPartialAllowed) != 0;
    b.io.skipPartialHeader = (flags & L::kIoSkipPartialHeader) != 0;
    b.io.allowSkip = (flags & L::kIoAllowSkip) != 0;
    const auto dataType = readLe<uint32_t>(e, 16);
    if (dataType > rt::BUFFER_DATA_TYPE_INVAL) {
      fail(QpcErrorCode::BadValue, field + ".data_type", "value " + std::to_string(dataType) + " is not defined");
    }
    b.dataType = static_cast<rt::QAicBufferDataTypeEnum>(dataType);
    b.io.deviceFormat.layout = enumValue<ir::DeviceLayout>(readLe<uint8_t>(e, 20), 2, field + ".device_layout");
    b.io.deviceFormat.elementType = enumValue<ir::DType>(readLe<uint8_t>(e, 21), static_cast<uint8_t>(ir::DType::Bool),
                                                         field + ".device_element_type");
    if (readLe<uint8_t>(e, 23) != 0) fail(QpcErrorCode::BadValue, field + ".reserved", "must be zero");
    const uint64_t elements = readDims(e, 48, readLe<uint8_t>(e, 22), field, b.io.dims);
    b.size = readLe<uint64_t>(e, 24);
    const uint64_t userBytes = checkedMul(elements, ir::dtypeSize(b.io.dtype), field + ".size");
    if (b.size != userBytes) {
      fail(QpcErrorCode::BadValue, field + ".size",
           std::to_string(b.size) + " does not match dims x dtype (" + std::to_string(userBytes) + " bytes)");
    }
    b.deviceOffset = readLe<uint64_t>(e, 32);
    b.deviceSize = readLe<uint64_t>(e, 40);
    if (b.deviceOffset % L::kPageSize != 0 || b.deviceSize % L::kPageSize != 0) {
      fail(QpcErrorCode::BadValue, field + ".device_offset", "device offset and size must be 4 KiB aligned");
    }
    const uint64_t deviceBytes = checkedMul(elements, ir::dtypeSize(b.io.deviceFormat.elementType),
                                            field + ".device_size");
    if (b.deviceSize < deviceBytes) {
      fail(QpcErrorCode::BadValue, field + ".device_size",
           std::to_string(b.deviceSize) + " is smaller than the device format needs (" + std::to_string(deviceBytes) +
               " bytes)");
    }
    checkedAdd(b.deviceOffset, b.deviceSize, field + ".device_size");
    out_.buffers.push_back(std::move(b));
  }
}

void Parser::readAllowedShapes() {
  const auto data = section(L::Section::AllowedShapes);
  const uint32_t n = count(L::Section::AllowedShapes);
  const std::size_t perBuffer = out_.buffers.size();
  if (n > 0 && perBuffer == 0) {
    fail(QpcErrorCode::BadValue, "allowed_shapes.count", "shape combinations without io buffers");
  }
  out_.allowedShapes.reserve(n);
  for (uint32_t c = 0; c < n; ++c) {
    ir::ShapeCombination combination(perBuffer);
    for (std::size_t b = 0; b < perBuffer; ++b) {
      const std::string field = "allowed_shapes[" + std::to_string(c) + "][" + std::to_string(b) + "]";
      const auto e = data.subspan((c * perBuffer + b) * L::kShapeEntrySize, L::kShapeEntrySize);
      for (std::size_t r = 1; r < 8; ++r) {
        if (readLe<uint8_t>(e, r) != 0) fail(QpcErrorCode::BadValue, field + ".reserved", "must be zero");
      }
      // The IR's rule: same rank, never more elements than the buffer (a specialization may shrink
      // partial and non-partial buffers alike, as seed 000's specialized example does).
      const uint64_t elements = readDims(e, 8, readLe<uint8_t>(e, 0), field, combination[b], 0);
      const auto& buffer = out_.buffers[b];
      if (combination[b].size() != buffer.io.dims.size()) {
        fail(QpcErrorCode::BadValue, field + ".rank",
             "differs from the buffer's rank " + std::to_string(buffer.io.dims.size()));
      }
      const uint64_t full = buffer.size / ir::dtypeSize(buffer.io.dtype);
      if (elements > full) {
        fail(QpcErrorCode::BadValue, field + ".dims",
             std::to_string(elements) + " elements exceed the buffer's " + std::to_string(full));
      }
    }
    out_.allowedShapes.push_back(std::move(combination));
  }
}

void Parser::readPrograms() {
  const auto data = section(L::Section::Programs);
  const auto indices = section(L::Section::BufferIndices);
  const auto payloads = section(L::Section::Payloads);
  const uint32_t n = count(L::Section::Programs);
  std::set<std::string> names;
  out_.programs.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string field = "programs[" + std::to_string(i) + "]";
    const auto e = data.subspan(std::size_t{i} * L::kProgramEntrySize, L::kProgramEntrySize);
    QpcProgram p;
    p.name = string(readLe<uint32_t>(e, 0), field + ".name");
    if (!names.insert(p.name).second) fail(QpcErrorCode::BadString, field + ".name", "'" + p.name + "' is not unique");
    p.programIndex = readLe<uint32_t>(e, 4);
    if (p.programIndex != i) fail(QpcErrorCode::BadValue, field + ".program_index", "is not its position");
    p.numCores = readLe<uint32_t>(e, 8);
    if (p.numCores < 1 || p.numCores > 64)
      fail(QpcErrorCode::BadValue, field + ".num_cores", std::to_string(p.numCores) + " is not in [1, 64]");
    p.batchSize = readLe<uint32_t>(e, 12);
    if (p.batchSize < 1) fail(QpcErrorCode::BadValue, field + ".batch_size", "must be >= 1");
    p.numSemaphores = readLe<uint32_t>(e, 16);
    if (p.numSemaphores < 1 || p.numSemaphores > 32)
      fail(QpcErrorCode::BadValue, field + ".num_semaphores", std::to_string(p.numSemaphores) + " is not in [1, 32]");
    p.numMulticastIds = readLe<uint32_t>(e, 20);
    if (p.numMulticastIds > 4096) fail(QpcErrorCode::BadValue, field + ".num_multicast_ids", "exceeds 4096");
    p.flags = readLe<uint32_t>(e, 24);
    if ((p.flags & ~kProgramFlagFp16Constants) != 0)
      fail(QpcErrorCode::BadValue, field + ".flags", "unknown flags set");
    p.doneSemaphore = readLe<uint32_t>(e, 28);
    if (p.doneSemaphore >= p.numSemaphores)
      fail(QpcErrorCode::BadValue, field + ".done_semaphore", "is not below num_semaphores");
    p.totalRequiredMemory = readLe<uint64_t>(e, 32);
    p.ioRegionSize = readLe<uint64_t>(e, 40);
    p.doorbellAddress = readLe<uint64_t>(e, 48);
    p.requestDescriptorOffset = readLe<uint64_t>(e, 56);
    p.responseDescriptorOffset = readLe<uint64_t>(e, 64);
    if (p.totalRequiredMemory < p.ioRegionSize) {
      fail(QpcErrorCode::BadValue, field + ".total_required_memory", "is smaller than io_region_size");
    }
    const auto payloadOffset = readLe<uint64_t>(e, 72);
    const auto payloadSize = readLe<uint64_t>(e, 80);
    const uint64_t payloadEnd = checkedAdd(payloadOffset, payloadSize, field + ".payload_size");
    if (payloadSize == 0 || payloadEnd > payloads.size()) {
      fail(QpcErrorCode::OutOfRange, field + ".payload_offset",
           "[" + std::to_string(payloadOffset) + ", " + std::to_string(payloadEnd) +
               ") is empty or outside the payload section (" + std::to_string(payloads.size()) + " bytes)");
    }
    p.payload = payloads.subspan(payloadOffset, payloadSize);
    const auto start = readLe<uint32_t>(e, 88);
    const auto listed = readLe<uint32_t>(e, 92);
    if (uint64_t{start} + listed > count(L::Section::BufferIndices)) {
      fail(QpcErrorCode::OutOfRange, field + ".buffer_index_count", "runs past the buffer index table");
    }
    std::set<uint32_t> seen;
    for (uint32_t k = 0; k < listed; ++k) {
      const auto index = readLe<uint32_t>(indices, (std::size_t{start} + k) * L::kBufferIndexSize);
      if (index >= out_.buffers.size() || !seen.insert(index).second) {
        fail(QpcErrorCode::BadValue, field + ".buffer_indices[" + std::to_string(k) + "]",
             std::to_string(index) + " is not a distinct io buffer index");
      }
      p.bufferIndices.push_back(index);
    }
    checkIoRegion(p, field);
    out_.programs.push_back(std::move(p));
  }
}

// The descriptors, the doorbell word and every buffer must lie in the IO region, apart.
void Parser::checkIoRegion(const QpcProgram& p, const std::string& field) const {
  struct Range {
    uint64_t begin, end;
    std::string what;
  };
  std::vector<Range> ranges;
  auto add = [&](uint64_t offset, uint64_t size, const std::string& what) {
    const uint64_t end = checkedAdd(offset, size, field + "." + what);
    if (end > p.ioRegionSize) {
      fail(QpcErrorCode::OutOfRange, field + "." + what,
           "[" + std::to_string(offset) + ", " + std::to_string(end) + ") exceeds io_region_size " +
               std::to_string(p.ioRegionSize));
    }
    ranges.push_back({offset, end, what});
  };
  add(p.requestDescriptorOffset, L::kDescriptorSize, "request_descriptor_offset");
  add(p.responseDescriptorOffset, L::kDescriptorSize, "response_descriptor_offset");
  if (p.doorbellAddress % L::kDoorbellBytes != 0) {
    fail(QpcErrorCode::BadValue, field + ".doorbell_address", "is not 4-byte aligned");
  }
  add(p.doorbellAddress, L::kDoorbellBytes, "doorbell_address");
  for (auto index : p.bufferIndices) {
    const auto& b = out_.buffers[index];
    add(b.deviceOffset, b.deviceSize, "buffer '" + b.io.bufferName + "'");
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (std::size_t k = 1; k < ranges.size(); ++k) {
    if (ranges[k].begin < ranges[k - 1].end) {
      fail(QpcErrorCode::Overlap, field + "." + ranges[k].what, "overlaps " + ranges[k - 1].what + " in the io region");
    }
  }
}

void Parser::readConstants() {
  const auto data = section(L::Section::Constants);
  const auto blob = section(L::Section::ConstantData);
  const uint32_t n = count(L::Section::Constants);
  std::set<std::string> names;
  struct Range {
    uint64_t begin, end;
    uint32_t index;
  };
  std::vector<Range> ranges;
  out_.constants.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string field = "constants[" + std::to_string(i) + "]";
    const auto e = data.subspan(std::size_t{i} * L::kConstantEntrySize, L::kConstantEntrySize);
    QpcConstant c;
    c.tensor.name = string(readLe<uint32_t>(e, 0), field + ".name");
    if (!names.insert(c.tensor.name).second)
      fail(QpcErrorCode::BadString, field + ".name", "'" + c.tensor.name + "' is not unique");
    c.index = readLe<uint32_t>(e, 4);
    if (c.index != i) fail(QpcErrorCode::BadValue, field + ".index", "is not its position");
    c.tensor.dtype = enumValue<ir::DType>(readLe<uint8_t>(e, 8), static_cast<uint8_t>(ir::DType::Bool),
                                          field + ".dtype");
    if (readLe<uint32_t>(e, 12) != 0) fail(QpcErrorCode::BadValue, field + ".reserved", "must be zero");
    const auto encoding = readLe<uint8_t>(e, 10), axis = readLe<uint8_t>(e, 11);
    const bool encoded = encoding != 0;
    if (encoding > ir::kLastWeightEncoding)
      fail(QpcErrorCode::BadValue, field + ".encoding", "unknown encoding " + std::to_string(encoding));
    if (encoded && out_.formatVersion < 3)
      fail(QpcErrorCode::BadValue, field + ".encoding", "encoded constants need format version 3");
    if (axis > (encoded ? 1 : 0)) fail(QpcErrorCode::BadValue, field + ".reduction_axis", "is " + std::to_string(axis));
    c.tensor.encoding = static_cast<ir::WeightEncoding>(encoding);
    c.tensor.reductionAxis = axis;
    const uint64_t elements = readDims(e, 32, readLe<uint8_t>(e, 9), field, c.tensor.dims);
    const auto offset = readLe<uint64_t>(e, 16);
    const auto size = readLe<uint64_t>(e, 24);
    uint64_t expected = 0;
    if (encoded) {
      // MXFP6 (docs/formats/mxfp6.md): a 2-D float weight, 25 bytes per 32 elements along K.
      if (c.tensor.dims.size() != 2 || elements == 0 ||
          (c.tensor.dtype != ir::DType::Float && c.tensor.dtype != ir::DType::Float16)) {
        fail(QpcErrorCode::BadValue, field + ".encoding",
             std::string(ir::weightEncodingName(c.tensor.encoding)) + " needs a non-empty 2-D float weight");
      }
      expected = kernels::mx::encodedBytes(c.tensor.dims[axis], c.tensor.dims[1 - axis]);
    } else {
      expected = checkedMul(elements, ir::dtypeSize(c.tensor.dtype), field + ".size");
    }
    if (size != expected) {
      fail(QpcErrorCode::BadValue, field + ".size",
           std::to_string(size) + " does not match dims x " + (encoded ? "encoding" : "dtype") + " (" +
               std::to_string(expected) + " bytes)");
    }
    if (offset % kConstantAlignment != 0)
      fail(QpcErrorCode::BadValue, field + ".data_offset", "is not 64-byte aligned");
    const uint64_t end = checkedAdd(offset, size, field + ".size");
    if (end > blob.size()) {
      fail(QpcErrorCode::OutOfRange, field + ".data_offset",
           "[" + std::to_string(offset) + ", " + std::to_string(end) + ") is outside the constant data (" +
               std::to_string(blob.size()) + " bytes)");
    }
    c.tensor.data = blob.subspan(offset, size);
    ranges.push_back({offset, end, i});
    out_.constants.push_back(std::move(c));
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (std::size_t k = 1; k < ranges.size(); ++k) {
    if (ranges[k].begin < ranges[k - 1].end) {
      fail(QpcErrorCode::Overlap, "constants[" + std::to_string(ranges[k].index) + "].data_offset",
           "overlaps constants[" + std::to_string(ranges[k - 1].index) + "]");
    }
  }
}

}  // namespace qaic::container::detail

namespace qaic::container::detail {

void Parser::readRetainedState() {
  const auto data = section(L::Section::RetainedState);
  const uint32_t n = count(L::Section::RetainedState);
  std::set<std::string> names;
  for (const auto& b : out_.buffers) names.insert(b.io.bufferName);
  out_.retainedState.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string field = "retained_state[" + std::to_string(i) + "]";
    const auto e = data.subspan(std::size_t{i} * L::kRetainedEntrySize, L::kRetainedEntrySize);
    QpcRetainedState r;
    r.name = string(readLe<uint32_t>(e, 0), field + ".name");
    r.stateName = string(readLe<uint32_t>(e, 4), field + ".state_name");
    // Retained buffers are never mapped by the user: their names are no io buffer's, nor each
    // other's.
    for (const auto& [name, what] : {std::pair{r.name, ".name"}, std::pair{r.stateName, ".state_name"}}) {
      if (!names.insert(name).second)
        fail(QpcErrorCode::BadString, field + what, "'" + name + "' is also an io buffer or another retained buffer");
    }
    r.tensor = string(readLe<uint32_t>(e, 8), field + ".tensor");
    r.stateTensor = string(readLe<uint32_t>(e, 12), field + ".state_tensor");
    r.dtype = enumValue<ir::DType>(readLe<uint8_t>(e, 16), static_cast<uint8_t>(ir::DType::Bool), field + ".dtype");
    if (readLe<uint16_t>(e, 18) != 0 || readLe<uint32_t>(e, 20) != 0)
      fail(QpcErrorCode::BadValue, field + ".reserved", "must be zero");
    const uint64_t elements = readDims(e, 32, readLe<uint8_t>(e, 17), field, r.dims);
    r.size = readLe<uint64_t>(e, 24);
    const uint64_t expected = checkedMul(elements, ir::dtypeSize(r.dtype), field + ".size");
    if (r.size != expected) {
      fail(QpcErrorCode::BadValue, field + ".size",
           std::to_string(r.size) + " does not match dims x dtype (" + std::to_string(expected) + " bytes)");
    }
    out_.retainedState.push_back(std::move(r));
  }
}

void Parser::readSpecializationPayloads() {
  const auto data = section(L::Section::SpecializationPayloads);
  const auto payloads = section(L::Section::Payloads);
  const uint32_t n = count(L::Section::SpecializationPayloads);
  std::set<std::pair<uint32_t, uint32_t>> seen;
  out_.specializationPayloads.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string field = "specialization_payloads[" + std::to_string(i) + "]";
    const auto e = data.subspan(std::size_t{i} * L::kSpecializationEntrySize, L::kSpecializationEntrySize);
    QpcSpecializationPayload s;
    s.programIndex = readLe<uint32_t>(e, 0);
    if (s.programIndex >= out_.programs.size())
      fail(QpcErrorCode::BadValue, field + ".program_index", std::to_string(s.programIndex) + " is not a program");
    s.combination = readLe<uint32_t>(e, 4);
    if (s.combination < 1 || s.combination > out_.allowedShapes.size())
      fail(QpcErrorCode::BadValue, field + ".combination",
           std::to_string(s.combination) + " is not in [1, " + std::to_string(out_.allowedShapes.size()) + "]");
    if (!seen.insert({s.programIndex, s.combination}).second)
      fail(QpcErrorCode::BadValue, field + ".combination", "a second payload for the same program and combination");
    const auto offset = readLe<uint64_t>(e, 8);
    const auto size = readLe<uint64_t>(e, 16);
    const uint64_t end = checkedAdd(offset, size, field + ".payload_size");
    if (size == 0 || end > payloads.size()) {
      fail(QpcErrorCode::OutOfRange, field + ".payload_offset",
           "[" + std::to_string(offset) + ", " + std::to_string(end) + ") is empty or outside the payload section (" +
               std::to_string(payloads.size()) + " bytes)");
    }
    s.payload = payloads.subspan(offset, size);
    out_.specializationPayloads.push_back(s);
  }
}

}  // namespace qaic::container::detail
