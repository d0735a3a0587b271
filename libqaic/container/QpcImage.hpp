// SPDX-License-Identifier: Apache-2.0
// A validated, read-only view of a program container (programqpc.bin). Every count, offset,
// size, string and enum is checked before use; after open()/fromBytes() returns, everything it
// exposes is consistent and in bounds. Constant data and program payloads are spans into the
// file's bytes (memory-mapped by open()), never copies. Thread-safe for concurrent readers.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "container/QpcFormatError.hpp"
#include "container/QpcModel.hpp"

namespace qaic::container {

class QpcImage {
 public:
  // Maps `path` read-only. Throws QpcFormatError (code Io for a missing / unreadable file).
  static std::unique_ptr<QpcImage> open(const std::string& path);
  // Views `bytes`, which must outlive the image; for 64-byte aligned constants pass a 64-byte
  // aligned buffer. `sourceName` names the bytes in error messages. `verifyChecksum` false is
  // for the fuzzer only, so that mutated inputs reach the structural checks behind the CRC.
  // `knownBodyCrc`: the CRC of bytes [48, end) when the caller computed it without reading the
  // holes of a sparse file (crcOfFileFrom, container/Checksum.hpp); checked like a computed one.
  static std::unique_ptr<QpcImage> fromBytes(std::span<const std::byte> bytes, std::string sourceName = "<memory>",
                                             bool verifyChecksum = true,
                                             std::optional<uint32_t> knownBodyCrc = std::nullopt);

  ~QpcImage();
  QpcImage(const QpcImage&) = delete;
  QpcImage& operator=(const QpcImage&) = delete;

  const std::string& sourceName() const { return sourceName_; }
  std::span<const std::byte> bytes() const { return bytes_; }  // the whole file
  std::span<const std::byte> ioDescriptorBytes() const { return ioDescriptor_; }

  const QpcContents& contents() const { return contents_; }
  const std::vector<QpcBuffer>& buffers() const { return contents_.buffers; }
  const std::vector<QpcProgram>& programs() const { return contents_.programs; }
  const std::vector<QpcConstant>& constants() const { return contents_.constants; }
  // Specializations, without the default combination.
  const std::vector<ir::ShapeCombination>& allowedShapes() const { return contents_.allowedShapes; }
  // The default combination (full dims of every buffer) followed by the specializations.
  std::vector<ir::ShapeCombination> allShapeCombinations() const;

  const QpcBuffer* findBuffer(std::string_view bufferName) const;
  const QpcConstant* findConstant(std::string_view tensorName) const;
  const std::vector<QpcRetainedState>& retainedState() const { return contents_.retainedState; }
  // The retained pair whose input or output buffer is `bufferName`; nullptr when none is.
  const QpcRetainedState* findRetained(std::string_view bufferName) const;
  // A multi-device program's parts (empty for a single-device one), each nested image already
  // checked; deviceCount() is 1 for a single-device program.
  const std::vector<QpcDevicePart>& deviceParts() const { return contents_.deviceParts; }
  std::size_t deviceCount() const { return contents_.deviceCount(); }
  // The payload program `programIndex` runs for allShapeCombinations()[combination]: its
  // specialization payload when it has one, else its own.
  std::span<const std::byte> payloadFor(const QpcProgram& program, uint32_t combination) const;
  // A program's payload as text (the JSON IR).
  static std::string_view payloadText(const QpcProgram& program);

 private:
  QpcImage() = default;
  void parse(bool verifyChecksum, std::optional<uint32_t> knownBodyCrc);

  std::string sourceName_;
  void* mapping_ = nullptr;
  std::size_t mappingSize_ = 0;
  std::span<const std::byte> bytes_;
  std::span<const std::byte> ioDescriptor_;
  QpcContents contents_;
};

}  // namespace qaic::container
