#include "TempDir.hpp"

#include <stdlib.h>

#include <fstream>
#include <stdexcept>

namespace qaic::driver::test {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "qaic-driver-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void TempDir::writeFile(const std::filesystem::path& relative, const std::string& text) const {
  const auto full = path_ / relative;
  std::filesystem::create_directories(full.parent_path());
  std::ofstream out(full, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("write " + full.string());
}

}  // namespace qaic::driver::test
