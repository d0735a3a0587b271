// SPDX-License-Identifier: Apache-2.0
// The bytes of an imported tensor: owned (a small constant the importer decoded or folding
// computed) or a read-only view into a mapping of an external data file, kept alive by shared
// ownership. A 13 GB model then costs page cache, not heap, and copying a tensor copies no data.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace qaic::onnx {

class TensorBytes {
 public:
  TensorBytes() = default;
  TensorBytes(std::vector<std::byte> owned) : owned_(std::move(owned)) {}  // NOLINT: implicit on purpose

  // Views `bytes`, which `keeper` keeps valid (the mapping they lie in).
  static TensorBytes view(std::span<const std::byte> bytes, std::shared_ptr<const void> keeper) {
    TensorBytes t;
    t.view_ = bytes;
    t.keeper_ = std::move(keeper);
    return t;
  }

  bool isView() const { return keeper_ != nullptr; }
  const std::byte* data() const { return isView() ? view_.data() : owned_.data(); }
  std::size_t size() const { return isView() ? view_.size() : owned_.size(); }
  bool empty() const { return size() == 0; }
  const std::byte* begin() const { return data(); }
  const std::byte* end() const { return data() + size(); }
  std::byte operator[](std::size_t i) const { return data()[i]; }
  operator std::span<const std::byte>() const { return {data(), size()}; }  // NOLINT: implicit on purpose

  friend bool operator==(const TensorBytes& a, const TensorBytes& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

  // Writable bytes: a view is first copied into owned storage (only small constants are ever
  // written to; a weight is read only).
  std::byte* mutableData() {
    if (isView()) *this = TensorBytes(std::vector<std::byte>(begin(), end()));
    return owned_.data();
  }
  void resize(std::size_t size) {
    mutableData();
    owned_.resize(size);
  }
  void clear() { *this = TensorBytes(); }

 private:
  std::vector<std::byte> owned_;
  std::span<const std::byte> view_;
  std::shared_ptr<const void> keeper_;
};

}  // namespace qaic::onnx
