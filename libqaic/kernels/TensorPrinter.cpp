// SPDX-License-Identifier: Apache-2.0
#include "kernels/TensorPrinter.hpp"

#include <cinttypes>
#include <cstdio>

#include "kernels/DTypes.hpp"

namespace qaic::kernels {
namespace {

template <typename T>
void appendElement(std::string& out, T v) {
  char buf[64];
  int n;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Half>) {
    n = std::snprintf(buf, sizeof buf, "%.3f", toDouble(v));
  } else if constexpr (std::is_same_v<T, Bool8>) {
    n = std::snprintf(buf, sizeof buf, "%d", static_cast<int>(v.value));
  } else if constexpr (std::is_same_v<T, int64_t>) {
    n = std::snprintf(buf, sizeof buf, "%" PRId64, v);
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    n = std::snprintf(buf, sizeof buf, "%" PRIu64, v);
  } else if constexpr (std::is_signed_v<T>) {
    n = std::snprintf(buf, sizeof buf, "%d", static_cast<int>(v));
  } else {
    n = std::snprintf(buf, sizeof buf, "%u", static_cast<unsigned>(v));
  }
  // %.3f of a huge double can exceed the buffer; snprintf truncates, so clamp the length.
  out.append(buf, static_cast<std::size_t>(std::min<int>(n, static_cast<int>(sizeof buf) - 1)));
}

}  // namespace

std::string formatTensor(ir::DType dtype, const ir::Dims& dims, const void* data) {
  std::string out;
  const std::size_t rank = dims.size();
  const int64_t total = ir::elementCount(dims);
  out.append(rank, '[');
  std::vector<int64_t> index(rank, 0);
  visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* values = static_cast<const T*>(data);
    for (int64_t i = 0; i < total; ++i) {
      appendElement(out, values[i]);
      if (i + 1 == total) break;
      // How many dimensions close after this element: advance the odometer and count carries.
      std::size_t closing = 0;
      for (std::size_t axis = rank; axis-- > 0;) {
        if (++index[axis] < dims[axis]) break;
        index[axis] = 0;
        ++closing;
      }
      if (closing == 0) {
        out += ' ';
      } else {
        out.append(closing, ']');
        out += '\n';
        out.append(rank - closing, ' ');
        out.append(closing, '[');
      }
    }
  });
  out.append(rank, ']');
  out += '\n';
  return out;
}

}  // namespace qaic::kernels
