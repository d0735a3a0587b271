#include "FileCache.hpp"

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
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open '" + path + "'");
  auto bytes = std::make_shared<std::vector<uint8_t>>(std::istreambuf_iterator<char>(in),
                                                      std::istreambuf_iterator<char>());
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
