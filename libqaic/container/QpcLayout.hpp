// SPDX-License-Identifier: Apache-2.0
// The byte layout of programqpc.bin (docs/formats/qpc.md): the only place offsets and entry
// sizes are spelled out, shared by QpcWriter.cpp and QpcImage.cpp. Private to the container.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace qaic::container::layout {

inline constexpr std::array<char, 8> kMagic = {'Q', 'A', 'I', 'C', 'Q', 'P', 'C', '\0'};

// Fixed header.
inline constexpr std::size_t kHeaderSize = 48;
inline constexpr std::size_t kOffMagic = 0;
inline constexpr std::size_t kOffVersion = 8;
inline constexpr std::size_t kOffHeaderSize = 12;
inline constexpr std::size_t kOffFlags = 16;
inline constexpr std::size_t kOffSectionCount = 20;
inline constexpr std::size_t kOffFileSize = 24;
inline constexpr std::size_t kOffSectionTable = 32;
inline constexpr std::size_t kOffCrc = 40;
inline constexpr std::size_t kOffReserved = 44;

// Section table entry: u32 kind, u32 count, u64 offset, u64 size.
inline constexpr std::size_t kSectionEntrySize = 24;

enum class Section : uint32_t {
  Strings = 1,
  IoDescriptor = 2,
  AllowedShapes = 3,
  Programs = 4,
  BufferIndices = 5,
  Constants = 6,
  Payloads = 7,
  ConstantData = 8,
  RetainedState = 9,            // version 2
  SpecializationPayloads = 10,  // version 2
  DeviceParts = 11,             // version 4
};
inline constexpr uint32_t kSectionKinds = 11;  // the most a file has: version 4's
// Sections a file of each version has (each kind 1..n exactly once).
constexpr uint32_t sectionKindsOf(uint32_t version) { return version == 1 ? 8 : (version < 4 ? 10 : 11); }
inline constexpr std::size_t kSectionAlignment = 8;
// constant_data and device_parts (whose nested images hold constant data) are 64-byte aligned.
constexpr bool isAlignedLikeConstants(Section kind) {
  return kind == Section::ConstantData || kind == Section::DeviceParts;
}

inline constexpr std::size_t kIoEntrySize = 112;
inline constexpr std::size_t kShapeEntrySize = 72;
inline constexpr std::size_t kProgramEntrySize = 96;
inline constexpr std::size_t kConstantEntrySize = 96;
inline constexpr std::size_t kBufferIndexSize = 4;
inline constexpr std::size_t kRetainedEntrySize = 96;
inline constexpr std::size_t kSpecializationEntrySize = 24;
inline constexpr std::size_t kDimSlots = 8;

// device_parts (version 4): a 32-byte header, one 64-byte entry per part, then the partition
// config's text and the nested images (each 64-byte aligned in the section, so in the file).
inline constexpr std::size_t kPartsHeaderSize = 32;
inline constexpr std::size_t kPartEntrySize = 64;

// IO entry flags.
inline constexpr uint8_t kIoPartialAllowed = 1u << 0;
inline constexpr uint8_t kIoSkipPartialHeader = 1u << 1;
inline constexpr uint8_t kIoAllowSkip = 1u << 2;
inline constexpr uint8_t kIoKnownFlags = 0x7;

// Device protocol (docs/device-protocol.md): descriptor pages and the doorbell word.
inline constexpr uint64_t kPageSize = 4096;
inline constexpr uint64_t kDescriptorSize = 4096;
inline constexpr uint64_t kDoorbellBytes = 4;

}  // namespace qaic::container::layout
