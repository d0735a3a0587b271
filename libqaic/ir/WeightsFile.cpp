// SPDX-License-Identifier: Apache-2.0
// Opening a weights file: map it read-only, then trust nothing in it until every count, offset
// and size has been checked against the file length (with overflow checks).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "ir/Weights.hpp"
#include "ir/WeightsFormat.hpp"

namespace qaic::ir {
namespace {

using namespace weights_format;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

[[noreturn]] void corrupt(const std::string& path, const std::string& detail) {
  throw IrError(path + ": corrupt weights file: " + detail);
}

bool fitsIn(uint64_t offset, uint64_t size, uint64_t limit) {
  uint64_t end = 0;
  return !__builtin_add_overflow(offset, size, &end) && end <= limit;
}

struct Range {
  uint64_t begin, end;
  std::size_t entry;
};

WeightTensor decodeEntry(const std::string& path, const std::byte* base, uint64_t fileSize, uint64_t tableEnd,
                         std::size_t index, Range& range) {
  Entry entry;
  std::memcpy(&entry, base + sizeof(Header) + index * sizeof(Entry), sizeof(Entry));
  const std::string where = "entry " + std::to_string(index) + ": ";
  if (entry.nameLength == 0) corrupt(path, where + "empty name");
  if (entry.nameOffset < tableEnd || !fitsIn(entry.nameOffset, entry.nameLength, fileSize)) {
    corrupt(path, where + "name outside the file");
  }
  WeightTensor tensor;
  tensor.name.assign(reinterpret_cast<const char*>(base + entry.nameOffset), entry.nameLength);
  const std::string named = where + "'" + tensor.name + "': ";
  if (entry.dtype > static_cast<uint8_t>(DType::Bool)) {
    corrupt(path, named + "unknown dtype code " + std::to_string(entry.dtype));
  }
  tensor.dtype = static_cast<DType>(entry.dtype);
  if (entry.rank > kMaxDims) corrupt(path, named + "rank " + std::to_string(entry.rank) + " > 8");
  uint64_t bytes = dtypeSize(tensor.dtype);
  for (std::size_t d = 0; d < kMaxDims; ++d) {
    if (d >= entry.rank) {
      if (entry.dims[d] != 0) corrupt(path, named + "nonzero dim beyond rank");
      continue;
    }
    if (entry.dims[d] < 0) corrupt(path, named + "negative dim");
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(entry.dims[d]), &bytes)) {
      corrupt(path, named + "size overflows");
    }
    tensor.dims.push_back(entry.dims[d]);
  }
  if (entry.dataSize != bytes) {
    corrupt(path, named + "data size " + std::to_string(entry.dataSize) + " != " + std::to_string(bytes) +
                      " for its dtype and dims");
  }
  if (entry.dataOffset % kAlignment != 0) corrupt(path, named + "data offset not 64-byte aligned");
  if (entry.dataOffset < tableEnd || !fitsIn(entry.dataOffset, entry.dataSize, fileSize)) {
    corrupt(path, named + "data offset " + std::to_string(entry.dataOffset) + " + size " +
                      std::to_string(entry.dataSize) + " outside the file (" + std::to_string(fileSize) + " bytes)");
  }
  tensor.data = {base + entry.dataOffset, static_cast<std::size_t>(entry.dataSize)};
  range = {entry.dataOffset, entry.dataOffset + entry.dataSize, index};
  return tensor;
}

std::vector<WeightTensor> decode(const std::string& path, const std::byte* base, uint64_t fileSize) {
  Header header;
  std::memcpy(&header, base, sizeof(Header));
  if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0) corrupt(path, "bad magic");
  if (header.version != kVersion) {
    corrupt(path, "unsupported version " + std::to_string(header.version));
  }
  if (header.fileSize != fileSize) {
    corrupt(path, "header says " + std::to_string(header.fileSize) + " bytes, file has " + std::to_string(fileSize) +
                      " (truncated?)");
  }
  if (header.count > (fileSize - sizeof(Header)) / sizeof(Entry)) {
    corrupt(path, "entry count " + std::to_string(header.count) + " does not fit the file");
  }
  const uint64_t tableEnd = sizeof(Header) + uint64_t{header.count} * sizeof(Entry);
  std::vector<WeightTensor> tensors;
  std::vector<Range> ranges;
  std::set<std::string> names;
  for (std::size_t i = 0; i < header.count; ++i) {
    Range range{};
    tensors.push_back(decodeEntry(path, base, fileSize, tableEnd, i, range));
    if (!names.insert(tensors.back().name).second) {
      corrupt(path, "duplicate tensor name '" + tensors.back().name + "'");
    }
    if (range.end > range.begin) ranges.push_back(range);
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].begin < ranges[i - 1].end) {
      corrupt(path,
              "data of '" + tensors[ranges[i].entry].name + "' overlaps '" + tensors[ranges[i - 1].entry].name + "'");
    }
  }
  return tensors;
}

}  // namespace

std::unique_ptr<WeightsFile> WeightsFile::open(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw IrError(path + ": cannot open weights file: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw IrError(path + ": not a regular file");
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < sizeof(Header)) {
    corrupt(path, "file of " + std::to_string(size) + " bytes is shorter than the header");
  }
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (mapping == MAP_FAILED) throw IrError(path + ": mmap failed: " + std::strerror(errno));
  std::unique_ptr<WeightsFile> file(new WeightsFile());
  file->mapping_ = mapping;
  file->mappingSize_ = size;
  file->tensors_ = decode(path, static_cast<const std::byte*>(mapping), size);
  return file;
}

WeightsFile::~WeightsFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, mappingSize_);
}

const WeightTensor* WeightsFile::find(std::string_view name) const {
  for (const auto& tensor : tensors_) {
    if (tensor.name == name) return &tensor;
  }
  return nullptr;
}

}  // namespace qaic::ir
