// SPDX-License-Identifier: Apache-2.0
// Input and reference files, loaded when an IO set is submitted and kept in a byte-bounded LRU,
// so a batch JSON with thousands of IO sets runs in bounded memory. A file in use by an
// in-flight inference stays alive through its shared_ptr even after eviction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace qaic::runner {

using FileBytes = std::shared_ptr<const std::vector<uint8_t>>;

class FileCache {
 public:
  explicit FileCache(std::size_t capacityBytes) : capacity_(capacityBytes) {}
  // Throws std::runtime_error naming the file when it cannot be read whole.
  FileBytes load(const std::string& path);

 private:
  struct Entry {
    std::string path;
    FileBytes bytes;
  };
  std::mutex mutex_;
  std::size_t capacity_;
  std::size_t resident_ = 0;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace qaic::runner
