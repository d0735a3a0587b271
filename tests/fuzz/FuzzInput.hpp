// SPDX-License-Identifier: Apache-2.0
// Reading and writing the structured byte inputs of the fuzz targets that build calls from
// their input (emu_ioctl, kubelet_service): fields are read in order, and reading past the end
// yields zeros, so every prefix of an input is itself a valid input and libFuzzer's mutations
// never "misparse". The writer builds the same format for the seed generators.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace qaic::fuzz {

class InputReader {
 public:
  InputReader(const uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  void bytes(void* out, std::size_t n) {
    if (n == 0) return;
    const std::size_t have = pos_ < size_ ? std::min(n, size_ - pos_) : 0;
    if (have) std::memcpy(out, data_ + pos_, have);
    std::memset(static_cast<uint8_t*>(out) + have, 0, n - have);
    pos_ += have;
  }
  template <typename T>
  T take() {
    T v;
    bytes(&v, sizeof v);
    return v;
  }
  uint8_t u8() { return take<uint8_t>(); }
  uint16_t u16() { return take<uint16_t>(); }
  uint32_t u32() { return take<uint32_t>(); }
  uint64_t u64() { return take<uint64_t>(); }
  // A string of `n` bytes (only what is left of the input: no zero padding).
  std::string text(std::size_t n) {
    const std::size_t have = pos_ < size_ ? std::min(n, size_ - pos_) : 0;
    std::string s(reinterpret_cast<const char*>(data_ + pos_), have);
    pos_ += have;
    return s;
  }

 private:
  const uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// The writer's fields, each returning the derived writer so that a target's own fields chain.
template <typename Derived>
class InputWriterBase {
 public:
  template <typename Enum>
  requires std::is_enum_v<Enum> Derived& op(Enum o) { return u8(static_cast<uint8_t>(o)); }
  Derived& bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
    return static_cast<Derived&>(*this);
  }
  template <typename T>
  Derived& put(const T& v) {
    return bytes(&v, sizeof v);
  }
  Derived& u8(uint8_t v) { return put(v); }
  Derived& u16(uint16_t v) { return put(v); }
  Derived& u32(uint32_t v) { return put(v); }
  Derived& u64(uint64_t v) { return put(v); }
  const std::vector<uint8_t>& data() const { return out_; }

 private:
  std::vector<uint8_t> out_;
};

}  // namespace qaic::fuzz
