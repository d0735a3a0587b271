// SPDX-License-Identifier: Apache-2.0
#include <qaic/IoValidation.hpp>

#include <algorithm>
#include <limits>

namespace qaic::rt {
namespace {

[[noreturn]] void fail(QStatus status, const BufferShapeRules& rules, const std::string& what) {
  throw Error(status, "buffer '" + rules.name + "': " + what);
}

std::string formatShapes(const std::vector<IoDims>& shapes) {
  std::string text;
  for (const IoDims& dims : shapes) text += (text.empty() ? "" : " ") + formatDims(dims);
  return text;
}

bool productOverflows(const IoDims& dims) {
  uint64_t product = 1;
  for (uint64_t d : dims) {
    if (d != 0 && product > std::numeric_limits<uint64_t>::max() / d) return true;
    product *= d;
  }
  return false;
}

void checkDimsShape(const BufferShapeRules& rules, const IoDims& dims) {
  if (dims.empty() || dims.size() > 8)
    fail(QS_BUFFER_DIMS, rules, "dims " + formatDims(dims) + " must have 1 to 8 entries");
  if (productOverflows(dims)) fail(QS_BUFFER_DIMS, rules, "dims " + formatDims(dims) + " overflow");
}

void checkDims(const BufferShapeRules& rules, const IoDims& dims) {
  checkDimsShape(rules, dims);
  // A specialized program fixes every buffer's dims per combination, partial or not (seed 000).
  if (!rules.allowedShapes.empty()) {
    if (std::find(rules.allowedShapes.begin(), rules.allowedShapes.end(), dims) == rules.allowedShapes.end())
      fail(QS_BUFFER_DIMS, rules,
           "dims " + formatDims(dims) + " are not one of the allowed shapes " + formatShapes(rules.allowedShapes));
    return;
  }
  if (!rules.isPartialAllowed) {
    if (dims != rules.dims)
      fail(QS_BUFFER_DIMS, rules,
           "dims " + formatDims(dims) + " differ from the network's " + formatDims(rules.dims) +
               " (the buffer is not partial)");
    return;
  }
  if (dimsProduct(dims) > dimsProduct(rules.dims))
    fail(QS_BUFFER_DIMS, rules,
         "dims " + formatDims(dims) + " hold more elements than the network's " + formatDims(rules.dims));
}

void checkBytes(const BufferShapeRules& rules, const IoDims& dims, std::size_t bytes) {
  const uint64_t elements = dimsProduct(dims);
  if (rules.elementSize != 0 && elements > std::numeric_limits<uint64_t>::max() / rules.elementSize)
    fail(QS_BUFFER_SIZE, rules, "dims " + formatDims(dims) + " overflow in bytes");
  const uint64_t needed = elements * rules.elementSize;
  if (rules.isInput && bytes != needed)
    fail(QS_BUFFER_SIZE, rules,
         "input of " + std::to_string(bytes) + " bytes, dims " + formatDims(dims) + " need exactly " +
             std::to_string(needed));
  if (!rules.isInput && bytes < needed)
    fail(QS_BUFFER_SIZE, rules,
         "output of " + std::to_string(bytes) + " bytes is smaller than the " + std::to_string(needed) + " that dims " +
             formatDims(dims) + " need");
}

IoDims toIoDims(const std::vector<int64_t>& dims) {
  IoDims out;
  out.reserve(dims.size());
  for (int64_t d : dims) out.push_back(d < 0 ? 0 : static_cast<uint64_t>(d));
  return out;
}

}  // namespace

BufferShapeRules shapeRules(const v2::BufferMapping& mapping) {
  BufferShapeRules rules;
  rules.name = mapping.bufferName;
  rules.isInput = mapping.ioType == BUFFER_IO_TYPE_INPUT;
  rules.dims = toIoDims(mapping.ioShapes.defaultDims);
  // The mapping's own size fixes the element size, so no second table of type sizes exists.
  const uint64_t elements = dimsProduct(rules.dims);
  rules.elementSize = elements == 0 ? 0 : mapping.size / elements;
  rules.isPartialAllowed = mapping.isPartialBufferAllowed;
  rules.skipPartialHeader = mapping.skipPartialHeader;
  rules.allowSkip = mapping.allowSkip;
  if (mapping.ioShapes.allowedDims.size() > 1)
    for (const auto& dims : mapping.ioShapes.allowedDims) rules.allowedShapes.push_back(toIoDims(dims));
  return rules;
}

std::vector<BufferShapeRules> shapeRules(const v2::BufferMappings& mappings) {
  std::vector<BufferShapeRules> rules;
  rules.reserve(mappings.size());
  for (const auto& mapping : mappings) rules.push_back(shapeRules(mapping));
  return rules;
}

uint64_t dimsProduct(const IoDims& dims) {
  uint64_t product = 1;
  for (uint64_t d : dims) product *= d;
  return product;
}

std::string formatDims(const IoDims& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

IoDims validateBuffer(const BufferShapeRules& rules, const IoSetEntry& entry) {
  if (!entry.present) {
    if (!(rules.isPartialAllowed && rules.skipPartialHeader && rules.allowSkip))
      fail(QS_INVAL, rules,
           "cannot be dropped: selective IO needs is_partial_allowed, skip_partial_header and "
           "allow_skip (this buffer has " +
               std::string(rules.isPartialAllowed ? "true" : "false") + ", " +
               (rules.skipPartialHeader ? "true" : "false") + ", " + (rules.allowSkip ? "true" : "false") + ")");
    return {};
  }
  IoDims dims = entry.dims ? *entry.dims : rules.dims;
  if (entry.dims) checkDims(rules, dims);
  checkBytes(rules, dims, entry.bytes);
  return dims;
}

IoSetShape validateIoSet(const std::vector<BufferShapeRules>& rules, const std::vector<IoSetEntry>& entries) {
  if (rules.size() != entries.size())
    throw Error(QS_INVAL, "IO set has " + std::to_string(entries.size()) + " buffers, the network " +
                              std::to_string(rules.size()));
  IoSetShape shape;
  shape.dims.reserve(rules.size());
  for (std::size_t i = 0; i < rules.size(); ++i) shape.dims.push_back(validateBuffer(rules[i], entries[i]));

  // Specialized programs: one combination must fit every present buffer that gives its dims
  // (an input always does: its byte size fixes them); outputs that give none take that
  // combination's, so a decode step's input dims are enough to select it.
  std::size_t combinations = 0;
  for (const BufferShapeRules& r : rules) combinations = std::max(combinations, r.allowedShapes.size());
  if (combinations == 0) return shape;
  for (std::size_t c = 0; c < combinations; ++c) {
    bool fits = true;
    for (std::size_t i = 0; i < rules.size() && fits; ++i) {
      const bool given = entries[i].dims || rules[i].isInput;
      if (!entries[i].present || !given || rules[i].allowedShapes.size() <= c) continue;
      fits = shape.dims[i] == rules[i].allowedShapes[c];
    }
    if (fits) {
      shape.specialization = static_cast<int>(c);
      for (std::size_t i = 0; i < rules.size(); ++i)
        if (entries[i].present && !entries[i].dims && !rules[i].isInput && rules[i].allowedShapes.size() > c)
          shape.dims[i] = rules[i].allowedShapes[c];
      return shape;
    }
  }
  std::string listed;
  for (std::size_t i = 0; i < rules.size(); ++i)
    if (entries[i].present && (entries[i].dims || rules[i].isInput) && !rules[i].allowedShapes.empty())
      listed += (listed.empty() ? "" : ", ") + rules[i].name + "=" + formatDims(shape.dims[i]);
  throw Error(QS_BUFFER_DIMS, "IO set dims " + listed + " are not all from one allowed shape combination");
}

}  // namespace qaic::rt
