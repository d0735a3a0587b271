// SPDX-License-Identifier: Apache-2.0
// The device_parts section (version 4) of an untrusted programqpc.bin: the partition config's
// text, one entry per device, and each part's nested single-device container, which goes
// through this same parser (an error in it names the part: "device_parts[1]: ...").
#include <algorithm>
#include <map>

#include "container/QpcParser.hpp"

namespace qaic::container::detail {

using bytes::readLe;

void Parser::readDeviceParts() {
  if (out_.formatVersion < 4) return;
  const auto data = section(L::Section::DeviceParts);
  const uint32_t n = count(L::Section::DeviceParts);
  // Version 4 is written only for a program that spans devices.
  if (n < kMinDeviceParts || n > kMaxDeviceParts) {
    fail(n > kMaxDeviceParts ? QpcErrorCode::AbsurdCount : QpcErrorCode::BadValue, "device_parts.count",
         std::to_string(n) + " parts; a version-4 container spans 2 to 16 devices");
  }
  const uint64_t entriesEnd = L::kPartsHeaderSize + uint64_t{n} * L::kPartEntrySize;
  if (data.size() < entriesEnd) {
    fail(QpcErrorCode::AbsurdCount, "device_parts.size",
         std::to_string(n) + " parts need " + std::to_string(entriesEnd) +
             " bytes of header and entries but the section has " + std::to_string(data.size()));
  }
  const auto connection = readLe<uint32_t>(data, 0);
  if (connection != static_cast<uint32_t>(DeviceConnection::P2p))
    fail(QpcErrorCode::BadValue, "device_parts.connection", "value " + std::to_string(connection) + " is not defined");
  out_.connection = static_cast<DeviceConnection>(connection);
  if (readLe<uint32_t>(data, 4) != 0 || readLe<uint64_t>(data, 24) != 0)
    fail(QpcErrorCode::BadValue, "device_parts.reserved", "must be zero");

  // Byte ranges of the section's data area [entriesEnd, size): the config and the images.
  struct Range {
    uint64_t begin, end;
    std::string field;
  };
  std::vector<Range> ranges;
  auto claim = [&](uint64_t offset, uint64_t size, const std::string& field) {
    const uint64_t end = checkedAdd(offset, size, field);
    if (offset < entriesEnd || end > data.size()) {
      fail(QpcErrorCode::OutOfRange, field,
           "[" + std::to_string(offset) + ", " + std::to_string(end) + ") lies outside the section's data [" +
               std::to_string(entriesEnd) + ", " + std::to_string(data.size()) + ")");
    }
    ranges.push_back({offset, end, field});
  };

  const auto configOffset = readLe<uint64_t>(data, 8);
  const auto configSize = readLe<uint64_t>(data, 16);
  if (configSize == 0 || configSize > kMaxPartitionConfigBytes) {
    fail(QpcErrorCode::BadValue, "device_parts.partition_config_size",
         std::to_string(configSize) + " is not in [1, " + std::to_string(kMaxPartitionConfigBytes) + "]");
  }
  claim(configOffset, configSize, "device_parts.partition_config_offset");
  out_.partitionConfig.assign(reinterpret_cast<const char*>(data.data() + configOffset), configSize);
  if (out_.partitionConfig.find('\0') != std::string::npos)
    fail(QpcErrorCode::BadString, "device_parts.partition_config", "contains a NUL byte");

  std::map<uint32_t, uint32_t> slots;
  out_.deviceParts.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string field = "device_parts[" + std::to_string(i) + "]";
    const auto e = data.subspan(L::kPartsHeaderSize + std::size_t{i} * L::kPartEntrySize, L::kPartEntrySize);
    QpcDevicePart part;
    part.slot = readLe<uint32_t>(e, 0);
    if (auto [it, inserted] = slots.try_emplace(part.slot, i); !inserted) {
      fail(QpcErrorCode::BadValue, field + ".slot",
           "device " + std::to_string(part.slot) + " is listed twice (parts " + std::to_string(it->second) + " and " +
               std::to_string(i) + ")");
    }
    part.numCores = readLe<uint32_t>(e, 4);
    if (part.numCores < 1 || part.numCores > kMaxPartCores) {
      fail(QpcErrorCode::BadValue, field + ".num_cores",
           std::to_string(part.numCores) + " is not in [1, " + std::to_string(kMaxPartCores) + "]");
    }
    part.weightBytes = readLe<uint64_t>(e, 8);
    part.retainedBytes = readLe<uint64_t>(e, 16);
    part.sentBytes = readLe<uint64_t>(e, 24);
    part.receivedBytes = readLe<uint64_t>(e, 32);
    const auto imageOffset = readLe<uint64_t>(e, 40);
    const auto imageSize = readLe<uint64_t>(e, 48);
    if (readLe<uint64_t>(e, 56) != 0) fail(QpcErrorCode::BadValue, field + ".reserved", "must be zero");
    if (i == 0) {
      // Part 0 is the outer container itself.
      if (imageOffset != 0 || imageSize != 0)
        fail(QpcErrorCode::BadValue, field + ".image_offset", "part 0 is the container itself and has no image");
    } else {
      if (imageSize == 0) fail(QpcErrorCode::BadValue, field + ".image_size", "is 0; the part needs its container");
      if (imageOffset % kConstantAlignment != 0)
        fail(QpcErrorCode::BadValue, field + ".image_offset", std::to_string(imageOffset) + " is not 64-byte aligned");
      claim(imageOffset, imageSize, field + ".image_offset");
      part.image = data.subspan(imageOffset, imageSize);
    }
    out_.deviceParts.push_back(std::move(part));
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (std::size_t k = 1; k < ranges.size(); ++k) {
    if (ranges[k].begin < ranges[k - 1].end)
      fail(QpcErrorCode::Overlap, ranges[k].field, "overlaps " + ranges[k - 1].field);
  }
  // Each nested image only after every range is known to be apart: a damaged entry is reported
  // as itself, not as the nested image it cuts.
  for (uint32_t i = 1; i < n; ++i) readNestedImage(out_.deviceParts[i], "device_parts[" + std::to_string(i) + "]");
}

void Parser::readNestedImage(QpcDevicePart& part, const std::string& field) const {
  auto contents = std::make_shared<QpcContents>();
  const std::string source = source_ + ": " + field;
  try {
    Parser nested(part.image, source, *contents, kSingleDeviceFormatVersion);
    nested.run(verifyChecksum_);
  } catch (const QpcFormatError& e) {
    // The message already reads "<file>: device_parts[i]: <field>: <what>".
    throw QpcFormatError(e.code(), field + "." + e.field(), e.what());
  }
  part.contents = std::move(contents);
}

}  // namespace qaic::container::detail
