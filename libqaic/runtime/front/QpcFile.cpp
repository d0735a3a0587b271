// SPDX-License-Identifier: Apache-2.0
#include <qaic/Qpc.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace qaic::rt {

QpcFile::QpcFile(std::string basePath, std::string filename)
    : basePath_(std::move(basePath)), filename_(std::move(filename)) {}

QpcFile::~QpcFile() = default;

std::string QpcFile::path() const { return basePath_.empty() ? filename_ : basePath_ + "/" + filename_; }

void QpcFile::load() {
  const std::string file = path();
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in) throw QpcError(QpcError::Code::Io, file + ": cannot open: " + std::strerror(errno));
  const std::streamoff length = in.tellg();
  if (length < 0) throw QpcError(QpcError::Code::Io, file + ": cannot determine the size");
  std::vector<uint8_t> bytes(static_cast<std::size_t>(length));
  in.seekg(0);
  if (length > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), length)) {
    throw QpcError(QpcError::Code::Io, file + ": read failed");
  }
  storage_ = std::move(bytes);
  buffer_.data = storage_.data();
  buffer_.size = storage_.size();
}

}  // namespace qaic::rt
