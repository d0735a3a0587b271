// SPDX-License-Identifier: Apache-2.0
#include "container/QpcWriter.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "container/Bytes.hpp"
#include "container/Checksum.hpp"
#include "container/QpcImage.hpp"
#include "container/QpcLayout.hpp"
#include "kernels/mx/Mxfp6Format.hpp"  // encodedBytes: inline, no link to the kernels

namespace qaic::container {

namespace {

namespace L = layout;
using bytes::alignUp;

[[noreturn]] void invalid(QpcErrorCode code, const std::string& field, const std::string& what) {
  throw QpcFormatError(code, field, "program container: " + field + ": " + what);
}

// The file without its constant_data section: the bytes before it (`head`) and after it
// (`tail`). Everything but the constants is small and laid out here; the constants are produced
// while the file is written (emit()).
class Metadata {
 public:
  Metadata(uint64_t dataBegin, uint64_t dataEnd, uint64_t fileSize)
      : head_(dataBegin), tail_(fileSize - dataEnd), tailAt_(dataEnd) {}

  template <typename T>
  void put(uint64_t at, T value) {
    copy(at, &value, sizeof(T));
  }
  void copy(uint64_t at, const void* from, std::size_t size) {
    if (size == 0) return;
    std::byte* to = at + size <= head_.size() ? head_.data() + at : tail_.data() + (at - tailAt_);
    std::memcpy(to, from, size);
  }
  const std::vector<std::byte>& head() const { return head_; }
  const std::vector<std::byte>& tail() const { return tail_; }

 private:
  std::vector<std::byte> head_;
  std::vector<std::byte> tail_;
  uint64_t tailAt_;
};

class StringTable {
 public:
  uint32_t intern(const std::string& text, const std::string& field) {
    if (text.empty()) invalid(QpcErrorCode::BadString, field, "is empty");
    if (text.size() > kMaxStringLength) invalid(QpcErrorCode::BadString, field, "is longer than 4096 bytes");
    auto [it, inserted] = index_.try_emplace(text, static_cast<uint32_t>(order_.size()));
    if (inserted) order_.push_back(&it->first);
    return it->second;
  }
  uint64_t byteSize() const {
    uint64_t total = 0;
    for (const auto* s : order_) total += 4 + s->size();
    return total;
  }
  void write(Metadata& out, uint64_t at) const {
    for (const auto* s : order_) {
      out.put<uint32_t>(at, static_cast<uint32_t>(s->size()));
      out.copy(at + 4, s->data(), s->size());
      at += 4 + s->size();
    }
  }
  uint32_t count() const { return static_cast<uint32_t>(order_.size()); }

 private:
  std::map<std::string, uint32_t> index_;
  std::vector<const std::string*> order_;
};

void writeDims(Metadata& out, uint64_t at, const ir::Dims& dims, const std::string& field) {
  if (dims.size() > L::kDimSlots) invalid(QpcErrorCode::BadValue, field + ".rank", "exceeds 8");
  for (std::size_t d = 0; d < dims.size(); ++d) out.put<int64_t>(at + d * 8, dims[d]);
}

struct Plan {
  StringTable strings;
  std::array<uint64_t, L::kSectionKinds + 1> offset{};
  std::array<uint64_t, L::kSectionKinds + 1> size{};
  std::array<uint32_t, L::kSectionKinds + 1> count{};
  std::vector<uint64_t> payloadOffsets;
  std::vector<uint64_t> constantOffsets;
  std::vector<uint64_t> specializationOffsets;  // in the payload section, after the programs'
  uint64_t partitionConfigOffset = 0;           // in the device_parts section
  std::vector<uint64_t> partImageOffsets;       // in the device_parts section; 0 for part 0
  uint32_t version = 1;
  uint32_t sectionKinds = L::sectionKindsOf(1);
  uint64_t fileSize = 0;
};

// The device_parts section's layout (version 4) and its size; 0 for a single-device program.
// What the reader checks of the nested images it leaves to the reader (checkAsReaderWould).
uint64_t planDeviceParts(const QpcContents& c, Plan& p) {
  if (c.deviceParts.empty()) {
    if (!c.partitionConfig.empty())
      invalid(QpcErrorCode::BadValue, "device_parts.partition_config", "is set but the program has no device parts");
    return 0;
  }
  const std::size_t n = c.deviceParts.size();
  if (n < kMinDeviceParts || n > kMaxDeviceParts) {
    invalid(n > kMaxDeviceParts ? QpcErrorCode::AbsurdCount : QpcErrorCode::BadValue, "device_parts.count",
            std::to_string(n) + " parts; a multi-device program has 2 to 16 (a single-device one has none)");
  }
  if (c.connection != DeviceConnection::P2p)
    invalid(QpcErrorCode::BadValue, "device_parts.connection", "is not a known connection kind");
  if (c.partitionConfig.empty() || c.partitionConfig.size() > kMaxPartitionConfigBytes ||
      c.partitionConfig.find('\0') != std::string::npos) {
    invalid(QpcErrorCode::BadValue, "device_parts.partition_config",
            "must be 1 byte to 1 MiB of JSON text without NUL bytes");
  }
  std::map<uint32_t, std::size_t> slots;
  uint64_t at = L::kPartsHeaderSize + n * L::kPartEntrySize;
  p.partitionConfigOffset = at;
  at += c.partitionConfig.size();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& part = c.deviceParts[i];
    const std::string field = "device_parts[" + std::to_string(i) + "]";
    if (auto [it, inserted] = slots.try_emplace(part.slot, i); !inserted) {
      invalid(QpcErrorCode::BadValue, field + ".slot",
              "device " + std::to_string(part.slot) + " is also part " + std::to_string(it->second) + "'s");
    }
    if (part.numCores < 1 || part.numCores > kMaxPartCores)
      invalid(QpcErrorCode::BadValue, field + ".num_cores", std::to_string(part.numCores) + " is not in [1, 16]");
    if (i == 0 && !part.image.empty())
      invalid(QpcErrorCode::BadValue, field + ".image", "part 0 is the container itself and has no nested image");
    if (i > 0 && part.image.empty())
      invalid(QpcErrorCode::BadValue, field + ".image", "a part other than 0 needs its single-device container");
    if (i == 0) {
      p.partImageOffsets.push_back(0);
      continue;
    }
    at = alignUp(at, kConstantAlignment);
    p.partImageOffsets.push_back(at);
    at += part.image.size();
  }
  p.version = 4;
  return at;
}

Plan plan(const QpcContents& c) {
  Plan p;
  if (c.buffers.size() > kMaxBuffers) invalid(QpcErrorCode::AbsurdCount, "buffers", "too many io buffers");
  if (c.programs.size() > kMaxPrograms) invalid(QpcErrorCode::AbsurdCount, "programs", "too many programs");
  if (c.constants.size() > kMaxConstants) invalid(QpcErrorCode::AbsurdCount, "constants", "too many constants");
  if (c.allowedShapes.size() > kMaxShapeCombinations)
    invalid(QpcErrorCode::AbsurdCount, "allowed_shapes", "too many combinations");
  for (std::size_t i = 0; i < c.buffers.size(); ++i) {
    const std::string field = "buffers[" + std::to_string(i) + "]";
    p.strings.intern(c.buffers[i].io.bufferName, field + ".name");
    p.strings.intern(c.buffers[i].io.tensor, field + ".tensor");
  }
  uint64_t indexCount = 0;
  uint64_t payloadBytes = 0;
  for (std::size_t i = 0; i < c.programs.size(); ++i) {
    p.strings.intern(c.programs[i].name, "programs[" + std::to_string(i) + "].name");
    indexCount += c.programs[i].bufferIndices.size();
    p.payloadOffsets.push_back(payloadBytes);
    payloadBytes += c.programs[i].payload.size();
  }
  if (c.retainedState.size() > kMaxBuffers) invalid(QpcErrorCode::AbsurdCount, "retained_state", "too many entries");
  if (c.specializationPayloads.size() > kMaxShapeCombinations * kMaxPrograms)
    invalid(QpcErrorCode::AbsurdCount, "specialization_payloads", "too many entries");
  for (std::size_t i = 0; i < c.retainedState.size(); ++i) {
    const auto& r = c.retainedState[i];
    const std::string field = "retained_state[" + std::to_string(i) + "]";
    p.strings.intern(r.name, field + ".name");
    p.strings.intern(r.stateName, field + ".state_name");
    p.strings.intern(r.tensor, field + ".tensor");
    p.strings.intern(r.stateTensor, field + ".state_tensor");
  }
  for (const auto& s : c.specializationPayloads) {
    p.specializationOffsets.push_back(payloadBytes);
    payloadBytes += s.payload.size();
  }
  // Version 2 only when a version-1 reader could not run the program.
  if (!c.retainedState.empty() || !c.specializationPayloads.empty()) p.version = 2;
  // Version 3 only when a constant is encoded (MXFP6): a version-2 reader would misread it.
  for (const auto& k : c.constants) {
    if (k.tensor.encoding != ir::WeightEncoding::Plain) p.version = 3;
  }
  const uint64_t devicePartsBytes = planDeviceParts(c, p);
  p.sectionKinds = L::sectionKindsOf(p.version);
  uint64_t constantBytes = 0;
  for (std::size_t i = 0; i < c.constants.size(); ++i) {
    p.strings.intern(c.constants[i].tensor.name, "constants[" + std::to_string(i) + "].name");
    if (const ir::WeightTensor& t = c.constants[i].tensor; t.encoding != ir::WeightEncoding::Plain) {
      // What the reader checks of an encoded constant (QpcParseEntries.cpp).
      if (t.dims.size() != 2 || t.reductionAxis > 1 ||
          c.constants[i].storedSize() !=
              kernels::mx::encodedBytes(t.dims[t.reductionAxis], t.dims[1 - t.reductionAxis])) {
        invalid(QpcErrorCode::BadValue, "constants[" + std::to_string(i) + "].size",
                "does not match its dims and encoding");
      }
    }
    constantBytes = alignUp(constantBytes, kConstantAlignment);
    p.constantOffsets.push_back(constantBytes);
    constantBytes += c.constants[i].storedSize();
  }
  auto set = [&](L::Section kind, uint32_t count, uint64_t size) {
    p.count[static_cast<uint32_t>(kind)] = count;
    p.size[static_cast<uint32_t>(kind)] = size;
  };
  set(L::Section::Strings, p.strings.count(), p.strings.byteSize());
  set(L::Section::IoDescriptor, static_cast<uint32_t>(c.buffers.size()), c.buffers.size() * L::kIoEntrySize);
  set(L::Section::AllowedShapes, static_cast<uint32_t>(c.allowedShapes.size()),
      c.allowedShapes.size() * c.buffers.size() * L::kShapeEntrySize);
  set(L::Section::Programs, static_cast<uint32_t>(c.programs.size()), c.programs.size() * L::kProgramEntrySize);
  set(L::Section::BufferIndices, static_cast<uint32_t>(indexCount), indexCount * L::kBufferIndexSize);
  set(L::Section::Constants, static_cast<uint32_t>(c.constants.size()), c.constants.size() * L::kConstantEntrySize);
  set(L::Section::Payloads, 0, payloadBytes);
  set(L::Section::ConstantData, 0, constantBytes);
  set(L::Section::RetainedState, static_cast<uint32_t>(c.retainedState.size()),
      c.retainedState.size() * L::kRetainedEntrySize);
  set(L::Section::SpecializationPayloads, static_cast<uint32_t>(c.specializationPayloads.size()),
      c.specializationPayloads.size() * L::kSpecializationEntrySize);
  set(L::Section::DeviceParts, static_cast<uint32_t>(c.deviceParts.size()), devicePartsBytes);
  uint64_t at = L::kHeaderSize + p.sectionKinds * L::kSectionEntrySize;
  for (uint32_t kind = 1; kind <= p.sectionKinds; ++kind) {
    const bool likeConstants = L::isAlignedLikeConstants(static_cast<L::Section>(kind));
    at = alignUp(at, likeConstants ? kConstantAlignment : L::kSectionAlignment);
    p.offset[kind] = at;
    at += p.size[kind];
  }
  p.fileSize = at;
  return p;
}

void writeBuffer(Metadata& out, uint64_t at, const QpcBuffer& b, Plan& p, const std::string& field) {
  out.put<uint32_t>(at + 0, b.index);
  out.put<uint32_t>(at + 4, p.strings.intern(b.io.bufferName, field + ".name"));
  out.put<uint32_t>(at + 8, p.strings.intern(b.io.tensor, field + ".tensor"));
  out.put<uint8_t>(at + 12, static_cast<uint8_t>(b.io.direction));
  out.put<uint8_t>(at + 13, static_cast<uint8_t>(b.io.dtype));
  out.put<uint8_t>(at + 14, static_cast<uint8_t>(b.io.userLayout));
  uint8_t flags = 0;
  if (b.io.isPartialAllowed) flags |= L::kIoPartialAllowed;
  if (b.io.skipPartialHeader) flags |= L::kIoSkipPartialHeader;
  if (b.io.allowSkip) flags |= L::kIoAllowSkip;
  out.put<uint8_t>(at + 15, flags);
  out.put<uint32_t>(at + 16, static_cast<uint32_t>(b.dataType));
  out.put<uint8_t>(at + 20, static_cast<uint8_t>(b.io.deviceFormat.layout));
  out.put<uint8_t>(at + 21, static_cast<uint8_t>(b.io.deviceFormat.elementType));
  out.put<uint8_t>(at + 22, static_cast<uint8_t>(b.io.dims.size()));
  out.put<uint64_t>(at + 24, b.size);
  out.put<uint64_t>(at + 32, b.deviceOffset);
  out.put<uint64_t>(at + 40, b.deviceSize);
  writeDims(out, at + 48, b.io.dims, field);
}

// Everything but the constants' bytes, at the offsets of the plan; the CRC field left zero.
Metadata layOut(const QpcContents& c, Plan& p) {
  const uint64_t dataBegin = p.offset[static_cast<uint32_t>(L::Section::ConstantData)];
  Metadata out(dataBegin, dataBegin + p.size[static_cast<uint32_t>(L::Section::ConstantData)], p.fileSize);
  auto sectionAt = [&](L::Section kind) { return p.offset[static_cast<uint32_t>(kind)]; };

  out.copy(0, L::kMagic.data(), L::kMagic.size());
  out.put<uint32_t>(L::kOffVersion, p.version);
  out.put<uint32_t>(L::kOffHeaderSize, L::kHeaderSize);
  out.put<uint32_t>(L::kOffFlags, 0);
  out.put<uint32_t>(L::kOffSectionCount, p.sectionKinds);
  out.put<uint64_t>(L::kOffFileSize, p.fileSize);
  out.put<uint64_t>(L::kOffSectionTable, L::kHeaderSize);
  for (uint32_t kind = 1; kind <= p.sectionKinds; ++kind) {
    const std::size_t at = L::kHeaderSize + (kind - 1) * L::kSectionEntrySize;
    out.put<uint32_t>(at, kind);
    out.put<uint32_t>(at + 4, p.count[kind]);
    out.put<uint64_t>(at + 8, p.offset[kind]);
    out.put<uint64_t>(at + 16, p.size[kind]);
  }

  p.strings.write(out, sectionAt(L::Section::Strings));
  for (std::size_t i = 0; i < c.buffers.size(); ++i) {
    writeBuffer(out, sectionAt(L::Section::IoDescriptor) + i * L::kIoEntrySize, c.buffers[i], p,
                "buffers[" + std::to_string(i) + "]");
  }
  for (std::size_t s = 0; s < c.allowedShapes.size(); ++s) {
    const auto& combination = c.allowedShapes[s];
    const std::string field = "allowed_shapes[" + std::to_string(s) + "]";
    if (combination.size() != c.buffers.size()) {
      invalid(QpcErrorCode::BadValue, field,
              "needs one shape per io buffer (" + std::to_string(c.buffers.size()) + ")");
    }
    for (std::size_t b = 0; b < combination.size(); ++b) {
      const std::size_t at = sectionAt(L::Section::AllowedShapes) + (s * c.buffers.size() + b) * L::kShapeEntrySize;
      const std::string entry = field + "[" + std::to_string(b) + "]";
      writeDims(out, at + 8, combination[b], entry);
      out.put<uint8_t>(at, static_cast<uint8_t>(combination[b].size()));
    }
  }
  std::size_t indexAt = 0;
  for (std::size_t i = 0; i < c.programs.size(); ++i) {
    const auto& prog = c.programs[i];
    const std::string field = "programs[" + std::to_string(i) + "]";
    const std::size_t at = sectionAt(L::Section::Programs) + i * L::kProgramEntrySize;
    out.put<uint32_t>(at + 0, p.strings.intern(prog.name, field + ".name"));
    out.put<uint32_t>(at + 4, prog.programIndex);
    out.put<uint32_t>(at + 8, prog.numCores);
    out.put<uint32_t>(at + 12, prog.batchSize);
    out.put<uint32_t>(at + 16, prog.numSemaphores);
    out.put<uint32_t>(at + 20, prog.numMulticastIds);
    out.put<uint32_t>(at + 24, prog.flags);
    out.put<uint32_t>(at + 28, prog.doneSemaphore);
    out.put<uint64_t>(at + 32, prog.totalRequiredMemory);
    out.put<uint64_t>(at + 40, prog.ioRegionSize);
    out.put<uint64_t>(at + 48, prog.doorbellAddress);
    out.put<uint64_t>(at + 56, prog.requestDescriptorOffset);
    out.put<uint64_t>(at + 64, prog.responseDescriptorOffset);
    out.put<uint64_t>(at + 72, p.payloadOffsets[i]);
    out.put<uint64_t>(at + 80, prog.payload.size());
    out.put<uint32_t>(at + 88, static_cast<uint32_t>(indexAt));
    out.put<uint32_t>(at + 92, static_cast<uint32_t>(prog.bufferIndices.size()));
    for (auto index : prog.bufferIndices) {
      out.put<uint32_t>(sectionAt(L::Section::BufferIndices) + indexAt * L::kBufferIndexSize, index);
      ++indexAt;
    }
    if (!prog.payload.empty()) {
      out.copy(sectionAt(L::Section::Payloads) + p.payloadOffsets[i], prog.payload.data(), prog.payload.size());
    }
  }
  for (std::size_t i = 0; i < c.constants.size(); ++i) {
    const auto& k = c.constants[i];
    const std::string field = "constants[" + std::to_string(i) + "]";
    const std::size_t at = sectionAt(L::Section::Constants) + i * L::kConstantEntrySize;
    out.put<uint32_t>(at + 0, p.strings.intern(k.tensor.name, field + ".name"));
    out.put<uint32_t>(at + 4, k.index);
    out.put<uint8_t>(at + 8, static_cast<uint8_t>(k.tensor.dtype));
    out.put<uint8_t>(at + 9, static_cast<uint8_t>(k.tensor.dims.size()));
    out.put<uint8_t>(at + 10, static_cast<uint8_t>(k.tensor.encoding));
    out.put<uint8_t>(at + 11, k.tensor.reductionAxis);
    out.put<uint64_t>(at + 16, p.constantOffsets[i]);
    out.put<uint64_t>(at + 24, k.storedSize());
    writeDims(out, at + 32, k.tensor.dims, field);
    if (k.encoder &&
        (k.encoder->unitBytes == 0 || k.encoder->storedBytes % k.encoder->unitBytes != 0 || !k.encoder->encode)) {
      invalid(QpcErrorCode::BadValue, field + ".encoder", "stored size is not a whole number of units");
    }
  }

  for (std::size_t i = 0; i < c.retainedState.size(); ++i) {
    const auto& r = c.retainedState[i];
    const std::string field = "retained_state[" + std::to_string(i) + "]";
    const std::size_t at = sectionAt(L::Section::RetainedState) + i * L::kRetainedEntrySize;
    out.put<uint32_t>(at + 0, p.strings.intern(r.name, field + ".name"));
    out.put<uint32_t>(at + 4, p.strings.intern(r.stateName, field + ".state_name"));
    out.put<uint32_t>(at + 8, p.strings.intern(r.tensor, field + ".tensor"));
    out.put<uint32_t>(at + 12, p.strings.intern(r.stateTensor, field + ".state_tensor"));
    out.put<uint8_t>(at + 16, static_cast<uint8_t>(r.dtype));
    out.put<uint8_t>(at + 17, static_cast<uint8_t>(r.dims.size()));
    out.put<uint64_t>(at + 24, r.size);
    writeDims(out, at + 32, r.dims, field);
  }
  for (std::size_t i = 0; i < c.specializationPayloads.size(); ++i) {
    const auto& s = c.specializationPayloads[i];
    const std::size_t at = sectionAt(L::Section::SpecializationPayloads) + i * L::kSpecializationEntrySize;
    out.put<uint32_t>(at + 0, s.programIndex);
    out.put<uint32_t>(at + 4, s.combination);
    out.put<uint64_t>(at + 8, p.specializationOffsets[i]);
    out.put<uint64_t>(at + 16, s.payload.size());
    if (!s.payload.empty()) {
      out.copy(sectionAt(L::Section::Payloads) + p.specializationOffsets[i], s.payload.data(), s.payload.size());
    }
  }

  if (!c.deviceParts.empty()) {
    const uint64_t section = sectionAt(L::Section::DeviceParts);
    out.put<uint32_t>(section + 0, static_cast<uint32_t>(c.connection));
    out.put<uint64_t>(section + 8, p.partitionConfigOffset);
    out.put<uint64_t>(section + 16, c.partitionConfig.size());
    out.copy(section + p.partitionConfigOffset, c.partitionConfig.data(), c.partitionConfig.size());
    for (std::size_t i = 0; i < c.deviceParts.size(); ++i) {
      const auto& part = c.deviceParts[i];
      const uint64_t at = section + L::kPartsHeaderSize + i * L::kPartEntrySize;
      out.put<uint32_t>(at + 0, part.slot);
      out.put<uint32_t>(at + 4, part.numCores);
      out.put<uint64_t>(at + 8, part.weightBytes);
      out.put<uint64_t>(at + 16, part.retainedBytes);
      out.put<uint64_t>(at + 24, part.sentBytes);
      out.put<uint64_t>(at + 32, part.receivedBytes);
      out.put<uint64_t>(at + 40, p.partImageOffsets[i]);
      out.put<uint64_t>(at + 48, part.image.size());
      out.copy(section + p.partImageOffsets[i], part.image.data(), part.image.size());
    }
  }

  return out;
}

// The checks of the reader on the laid-out file before a byte is written: an anonymous mapping
// of the file's size holds the metadata, the constants' pages stay untouched (never allocated).
void checkAsReaderWould(const Metadata& metadata, uint64_t fileSize) {
  void* view = ::mmap(nullptr, fileSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (view == MAP_FAILED) {
    throw QpcFormatError(QpcErrorCode::Io, "file",
                         "program container being written: cannot reserve " + std::to_string(fileSize) +
                             " bytes of address space: " + std::strerror(errno));
  }
  auto* bytes = static_cast<std::byte*>(view);
  // An empty tail (no section after the constants) has no data pointer to copy from.
  if (!metadata.head().empty()) std::memcpy(bytes, metadata.head().data(), metadata.head().size());
  if (!metadata.tail().empty())
    std::memcpy(bytes + fileSize - metadata.tail().size(), metadata.tail().data(), metadata.tail().size());
  try {
    QpcImage::fromBytes({bytes, fileSize}, "program container being written", false);
  } catch (...) {
    ::munmap(view, fileSize);
    throw;
  }
  ::munmap(view, fileSize);
}

// Where the file's bytes go, in order: a caller's vector or a file descriptor.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void write(std::span<const std::byte> bytes) = 0;
  virtual void skipZeros(uint64_t count) = 0;  // a file leaves a hole
};

// The constant_data section, produced and written in chunks of at most kChunkBytes (plus one
// encoder unit), so a constant is never whole in memory; all-zero chunks become holes.
class ConstantStream {
 public:
  static constexpr std::size_t kChunkBytes = 4u << 20;

  ConstantStream(Sink& sink, RunningCrc& crc, std::size_t largestUnit)
      : sink_(sink), crc_(crc), buffer_(std::max<std::size_t>(kChunkBytes, largestUnit)) {}

  void zeros(uint64_t count) {
    while (count > 0) {
      const auto step = static_cast<std::size_t>(std::min<uint64_t>(count, buffer_.size() - filled_));
      std::memset(buffer_.data() + filled_, 0, step);
      advance(step);
      count -= step;
    }
  }
  void bytes(std::span<const std::byte> from) {
    while (!from.empty()) {
      const std::size_t step = std::min(from.size(), buffer_.size() - filled_);
      std::memcpy(buffer_.data() + filled_, from.data(), step);
      advance(step);
      from = from.subspan(step);
    }
  }
  void encoded(const ConstantEncoder& encoder) {
    const uint64_t units = encoder.storedBytes / encoder.unitBytes;
    for (uint64_t unit = 0; unit < units;) {
      if (buffer_.size() - filled_ < encoder.unitBytes) flush();
      const uint64_t fits = (buffer_.size() - filled_) / encoder.unitBytes;
      const uint64_t count = std::min(units - unit, fits);
      const auto size = static_cast<std::size_t>(count * encoder.unitBytes);
      encoder.encode(unit, count, std::span(buffer_.data() + filled_, size));
      advance(size);
      unit += count;
    }
  }
  void flush() {
    if (filled_ == 0) return;
    const std::span<const std::byte> chunk(buffer_.data(), filled_);
    const bool allZero = chunk[0] == std::byte{0} && std::memcmp(chunk.data(), chunk.data() + 1, filled_ - 1) == 0;
    if (allZero) {
      crc_.appendZeros(filled_);
      sink_.skipZeros(filled_);
    } else {
      crc_.append(chunk);
      sink_.write(chunk);
    }
    filled_ = 0;
  }

 private:
  void advance(std::size_t count) {
    filled_ += count;
    if (filled_ == buffer_.size()) flush();
  }

  Sink& sink_;
  RunningCrc& crc_;
  std::vector<std::byte> buffer_;
  std::size_t filled_ = 0;
};

// Writes the whole file to `sink` in file order and returns the body's CRC (for the header).
uint32_t emit(const QpcContents& c, const Plan& p, const Metadata& metadata, Sink& sink) {
  RunningCrc crc;
  const auto head = std::span<const std::byte>(metadata.head());
  crc.append(head.subspan(L::kHeaderSize));
  sink.write(head);
  std::size_t largestUnit = 0;
  for (const auto& k : c.constants)
    if (k.encoder) largestUnit = std::max<std::size_t>(largestUnit, k.encoder->unitBytes);
  ConstantStream stream(sink, crc, largestUnit);
  uint64_t at = 0;  // in the section
  for (std::size_t i = 0; i < c.constants.size(); ++i) {
    const auto& k = c.constants[i];
    stream.zeros(p.constantOffsets[i] - at);
    if (k.encoder) {
      try {
        stream.encoded(*k.encoder);
      } catch (const QpcFormatError&) {
        throw;
      } catch (const std::exception& e) {
        invalid(QpcErrorCode::BadValue, "constants[" + std::to_string(i) + "].encoder",
                "'" + k.tensor.name + "' could not be encoded: " + e.what());
      }
    } else {
      stream.bytes(k.tensor.data);
    }
    at = p.constantOffsets[i] + k.storedSize();
  }
  stream.flush();
  crc.append(metadata.tail());
  sink.write(metadata.tail());
  return crc.value();
}

class VectorSink final : public Sink {
 public:
  explicit VectorSink(std::vector<std::byte>& out) : out_(out) {}
  void write(std::span<const std::byte> bytes) override { out_.insert(out_.end(), bytes.begin(), bytes.end()); }
  void skipZeros(uint64_t count) override { out_.resize(out_.size() + count); }

 private:
  std::vector<std::byte>& out_;
};

class FileSink final : public Sink {
 public:
  FileSink(int fd, const std::string& path) : fd_(fd), path_(path) {}
  void write(std::span<const std::byte> bytes) override {
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("cannot write", n < 0 ? errno : ENOSPC);
      bytes = bytes.subspan(static_cast<std::size_t>(n));
    }
  }
  void skipZeros(uint64_t count) override {
    if (::lseek(fd_, static_cast<off_t>(count), SEEK_CUR) < 0) fail("cannot seek", errno);
  }
  [[noreturn]] void fail(const char* what, int error) const {
    throw QpcFormatError(QpcErrorCode::Io, "file", path_ + ": " + what + ": " + std::strerror(error));
  }

 private:
  int fd_;
  const std::string& path_;
};

}  // namespace

std::vector<std::byte> serializeQpc(const QpcContents& c) {
  Plan p = plan(c);
  Metadata metadata = layOut(c, p);
  checkAsReaderWould(metadata, p.fileSize);
  std::vector<std::byte> out;
  out.reserve(p.fileSize);
  VectorSink sink(out);
  const uint32_t crc = emit(c, p, metadata, sink);
  std::memcpy(out.data() + L::kOffCrc, &crc, sizeof crc);
  // The reader is the one definition of a valid container: never emit what it would reject.
  QpcImage::fromBytes(out, "program container being written");
  return out;
}

void writeQpcFile(const std::string& path, const QpcContents& contents) {
  Plan p = plan(contents);
  Metadata metadata = layOut(contents, p);
  checkAsReaderWould(metadata, p.fileSize);
  std::string temporary = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(temporary.data());
  if (fd < 0) {
    throw QpcFormatError(QpcErrorCode::Io, "file", path + ": cannot create a temporary file: " + std::strerror(errno));
  }
  FileSink sink(fd, path);
  try {
    const uint32_t crc = emit(contents, p, metadata, sink);
    // A trailing hole is not written: the size makes it part of the file.
    if (::ftruncate(fd, static_cast<off_t>(p.fileSize)) != 0) sink.fail("cannot set the size", errno);
    if (::pwrite(fd, &crc, sizeof crc, L::kOffCrc) != static_cast<ssize_t>(sizeof crc))
      sink.fail("cannot write the checksum", errno);
    if (::fchmod(fd, 0644) != 0) sink.fail("cannot set permissions", errno);
    if (::fsync(fd) != 0) sink.fail("cannot sync", errno);
    const int closed = ::close(fd);
    fd = -1;
    if (closed != 0) sink.fail("cannot close", errno);
    if (::rename(temporary.c_str(), path.c_str()) != 0) sink.fail("cannot rename into place", errno);
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
}

}  // namespace qaic::container
