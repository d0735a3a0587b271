// SPDX-License-Identifier: Apache-2.0
#include "container/QpcWriter.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "base/AtomicFile.hpp"
#include "container/Bytes.hpp"
#include "container/QpcImage.hpp"
#include "container/QpcLayout.hpp"
#include "kernels/mx/Mxfp6Format.hpp"  // encodedBytes: inline, no link to the kernels

namespace qaic::container {

namespace {

namespace L = layout;
using bytes::alignUp;
using bytes::writeLe;

[[noreturn]] void invalid(QpcErrorCode code, const std::string& field, const std::string& what) {
  throw QpcFormatError(code, field, "program container: " + field + ": " + what);
}

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
  void write(std::vector<std::byte>& out, std::size_t at) const {
    for (const auto* s : order_) {
      writeLe<uint32_t>(out, at, static_cast<uint32_t>(s->size()));
      std::memcpy(out.data() + at + 4, s->data(), s->size());
      at += 4 + s->size();
    }
  }
  uint32_t count() const { return static_cast<uint32_t>(order_.size()); }

 private:
  std::map<std::string, uint32_t> index_;
  std::vector<const std::string*> order_;
};

void writeDims(std::vector<std::byte>& out, std::size_t at, const ir::Dims& dims, const std::string& field) {
  if (dims.size() > L::kDimSlots) invalid(QpcErrorCode::BadValue, field + ".rank", "exceeds 8");
  for (std::size_t d = 0; d < dims.size(); ++d) writeLe<int64_t>(out, at + d * 8, dims[d]);
}

struct Plan {
  StringTable strings;
  std::array<uint64_t, L::kSectionKinds + 1> offset{};
  std::array<uint64_t, L::kSectionKinds + 1> size{};
  std::array<uint32_t, L::kSectionKinds + 1> count{};
  std::vector<uint64_t> payloadOffsets;
  std::vector<uint64_t> constantOffsets;
  std::vector<uint64_t> specializationOffsets;  // in the payload section, after the programs'
  uint32_t version = 1;
  uint32_t sectionKinds = L::sectionKindsOf(1);
  uint64_t fileSize = 0;
};

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
  p.sectionKinds = L::sectionKindsOf(p.version);
  uint64_t constantBytes = 0;
  for (std::size_t i = 0; i < c.constants.size(); ++i) {
    p.strings.intern(c.constants[i].tensor.name, "constants[" + std::to_string(i) + "].name");
    if (const ir::WeightTensor& t = c.constants[i].tensor; t.encoding != ir::WeightEncoding::Plain) {
      // What the reader checks of an encoded constant (QpcParseEntries.cpp).
      if (t.dims.size() != 2 || t.reductionAxis > 1 ||
          t.data.size() != kernels::mx::encodedBytes(t.dims[t.reductionAxis], t.dims[1 - t.reductionAxis])) {
        invalid(QpcErrorCode::BadValue, "constants[" + std::to_string(i) + "].size",
                "does not match its dims and encoding");
      }
    }
    constantBytes = alignUp(constantBytes, kConstantAlignment);
    p.constantOffsets.push_back(constantBytes);
    constantBytes += c.constants[i].tensor.data.size();
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
  uint64_t at = L::kHeaderSize + p.sectionKinds * L::kSectionEntrySize;
  for (uint32_t kind = 1; kind <= p.sectionKinds; ++kind) {
    const bool isData = static_cast<L::Section>(kind) == L::Section::ConstantData;
    at = alignUp(at, isData ? kConstantAlignment : L::kSectionAlignment);
    p.offset[kind] = at;
    at += p.size[kind];
  }
  p.fileSize = at;
  return p;
}

void writeBuffer(std::vector<std::byte>& out, std::size_t at, const QpcBuffer& b, Plan& p, const std::string& field) {
  writeLe<uint32_t>(out, at + 0, b.index);
  writeLe<uint32_t>(out, at + 4, p.strings.intern(b.io.bufferName, field + ".name"));
  writeLe<uint32_t>(out, at + 8, p.strings.intern(b.io.tensor, field + ".tensor"));
  writeLe<uint8_t>(out, at + 12, static_cast<uint8_t>(b.io.direction));
  writeLe<uint8_t>(out, at + 13, static_cast<uint8_t>(b.io.dtype));
  writeLe<uint8_t>(out, at + 14, static_cast<uint8_t>(b.io.userLayout));
  uint8_t flags = 0;
  if (b.io.isPartialAllowed) flags |= L::kIoPartialAllowed;
  if (b.io.skipPartialHeader) flags |= L::kIoSkipPartialHeader;
  if (b.io.allowSkip) flags |= L::kIoAllowSkip;
  writeLe<uint8_t>(out, at + 15, flags);
  writeLe<uint32_t>(out, at + 16, static_cast<uint32_t>(b.dataType));
  writeLe<uint8_t>(out, at + 20, static_cast<uint8_t>(b.io.deviceFormat.layout));
  writeLe<uint8_t>(out, at + 21, static_cast<uint8_t>(b.io.deviceFormat.elementType));
  writeLe<uint8_t>(out, at + 22, static_cast<uint8_t>(b.io.dims.size()));
  writeLe<uint64_t>(out, at + 24, b.size);
  writeLe<uint64_t>(out, at + 32, b.deviceOffset);
  writeLe<uint64_t>(out, at + 40, b.deviceSize);
  writeDims(out, at + 48, b.io.dims, field);
}

}  // namespace

std::vector<std::byte> serializeQpc(const QpcContents& c) {
  Plan p = plan(c);
  std::vector<std::byte> out(p.fileSize);
  auto sectionAt = [&](L::Section kind) { return p.offset[static_cast<uint32_t>(kind)]; };

  std::memcpy(out.data(), L::kMagic.data(), L::kMagic.size());
  writeLe<uint32_t>(out, L::kOffVersion, p.version);
  writeLe<uint32_t>(out, L::kOffHeaderSize, L::kHeaderSize);
  writeLe<uint32_t>(out, L::kOffFlags, 0);
  writeLe<uint32_t>(out, L::kOffSectionCount, p.sectionKinds);
  writeLe<uint64_t>(out, L::kOffFileSize, p.fileSize);
  writeLe<uint64_t>(out, L::kOffSectionTable, L::kHeaderSize);
  for (uint32_t kind = 1; kind <= p.sectionKinds; ++kind) {
    const std::size_t at = L::kHeaderSize + (kind - 1) * L::kSectionEntrySize;
    writeLe<uint32_t>(out, at, kind);
    writeLe<uint32_t>(out, at + 4, p.count[kind]);
    writeLe<uint64_t>(out, at + 8, p.offset[kind]);
    writeLe<uint64_t>(out, at + 16, p.size[kind]);
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
      writeLe<uint8_t>(out, at, static_cast<uint8_t>(combination[b].size()));
    }
  }
  std::size_t indexAt = 0;
  for (std::size_t i = 0; i < c.programs.size(); ++i) {
    const auto& prog = c.programs[i];
    const std::string field = "programs[" + std::to_string(i) + "]";
    const std::size_t at = sectionAt(L::Section::Programs) + i * L::kProgramEntrySize;
    writeLe<uint32_t>(out, at + 0, p.strings.intern(prog.name, field + ".name"));
    writeLe<uint32_t>(out, at + 4, prog.programIndex);
    writeLe<uint32_t>(out, at + 8, prog.numCores);
    writeLe<uint32_t>(out, at + 12, prog.batchSize);
    writeLe<uint32_t>(out, at + 16, prog.numSemaphores);
    writeLe<uint32_t>(out, at + 20, prog.numMulticastIds);
    writeLe<uint32_t>(out, at + 24, prog.flags);
    writeLe<uint32_t>(out, at + 28, prog.doneSemaphore);
    writeLe<uint64_t>(out, at + 32, prog.totalRequiredMemory);
    writeLe<uint64_t>(out, at + 40, prog.ioRegionSize);
    writeLe<uint64_t>(out, at + 48, prog.doorbellAddress);
    writeLe<uint64_t>(out, at + 56, prog.requestDescriptorOffset);
    writeLe<uint64_t>(out, at + 64, prog.responseDescriptorOffset);
    writeLe<uint64_t>(out, at + 72, p.payloadOffsets[i]);
    writeLe<uint64_t>(out, at + 80, prog.payload.size());
    writeLe<uint32_t>(out, at + 88, static_cast<uint32_t>(indexAt));
    writeLe<uint32_t>(out, at + 92, static_cast<uint32_t>(prog.bufferIndices.size()));
    for (auto index : prog.bufferIndices) {
      writeLe<uint32_t>(out, sectionAt(L::Section::BufferIndices) + indexAt * L::kBufferIndexSize, index);
      ++indexAt;
    }
    if (!prog.payload.empty()) {
      std::memcpy(out.data() + sectionAt(L::Section::Payloads) + p.payloadOffsets[i], prog.payload.data(),
                  prog.payload.size());
    }
  }
  for (std::size_t i = 0; i < c.constants.size(); ++i) {
    const auto& k = c.constants[i];
    const std::string field = "constants[" + std::to_string(i) + "]";
    const std::size_t at = sectionAt(L::Section::Constants) + i * L::kConstantEntrySize;
    writeLe<uint32_t>(out, at + 0, p.strings.intern(k.tensor.name, field + ".name"));
    writeLe<uint32_t>(out, at + 4, k.index);
    writeLe<uint8_t>(out, at + 8, static_cast<uint8_t>(k.tensor.dtype));
    writeLe<uint8_t>(out, at + 9, static_cast<uint8_t>(k.tensor.dims.size()));
    writeLe<uint8_t>(out, at + 10, static_cast<uint8_t>(k.tensor.encoding));
    writeLe<uint8_t>(out, at + 11, k.tensor.reductionAxis);
    writeLe<uint64_t>(out, at + 16, p.constantOffsets[i]);
    writeLe<uint64_t>(out, at + 24, k.tensor.data.size());
    writeDims(out, at + 32, k.tensor.dims, field);
    if (!k.tensor.data.empty()) {
      std::memcpy(out.data() + sectionAt(L::Section::ConstantData) + p.constantOffsets[i], k.tensor.data.data(),
                  k.tensor.data.size());
    }
  }

  for (std::size_t i = 0; i < c.retainedState.size(); ++i) {
    const auto& r = c.retainedState[i];
    const std::string field = "retained_state[" + std::to_string(i) + "]";
    const std::size_t at = sectionAt(L::Section::RetainedState) + i * L::kRetainedEntrySize;
    writeLe<uint32_t>(out, at + 0, p.strings.intern(r.name, field + ".name"));
    writeLe<uint32_t>(out, at + 4, p.strings.intern(r.stateName, field + ".state_name"));
    writeLe<uint32_t>(out, at + 8, p.strings.intern(r.tensor, field + ".tensor"));
    writeLe<uint32_t>(out, at + 12, p.strings.intern(r.stateTensor, field + ".state_tensor"));
    writeLe<uint8_t>(out, at + 16, static_cast<uint8_t>(r.dtype));
    writeLe<uint8_t>(out, at + 17, static_cast<uint8_t>(r.dims.size()));
    writeLe<uint64_t>(out, at + 24, r.size);
    writeDims(out, at + 32, r.dims, field);
  }
  for (std::size_t i = 0; i < c.specializationPayloads.size(); ++i) {
    const auto& s = c.specializationPayloads[i];
    const std::size_t at = sectionAt(L::Section::SpecializationPayloads) + i * L::kSpecializationEntrySize;
    writeLe<uint32_t>(out, at + 0, s.programIndex);
    writeLe<uint32_t>(out, at + 4, s.combination);
    writeLe<uint64_t>(out, at + 8, p.specializationOffsets[i]);
    writeLe<uint64_t>(out, at + 16, s.payload.size());
    if (!s.payload.empty()) {
      std::memcpy(out.data() + sectionAt(L::Section::Payloads) + p.specializationOffsets[i], s.payload.data(),
                  s.payload.size());
    }
  }

  const auto* body = reinterpret_cast<const Bytef*>(out.data() + L::kHeaderSize);
  writeLe<uint32_t>(out, L::kOffCrc,
                    static_cast<uint32_t>(crc32_z(crc32_z(0, nullptr, 0), body, out.size() - L::kHeaderSize)));

  // The reader is the one definition of a valid container: never emit what it would reject.
  QpcImage::fromBytes(out, "program container being written");
  return out;
}

void writeQpcFile(const std::string& path, const QpcContents& contents) {
  const std::vector<std::byte> data = serializeQpc(contents);
  try {
    writeFileAtomically(path, std::span<const std::byte>(data));
  } catch (const AtomicWriteError& e) {
    throw QpcFormatError(QpcErrorCode::Io, "file", e.what());
  }
}

}  // namespace qaic::container
