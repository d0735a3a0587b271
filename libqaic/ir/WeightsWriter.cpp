// SPDX-License-Identifier: Apache-2.0
// Writing a weights file: laid out in memory, written to a temporary file in the target's
// directory, synced, then renamed over the target so readers never see a partial file.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "ir/Weights.hpp"
#include "ir/WeightsFormat.hpp"

namespace qaic::ir {
namespace {

using namespace weights_format;

uint64_t alignUp(uint64_t value) { return (value + kAlignment - 1) / kAlignment * kAlignment; }

void checkTensor(const std::string& path, const WeightTensor& tensor) {
  const std::string where = path + ": weight '" + tensor.name + "': ";
  if (tensor.name.empty()) throw IrError(path + ": weight with an empty name");
  if (tensor.name.size() > UINT32_MAX) throw IrError(where + "name too long");
  if (tensor.dims.size() > kMaxDims) throw IrError(where + "rank exceeds 8");
  const auto expected = static_cast<uint64_t>(elementCount(tensor.dims)) * dtypeSize(tensor.dtype);
  if (tensor.data.size() != expected) {
    throw IrError(where + "data holds " + std::to_string(tensor.data.size()) + " bytes, dtype and dims need " +
                  std::to_string(expected));
  }
}

std::vector<std::byte> layOut(const std::string& path, std::span<const WeightTensor> tensors) {
  std::set<std::string_view> names;
  uint64_t cursor = sizeof(Header) + tensors.size() * sizeof(Entry);
  std::vector<Entry> entries(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    checkTensor(path, tensors[i]);
    if (!names.insert(tensors[i].name).second) {
      throw IrError(path + ": duplicate weight name '" + tensors[i].name + "'");
    }
    entries[i] = Entry{};
    entries[i].nameOffset = cursor;
    entries[i].nameLength = static_cast<uint32_t>(tensors[i].name.size());
    cursor += tensors[i].name.size();
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    Entry& entry = entries[i];
    entry.dtype = static_cast<uint8_t>(tensors[i].dtype);
    entry.rank = static_cast<uint8_t>(tensors[i].dims.size());
    for (std::size_t d = 0; d < tensors[i].dims.size(); ++d) entry.dims[d] = tensors[i].dims[d];
    cursor = alignUp(cursor);
    entry.dataOffset = cursor;
    entry.dataSize = tensors[i].data.size();
    cursor += entry.dataSize;
  }
  std::vector<std::byte> bytes(cursor);
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.version = kVersion;
  header.count = static_cast<uint32_t>(tensors.size());
  header.fileSize = cursor;
  std::memcpy(bytes.data(), &header, sizeof(header));
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    std::memcpy(bytes.data() + sizeof(Header) + i * sizeof(Entry), &entries[i], sizeof(Entry));
    std::memcpy(bytes.data() + entries[i].nameOffset, tensors[i].name.data(), tensors[i].name.size());
    if (!tensors[i].data.empty()) {
      std::memcpy(bytes.data() + entries[i].dataOffset, tensors[i].data.data(), tensors[i].data.size());
    }
  }
  return bytes;
}

void writeAll(int fd, const std::vector<std::byte>& bytes, const std::string& tempPath) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw IrError(tempPath + ": write failed: " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) throw IrError(tempPath + ": fsync failed: " + std::strerror(errno));
}

}  // namespace

void writeWeightsFile(const std::string& path, std::span<const WeightTensor> tensors) {
  if (tensors.size() > UINT32_MAX) throw IrError(path + ": too many weights");
  const std::vector<std::byte> bytes = layOut(path, tensors);
  std::string tempPath = path + ".tmp-XXXXXX";
  const int fd = ::mkstemp(tempPath.data());
  if (fd < 0) throw IrError(path + ": cannot create temporary file: " + std::strerror(errno));
  try {
    writeAll(fd, bytes, tempPath);
  } catch (...) {
    ::close(fd);
    ::unlink(tempPath.c_str());
    throw;
  }
  if (::close(fd) != 0 || ::rename(tempPath.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(tempPath.c_str());
    throw IrError(path + ": cannot write weights file: " + reason);
  }
}

}  // namespace qaic::ir
