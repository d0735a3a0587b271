// SPDX-License-Identifier: Apache-2.0
#include "kernels/format/DeviceFormat.hpp"

#include <cpuid.h>

#include <optional>
#include <string>

#include "kernels/DTypes.hpp"
#include "kernels/format/DwhcTilesAvx512.hpp"
#include "kernels/format/FormatWalk.hpp"
#include "kernels/format/VectorFormat.hpp"

namespace qaic::kernels {
namespace {

std::string describe(std::string_view name) {
  return name.empty() ? std::string("buffer") : "buffer '" + std::string(name) + "'";
}

void checkTypes(const UserBufferView& view, const ir::DeviceFormat& format) {
  if (!isUserType(view.dtype)) {
    throw FormatError(describe(view.name) + ": user dtype " + std::string(ir::dtypeName(view.dtype)) +
                      " has no device format conversion");
  }
  if (!isUserType(format.elementType)) {
    throw FormatError(describe(view.name) + ": device element type " + std::string(ir::dtypeName(format.elementType)) +
                      " is not supported");
  }
  if (view.layout == ir::UserLayout::NHWC && view.dims.size() != 4) {
    throw FormatError(describe(view.name) + ": NHWC user layout needs a rank-4 tensor, got rank " +
                      std::to_string(view.dims.size()));
  }
}

// Element count with overflow and sign checks (dims come from requests and files).
int64_t checkedCount(const ir::Dims& dims, std::string_view name) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) throw FormatError(describe(name) + ": negative dimension " + std::to_string(d));
    if (d != 0 && count > (int64_t{1} << 48) / d) throw FormatError(describe(name) + ": tensor too large");
    count *= d;
  }
  return count;
}

template <typename Src, typename Dst>
void convertWalk(const DeviceGeometry& g, ir::DeviceLayout layout, ir::UserLayout userLayout, const std::byte* src,
                 std::byte* dst, bool srcIsUser) {
  const Src* in = reinterpret_cast<const Src*>(src);
  Dst* out = reinterpret_cast<Dst*>(dst);
  if (srcIsUser) {
    format::walkElements(g, layout, userLayout,
                         [&](int64_t device, int64_t user) { out[device] = convertValue<Dst>(in[user]); });
  } else {
    format::walkElements(g, layout, userLayout,
                         [&](int64_t device, int64_t user) { out[user] = convertValue<Dst>(in[device]); });
  }
}

void convertScalar(const DeviceGeometry& g, ir::DeviceLayout layout, ir::UserLayout userLayout, ir::DType srcType,
                   const std::byte* src, ir::DType dstType, std::byte* dst, bool srcIsUser) {
  visitDType(srcType, [&](auto srcTag) {
    visitDType(dstType, [&](auto dstTag) {
      convertWalk<typename decltype(srcTag)::type, typename decltype(dstTag)::type>(g, layout, userLayout, src, dst,
                                                                                    srcIsUser);
    });
  });
}

// The vector kernels a path runs, or nothing for the scalar walk.
std::optional<format::VectorKernels> vectorKernels(ConversionPath path) {
  if (path == ConversionPath::Scalar) return std::nullopt;
  const bool avx2 = format::cpuHasF16cAvx2();
  const bool avx512 = avx2 && format::cpuHasAvx512();
  if (path != ConversionPath::Auto && !avx2) {
    throw FormatError("the vectorized device-format path needs a CPU with F16C and AVX2");
  }
  if (path == ConversionPath::Avx512 && !avx512) {
    throw FormatError("the AVX-512 device-format path needs a CPU with AVX-512 F, BW, VL and DQ");
  }
  if (!avx2) return std::nullopt;
  if (path == ConversionPath::Avx2) return format::VectorKernels::Avx2;
  if (path == ConversionPath::Avx512) return format::VectorKernels::Avx512;
  return avx512 ? format::VectorKernels::Best : format::VectorKernels::Avx2;
}

}  // namespace

bool isUserType(ir::DType t) {
  switch (t) {
    case ir::DType::Float:
    case ir::DType::Float16:
    case ir::DType::Int8:
    case ir::DType::UInt8:
    case ir::DType::Int16:
    case ir::DType::UInt16:
    case ir::DType::Int32:
    case ir::DType::Int64:
    case ir::DType::Bool:  // masks: one byte, 0 or 1 (anything nonzero converts to 1)
      return true;
    default: return false;
  }
}

bool vectorPathAvailable() { return format::cpuHasF16cAvx2(); }
bool avx512PathAvailable() { return format::cpuHasF16cAvx2() && format::cpuHasAvx512(); }

namespace format {
namespace {
bool detectF16cAvx2() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool f16c = c & (1u << 29), avx = c & (1u << 28), osxsave = c & (1u << 27);
  if (!(f16c && avx && osxsave)) return false;
  unsigned xcr0 = 0, xcr0High = 0;
  __asm__("xgetbv" : "=a"(xcr0), "=d"(xcr0High) : "c"(0));
  if ((xcr0 & 6u) != 6u) return false;  // the OS must save the YMM registers
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return b & (1u << 5);  // AVX2
}

// AVX-512 F/BW/VL/DQ, and the OS saving the opmask and ZMM state (XCR0 bits 5-7) besides SSE
// and AVX state: __builtin_cpu_supports reads only the CPUID feature bits.
bool detectAvx512() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE
  unsigned xcr0 = 0, xcr0High = 0;
  __asm__("xgetbv" : "=a"(xcr0), "=d"(xcr0High) : "c"(0));
  if ((xcr0 & 0xE6u) != 0xE6u) return false;
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
}  // namespace

bool cpuHasF16cAvx2() {
  static const bool has = detectF16cAvx2();
  return has;
}

bool cpuHasAvx512() {
  static const bool has = detectAvx512();
  return has;
}
}  // namespace format

DeviceGeometry deviceGeometry(const ir::Dims& dims, ir::DeviceLayout layout) {
  DeviceGeometry g;
  switch (dims.size()) {
    case 0: break;
    case 1: g.channels = dims[0]; break;
    case 2:
      g.depth = dims[0];
      g.channels = dims[1];
      break;
    case 3:
      g.depth = dims[0];
      g.channels = dims[1];
      g.width = dims[2];
      break;
    case 4:
      g.depth = dims[0];
      g.channels = dims[1];
      g.height = dims[2];
      g.width = dims[3];
      break;
    default:
      if (layout != ir::DeviceLayout::Flat) {
        throw FormatError("DWHC/DHWC device layouts take tensors of rank <= 4, got rank " +
                          std::to_string(dims.size()));
      }
      // Flat ignores the geometry's meaning: fold everything into one row.
      g.width = checkedCount(dims, {});
      return g;
  }
  checkedCount(dims, {});
  return g;
}

int64_t deviceElementOffset(const DeviceGeometry& g, ir::DeviceLayout layout, int64_t d, int64_t w, int64_t h,
                            int64_t c) {
  const int64_t C = g.channels, H = g.height, W = g.width;
  if (layout == ir::DeviceLayout::Flat) return ((d * C + c) * H + h) * W + w;
  const int64_t chunk = c / 8;
  const int64_t c8 = c % 8;
  const int64_t chunkChannels = chunk < C / 8 ? 8 : C % 8;
  const int64_t inChunk = layout == ir::DeviceLayout::DWHC ? w * (H * chunkChannels) + h * chunkChannels + c8
                                                           : h * (W * chunkChannels) + w * chunkChannels + c8;
  return d * (W * H * C) + chunk * (W * H * 8) + inChunk;
}

std::size_t userBufferBytes(const ir::Dims& dims, ir::DType dtype) {
  return static_cast<std::size_t>(checkedCount(dims, {})) * ir::dtypeSize(dtype);
}

std::size_t deviceBufferBytes(const ir::Dims& dims, const ir::DeviceFormat& format) {
  deviceGeometry(dims, format.layout);  // rejects ranks the layout cannot take
  return static_cast<std::size_t>(checkedCount(dims, {})) * ir::dtypeSize(format.elementType);
}

namespace {

// Checks the types and that both buffers hold what the tensor needs (the source first); the
// tensor's geometry, or nothing when it has no elements and there is nothing to convert.
std::optional<DeviceGeometry> checkConversion(const UserBufferView& view, std::size_t userSize,
                                              const ir::DeviceFormat& format, std::size_t deviceSize, bool toDevice) {
  checkTypes(view, format);
  const DeviceGeometry g = deviceGeometry(view.dims, format.layout);
  const std::size_t userBytes = userBufferBytes(view.dims, view.dtype);
  const std::size_t deviceBytes = deviceBufferBytes(view.dims, format);
  auto checkUser = [&] {
    if (userSize < userBytes)
      throw FormatError(describe(view.name) + ": user buffer holds " + std::to_string(userSize) +
                        " bytes, the tensor needs " + std::to_string(userBytes));
  };
  auto checkDevice = [&] {
    if (deviceSize < deviceBytes)
      throw FormatError(describe(view.name) + ": device buffer holds " + std::to_string(deviceSize) +
                        " bytes, the device format needs " + std::to_string(deviceBytes));
  };
  toDevice ? checkUser() : checkDevice();
  toDevice ? checkDevice() : checkUser();
  if (userBytes == 0) return std::nullopt;
  return g;
}

}  // namespace

void userToDevice(const UserBufferView& view, std::span<const std::byte> user, const ir::DeviceFormat& format,
                  std::span<std::byte> device, ConversionPath path) {
  const auto g = checkConversion(view, user.size(), format, device.size(), true);
  if (!g) return;
  const auto kernels = vectorKernels(path);
  if (kernels && format::userToDeviceVector(*g, format.layout, view.layout, view.dtype, user.data(), format.elementType,
                                            device.data(), *kernels)) {
    return;
  }
  convertScalar(*g, format.layout, view.layout, view.dtype, user.data(), format.elementType, device.data(), true);
}

void deviceToUser(const ir::DeviceFormat& format, std::span<const std::byte> device, const UserBufferView& view,
                  std::span<std::byte> user, ConversionPath path) {
  const auto g = checkConversion(view, user.size(), format, device.size(), false);
  if (!g) return;
  const auto kernels = vectorKernels(path);
  if (kernels && format::deviceToUserVector(*g, format.layout, format.elementType, device.data(), view.layout,
                                            view.dtype, user.data(), *kernels)) {
    return;
  }
  convertScalar(*g, format.layout, view.layout, format.elementType, device.data(), view.dtype, user.data(), false);
}

}  // namespace qaic::kernels
