// SPDX-License-Identifier: Apache-2.0
#include "FileCache.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace qaic::runner {

FileBytes FileCache::load(const std::string& path) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(path); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->bytes;
    }
  }
  // A directory opens as a stream and fails only on the first read, with a message of the
  // stream's own; name it here instead.
  std::error_code kind;
  if (std::filesystem::is_directory(path, kind)) throw std::runtime_error("cannot read '" + path + "': a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open '" + path + "': " + std::strerror(errno));
  std::shared_ptr<std::vector<uint8_t>> bytes;
  try {
    bytes = std::make_shared<std::vector<uint8_t>>(std::istreambuf_iterator<char>(in),
                                                   std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure& e) {
    throw std::runtime_error("cannot read '" + path + "': " + e.what());
  }
  if (in.bad()) throw std::runtime_error("cannot read '" + path + "'");

  std::lock_guard lock(mutex_);
  if (auto it = index_.find(path); it != index_.end()) return it->second->bytes;  // another thread won
  lru_.push_front({path, bytes});
  index_[path] = lru_.begin();
  resident_ += bytes->size();
  while (resident_ > capacity_ && lru_.size() > 1) {
    resident_ -= lru_.back().bytes->size();
    index_.erase(lru_.back().path);
    lru_.pop_back();
  }
  return bytes;
}

}  // namespace qaic::runner
