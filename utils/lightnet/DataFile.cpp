// SPDX-License-Identifier: Apache-2.0
#include "DataFile.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace qaic::lightnet {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 28;  // a text file of more is not a data file

class Reader {
 public:
  Reader(std::istream& in, const std::string& source) : in_(in), source_(source) {}

  std::string word(const std::string& what) {
    std::string w;
    if (!(in_ >> w)) fail("expected " + what + ", the file ends");
    return w;
  }
  int64_t decimal(const std::string& what, int64_t max) {
    const std::string w = word(what);
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(w.c_str(), &end, 10);
    if (errno || *end || w.empty() || v < 0 || v > max)
      fail(what + " '" + w + "' is not a number in 0.." + std::to_string(max));
    return v;
  }
  uint32_t hex(const std::string& what) {
    const std::string w = word(what);
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(w.c_str(), &end, 16);
    if (errno || *end || w.empty() || w[0] == '-' || v > 0xFFFFFFFFull)
      fail(what + " '" + w + "' is not a 32-bit hex word");
    return static_cast<uint32_t>(v);
  }
  [[noreturn]] void fail(const std::string& detail) const { throw DataFileError(source_ + ": " + detail); }

 private:
  std::istream& in_;
  const std::string& source_;
};

}  // namespace

std::vector<DataTensor> parseDataFile(std::istream& in, const std::string& sourceName) {
  Reader r(in, sourceName);
  const int64_t count = r.decimal("tensor count", 1 << 20);
  std::vector<DataTensor> tensors;
  for (int64_t t = 0; t < count; ++t) {
    DataTensor d;
    d.name = r.word("tensor name");
    const int64_t type = r.decimal("type of tensor '" + d.name + "'", 255);
    if (type == 0) {
      d.dtype = ir::DType::Float;
    } else if (type == 2) {
      d.dtype = ir::DType::Int8;
    } else {
      r.fail("tensor '" + d.name + "': type " + std::to_string(type) + " is not 0 (float) or 2 (int8)");
    }
    d.length = r.decimal("length of tensor '" + d.name + "'", kMaxElements);
    d.data.resize(static_cast<std::size_t>(d.length) * ir::dtypeSize(d.dtype));
    for (int64_t i = 0; i < d.length; ++i) {
      const uint32_t word = r.hex("word " + std::to_string(i) + " of tensor '" + d.name + "'");
      if (d.dtype == ir::DType::Float) {
        std::memcpy(d.data.data() + i * 4, &word, 4);
      } else {
        d.data[static_cast<std::size_t>(i)] = static_cast<std::byte>(word & 0xFFu);
      }
    }
    tensors.push_back(std::move(d));
  }
  std::string extra;
  if (in >> extra) r.fail("unexpected '" + extra + "' after " + std::to_string(count) + " tensors");
  return tensors;
}

}  // namespace qaic::lightnet
