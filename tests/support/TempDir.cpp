// SPDX-License-Identifier: Apache-2.0
#include "TempDir.hpp"

#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace qaic::testing {

TempDir::TempDir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp " + pattern + ": " + std::strerror(errno));
  path_ = pattern;
}

TempDir::~TempDir() {
  ::umount2(path_.c_str(), MNT_DETACH);  // EINVAL when nothing is mounted there
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void TempDir::setMode(mode_t mode) const {
  if (::chmod(path_.c_str(), mode) != 0)
    throw std::runtime_error("chmod " + path_.string() + ": " + std::strerror(errno));
}

std::filesystem::path TempDir::writeFile(const std::filesystem::path& relative, const std::string& text) const {
  const auto full = path_ / relative;
  std::filesystem::create_directories(full.parent_path());
  std::ofstream out(full, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("write " + full.string());
  return full;
}

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace qaic::testing
