// SPDX-License-Identifier: Apache-2.0
// Checking an IO set before submitting it: the one check of user buffers against a program's
// BufferMappings V2, by seed 000's buffer types. InferenceSet::submit runs exactly this check; an
// application that takes IO sets from elsewhere (qaic-runner's batch JSON, a serving frontend)
// calls it up front to refuse a bad set with the same message, before any buffer is filled.
//   regular     (isPartialAllowed false): dims exactly the mapping's dims
//   partial     (isPartialAllowed, no allowed shapes): product(dims) <= product(full dims)
//   specialized (isPartialAllowed, allowed shapes): dims exactly one allowed combination, and
//               every buffer of one IO set from the same combination; an output that gives
//               no dims takes the dims of the combination the others select
//   dropped     (selective IO): only if isPartialAllowed && skipPartialHeader && allowSkip
// Byte sizes: an input holds exactly product(dims) elements, an output at least that many.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <qaic/Errors.hpp>
#include <qaic/Qpc.hpp>

namespace qaic::rt {

using IoDims = std::vector<uint64_t>;

// What the check needs of one BufferMapping V2.
struct BufferShapeRules {
  std::string name;
  bool isInput = true;
  std::size_t elementSize = 1;  // bytes per element of the user data type
  IoDims dims;                  // the full (default) dims
  bool isPartialAllowed = false;
  bool skipPartialHeader = false;
  bool allowSkip = false;
  // This buffer's dims in each allowed shape combination (same order for every buffer of a
  // program); empty when the program is not specialized.
  std::vector<IoDims> allowedShapes;
};

// One user buffer of an IO set.
struct IoSetEntry {
  bool present = true;         // false: dropped (selective IO)
  std::optional<IoDims> dims;  // absent: the mapping's full dims
  std::size_t bytes = 0;       // the user buffer's size
};

struct IoSetShape {
  std::vector<IoDims> dims;  // the dims each buffer will have (empty for dropped buffers)
  int specialization = -1;   // the allowed shape combination used, -1 when not specialized
};

// Checks one buffer alone (its own rules, not the cross-buffer combination rule) and returns the
// dims it will have. Throws Error(QS_BUFFER_DIMS | QS_BUFFER_SIZE | QS_INVAL) whose message names
// the buffer, e.g. "buffer 'in0': dims [1,33] are not one of the allowed shapes [1,32] [1,1]".
IoDims validateBuffer(const BufferShapeRules& rules, const IoSetEntry& entry);

// Checks a whole IO set: `entries[i]` against `rules[i]`, plus the specialization rule.
IoSetShape validateIoSet(const std::vector<BufferShapeRules>& rules, const std::vector<IoSetEntry>& entries);

// The rules of one mapping (allowed shapes only when the program is specialized, i.e. has more
// than the default combination) and of all of a program's mappings, in mapping order.
BufferShapeRules shapeRules(const v2::BufferMapping& mapping);
std::vector<BufferShapeRules> shapeRules(const v2::BufferMappings& mappings);

// "[1,32]"
std::string formatDims(const IoDims& dims);
uint64_t dimsProduct(const IoDims& dims);

}  // namespace qaic::rt
