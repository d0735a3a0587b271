// SPDX-License-Identifier: Apache-2.0
#include "container/QpcImage.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "container/Checksum.hpp"
#include "container/QpcParser.hpp"

namespace qaic::container {

namespace {

[[noreturn]] void ioError(const std::string& path, const std::string& what) {
  throw QpcFormatError(QpcErrorCode::Io, "file", path + ": " + what + ": " + std::strerror(errno));
}

}  // namespace

std::unique_ptr<QpcImage> QpcImage::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) ioError(path, "cannot open program container");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int saved = errno;
    ::close(fd);
    errno = saved;
    ioError(path, "cannot stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw QpcFormatError(QpcErrorCode::Io, "file", path + ": not a regular file");
  }
  std::unique_ptr<QpcImage> image(new QpcImage());
  image->sourceName_ = path;
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size > 0) {
    void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      int saved = errno;
      ::close(fd);
      errno = saved;
      ioError(path, "cannot map");
    }
    image->mapping_ = mapping;
    image->mappingSize_ = size;
    image->bytes_ = {static_cast<const std::byte*>(mapping), size};
  }
  // A large container is mostly constants, often sparse: its holes are checksummed without
  // being read (docs/formats/qpc.md, "Large containers").
  std::optional<uint32_t> bodyCrc;
  if (size >= kChecksummedFrom) bodyCrc = crcOfFileFrom(fd, image->bytes_, kChecksummedFrom);
  ::close(fd);  // the mapping keeps the file alive
  image->parse(true, bodyCrc);
  return image;
}

std::unique_ptr<QpcImage> QpcImage::fromBytes(std::span<const std::byte> bytes, std::string sourceName,
                                              bool verifyChecksum, std::optional<uint32_t> knownBodyCrc) {
  std::unique_ptr<QpcImage> image(new QpcImage());
  image->sourceName_ = std::move(sourceName);
  image->bytes_ = bytes;
  image->parse(verifyChecksum, knownBodyCrc);
  return image;
}

QpcImage::~QpcImage() {
  if (mapping_ != nullptr) ::munmap(mapping_, mappingSize_);
}

std::vector<ir::ShapeCombination> QpcImage::allShapeCombinations() const {
  std::vector<ir::ShapeCombination> all;
  all.reserve(contents_.allowedShapes.size() + 1);
  ir::ShapeCombination full;
  for (const auto& buffer : contents_.buffers) full.push_back(buffer.io.dims);
  all.push_back(std::move(full));
  all.insert(all.end(), contents_.allowedShapes.begin(), contents_.allowedShapes.end());
  return all;
}

const QpcBuffer* QpcImage::findBuffer(std::string_view bufferName) const {
  for (const auto& buffer : contents_.buffers) {
    if (buffer.io.bufferName == bufferName) return &buffer;
  }
  return nullptr;
}

const QpcConstant* QpcImage::findConstant(std::string_view tensorName) const {
  for (const auto& constant : contents_.constants) {
    if (constant.tensor.name == tensorName) return &constant;
  }
  return nullptr;
}

void QpcImage::parse(bool verifyChecksum, std::optional<uint32_t> knownBodyCrc) {
  detail::Parser parser(bytes_, sourceName_, contents_);
  ioDescriptor_ = parser.run(verifyChecksum, knownBodyCrc);
}

std::string_view QpcImage::payloadText(const QpcProgram& program) {
  return {reinterpret_cast<const char*>(program.payload.data()), program.payload.size()};
}

const QpcRetainedState* QpcImage::findRetained(std::string_view bufferName) const {
  for (const auto& r : contents_.retainedState)
    if (r.name == bufferName || r.stateName == bufferName) return &r;
  return nullptr;
}

std::span<const std::byte> QpcImage::payloadFor(const QpcProgram& program, uint32_t combination) const {
  for (const auto& s : contents_.specializationPayloads)
    if (s.programIndex == program.programIndex && s.combination == combination) return s.payload;
  return program.payload;
}

}  // namespace qaic::container
