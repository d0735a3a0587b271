// SPDX-License-Identifier: Apache-2.0
#include "ir/IoSection.hpp"

#include <set>

#include "ir/JsonFields.hpp"

namespace qaic::ir {
namespace {

using namespace json_fields;

DType requireDType(const Json& object, const Where& where) {
  const std::string name = requireString(object, "dtype", where);
  const auto type = parseDType(name);
  if (!type) fail(where, "key 'dtype': unknown dtype '" + name + "'");
  return *type;
}

DeviceFormat parseDeviceFormat(const Json& object, const IoBuffer& buffer, const Where& outer) {
  DeviceFormat format{DeviceLayout::Flat, buffer.dtype};
  const auto it = object.find("device_format");
  if (it == object.end()) return format;
  const Where where{outer.text + ": device_format", {}};
  requireObject(*it, where);
  rejectUnknownKeys(*it, {"layout", "dtype"}, where);
  const std::string layout = requireString(*it, "layout", where);
  if (layout == "flat") {
    format.layout = DeviceLayout::Flat;
  } else if (layout == "DWHC" || layout == "DHWC") {
    format.layout = layout == "DWHC" ? DeviceLayout::DWHC : DeviceLayout::DHWC;
    // Seed 003's channels over space: [N, C, H, W] and the lower ranks [N, C, L], [N, C], [C].
    if (buffer.dims.empty() || buffer.dims.size() > 4) {
      fail(where, "key 'layout': " + layout + " needs a tensor of rank 1 to 4, dims have rank " +
                      std::to_string(buffer.dims.size()));
    }
  } else {
    fail(where, "key 'layout': unknown layout '" + layout + "' (expected flat, DWHC or DHWC)");
  }
  format.elementType = requireDType(*it, where);
  return format;
}

IoBuffer parseEntry(const Json& entry, const Where& indexWhere) {
  requireObject(entry, indexWhere);
  IoBuffer buffer;
  buffer.bufferName = requireString(entry, "name", indexWhere);
  const Where where{indexWhere.text + " '" + buffer.bufferName + "'", {}};
  rejectUnknownKeys(entry,
                    {"name", "tensor", "direction", "dtype", "dims", "layout", "is_partial_allowed",
                     "skip_partial_header", "allow_skip", "device_format"},
                    where);
  buffer.tensor = requireString(entry, "tensor", where);
  const std::string direction = requireString(entry, "direction", where);
  if (direction != "in" && direction != "out") {
    fail(where, "key 'direction': expected \"in\" or \"out\", got '" + direction + "'");
  }
  buffer.direction = direction == "in" ? Direction::In : Direction::Out;
  buffer.dtype = requireDType(entry, where);
  buffer.dims = requireDims(requireKey(entry, "dims", where), "dims", where, 1);
  try {
    elementCount(buffer.dims);
  } catch (const IrError& e) {
    fail(where, std::string("key 'dims': ") + e.what());
  }
  if (const auto it = entry.find("layout"); it != entry.end()) {
    const std::string layout = requireString(entry, "layout", where);
    if (layout != "NCHW" && layout != "NHWC") {
      fail(where, "key 'layout': expected NCHW or NHWC, got '" + layout + "'");
    }
    buffer.userLayout = layout == "NHWC" ? UserLayout::NHWC : UserLayout::NCHW;
    if (buffer.userLayout == UserLayout::NHWC && buffer.dims.size() != 4) {
      fail(where, "key 'layout': NHWC needs a rank-4 tensor");
    }
  }
  buffer.isPartialAllowed = optionalBool(entry, "is_partial_allowed", where, false);
  buffer.skipPartialHeader = optionalBool(entry, "skip_partial_header", where, false);
  buffer.allowSkip = optionalBool(entry, "allow_skip", where, false);
  if (buffer.skipPartialHeader && !buffer.isPartialAllowed) {
    fail(where, "key 'skip_partial_header': requires is_partial_allowed");
  }
  if (buffer.allowSkip && !(buffer.isPartialAllowed && buffer.skipPartialHeader)) {
    fail(where,
         "key 'allow_skip': selective IO requires is_partial_allowed and "
         "skip_partial_header");
  }
  buffer.deviceFormat = parseDeviceFormat(entry, buffer, where);
  return buffer;
}

}  // namespace

std::string_view deviceLayoutName(DeviceLayout layout) {
  switch (layout) {
    case DeviceLayout::Flat: return "flat";
    case DeviceLayout::DWHC: return "DWHC";
    case DeviceLayout::DHWC: return "DHWC";
  }
  return "flat";
}

std::string_view userLayoutName(UserLayout layout) { return layout == UserLayout::NHWC ? "NHWC" : "NCHW"; }

std::vector<IoBuffer> parseIoSection(const nlohmann::json& io, const std::string& source) {
  if (!io.is_array()) fail({source + ": io", {}}, "expected an array");
  std::vector<IoBuffer> buffers;
  std::set<std::string> names;
  std::set<std::string> tensors;
  for (std::size_t i = 0; i < io.size(); ++i) {
    IoBuffer buffer = parseEntry(io[i], {source + ": io[" + std::to_string(i) + "]", {}});
    const Where where{source + ": io[" + std::to_string(i) + "] '" + buffer.bufferName + "'", {}};
    if (!names.insert(buffer.bufferName).second) {
      fail(where, "duplicate buffer name '" + buffer.bufferName + "'");
    }
    if (!tensors.insert(buffer.tensor).second) {
      fail(where, "tensor '" + buffer.tensor + "' is bound by more than one io buffer");
    }
    buffers.push_back(std::move(buffer));
  }
  return buffers;
}

std::vector<ShapeCombination> parseAllowedShapes(const nlohmann::json& shapes, const std::vector<IoBuffer>& io,
                                                 const std::string& source) {
  if (!shapes.is_array()) fail({source + ": allowed_shapes", {}}, "expected an array");
  if (!shapes.empty() && io.empty()) {
    fail({source + ": allowed_shapes", {}}, "needs an io section");
  }
  std::vector<ShapeCombination> combinations;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const Where where{source + ": allowed_shapes[" + std::to_string(i) + "]", {}};
    requireObject(shapes[i], where);
    for (const auto& item : shapes[i].items()) {
      bool known = false;
      for (const auto& buffer : io) known = known || buffer.bufferName == item.key();
      if (!known) fail(where, "unknown io buffer '" + item.key() + "'");
    }
    ShapeCombination combination;
    for (const auto& buffer : io) {
      const Where bufferWhere{where.text + " '" + buffer.bufferName + "'", {}};
      const Dims dims = requireDims(requireKey(shapes[i], buffer.bufferName, where), "dims", bufferWhere, 0);
      if (dims.size() != buffer.dims.size()) {
        fail(bufferWhere, "rank " + std::to_string(dims.size()) + " != io rank " + std::to_string(buffer.dims.size()));
      }
      int64_t count = 0;
      try {
        count = elementCount(dims);
      } catch (const IrError& e) {
        fail(bufferWhere, e.what());
      }
      const int64_t full = elementCount(buffer.dims);
      // Seed 000: a specialization may shrink any buffer, partial or not (its specialized
      // example runs the non-partial in1 as [1,128] and as [1,2]); it can never grow one.
      if (count > full) {
        fail(bufferWhere, std::to_string(count) + " elements exceed the io dims' " + std::to_string(full));
      }
      combination.push_back(dims);
    }
    combinations.push_back(std::move(combination));
  }
  return combinations;
}

}  // namespace qaic::ir
