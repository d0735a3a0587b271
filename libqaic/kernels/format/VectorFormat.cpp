// Built with -mf16c -mavx2 (see CMakeLists.txt); nothing here runs unless cpuHasF16cAvx2().
// Covered: user float <-> device float16 / float, every layout. Rows of up to eight channels are
// moved as 8x8 tiles (eight W positions by eight channels) so that loads and stores stay
// contiguous on both sides whatever the layout pair.
#include <immintrin.h>

#include <cstring>

#include "kernels/format/VectorFormat.hpp"

namespace qaic::kernels::format {
namespace {

using ir::DeviceLayout;
using ir::DType;
using ir::UserLayout;

inline void transpose8x8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]);
  const __m256 t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]);
  const __m256 t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]);
  const __m256 t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]);
  const __m256 t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

inline __m256 loadFloats(const float* p, int64_t n) {
  if (n == 8) return _mm256_loadu_ps(p);
  alignas(32) float tmp[8] = {};
  std::memcpy(tmp, p, static_cast<std::size_t>(n) * sizeof(float));
  return _mm256_load_ps(tmp);
}

inline void storeFloats(float* p, __m256 v, int64_t n) {
  if (n == 8) return _mm256_storeu_ps(p, v);
  alignas(32) float tmp[8];
  _mm256_store_ps(tmp, v);
  std::memcpy(p, tmp, static_cast<std::size_t>(n) * sizeof(float));
}

// Device elements: float16 (IEEE, round to nearest even) or float.
template <bool kHalf>
struct DeviceIo {
  using Element = std::conditional_t<kHalf, uint16_t, float>;
  static __m256 load(const Element* p, int64_t n) {
    if constexpr (kHalf) {
      if (n == 8) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
      alignas(16) uint16_t tmp[8] = {};
      std::memcpy(tmp, p, static_cast<std::size_t>(n) * sizeof(uint16_t));
      return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(tmp)));
    } else {
      return loadFloats(p, n);
    }
  }
  static void store(Element* p, __m256 v, int64_t n) {
    if constexpr (kHalf) {
      const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
      if (n == 8) return _mm_storeu_si128(reinterpret_cast<__m128i*>(p), h);
      alignas(16) uint16_t tmp[8];
      _mm_store_si128(reinterpret_cast<__m128i*>(tmp), h);
      std::memcpy(p, tmp, static_cast<std::size_t>(n) * sizeof(uint16_t));
    } else {
      storeFloats(p, v, n);
    }
  }
};

// Offset of the first channel of a chunk's pixel (w, h) (see DeviceFormat.hpp).
struct ChunkAddress {
  int64_t base;     // start of the chunk
  int64_t wStride;  // elements between neighbouring w
  int64_t hStride;  // elements between neighbouring h
};

inline ChunkAddress chunkAddress(const DeviceGeometry& g, DeviceLayout layout, int64_t d, int64_t c0) {
  const int64_t C = g.channels, H = g.height, W = g.width;
  const int64_t chunk = C - c0 < 8 ? C - c0 : 8;
  const int64_t base = d * (W * H * C) + (c0 / 8) * (W * H * 8);
  if (layout == DeviceLayout::DWHC) return {base, H * chunk, chunk};
  return {base, chunk, W * chunk};
}

template <bool kHalf, bool kToDevice>
void contiguous(const DeviceGeometry& g, float* user, typename DeviceIo<kHalf>::Element* device) {
  const int64_t total = g.depth * g.channels * g.height * g.width;
  int64_t i = 0;
  for (; i < total; i += 8) {
    const int64_t n = total - i < 8 ? total - i : 8;
    if constexpr (kToDevice) {
      DeviceIo<kHalf>::store(device + i, loadFloats(user + i, n), n);
    } else {
      storeFloats(user + i, DeviceIo<kHalf>::load(device + i, n), n);
    }
  }
}

// User NCHW against a chunked layout: eight W positions of up to eight channel planes at a time.
// A pixel of fewer than eight channels is still moved as a whole vector when the surplus lanes
// stay inside its own row (DHWC) or column (DWHC): on a store they land on pixels that this loop
// order writes later, on a load they are ignored. Only a row's or column's tail needs the
// slower partial access.
template <bool kHalf, bool kToDevice>
void planar(const DeviceGeometry& g, DeviceLayout layout, float* user,
            typename DeviceIo<kHalf>::Element* device) {
  const int64_t C = g.channels, H = g.height, W = g.width;
  const __m256 zero = _mm256_setzero_ps();
  const bool wMajor = layout == DeviceLayout::DWHC;
  for (int64_t d = 0; d < g.depth; ++d) {
    for (int64_t c0 = 0; c0 < C; c0 += 8) {
      const int64_t chunk = C - c0 < 8 ? C - c0 : 8;
      const ChunkAddress a = chunkAddress(g, layout, d, c0);
      const int64_t line = (wMajor ? H : W) * chunk;  // elements in one column (DWHC) or row (DHWC)
      float* plane = user + (d * C + c0) * H * W;
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t w0 = 0; w0 < W; w0 += 8) {
          const int64_t n = W - w0 < 8 ? W - w0 : 8;
          __m256 r[8];
          auto* pixel = device + a.base + h * a.hStride + w0 * a.wStride;
          auto width = [&](int64_t j) {  // elements that may be touched at pixel j
            const int64_t inLine = wMajor ? h * chunk : (w0 + j) * chunk;
            return inLine + 8 <= line ? 8 : chunk;
          };
          if constexpr (kToDevice) {
            for (int64_t c = 0; c < 8; ++c) r[c] = c < chunk ? loadFloats(plane + (c * H + h) * W + w0, n) : zero;
            transpose8x8(r);  // r[j] = the chunk's channels at w0 + j
            for (int64_t j = 0; j < n; ++j) DeviceIo<kHalf>::store(pixel + j * a.wStride, r[j], width(j));
          } else {
            for (int64_t j = 0; j < 8; ++j) r[j] = j < n ? DeviceIo<kHalf>::load(pixel + j * a.wStride, width(j)) : zero;
            transpose8x8(r);  // r[c] = channel c at w0 .. w0 + 7
            for (int64_t c = 0; c < chunk; ++c) storeFloats(plane + (c * H + h) * W + w0, r[c], n);
          }
        }
      }
    }
  }
}

// User NHWC against a chunked layout: each pixel's chunk of channels is contiguous on both sides.
template <bool kHalf, bool kToDevice>
void interleaved(const DeviceGeometry& g, DeviceLayout layout, float* user,
                 typename DeviceIo<kHalf>::Element* device) {
  const int64_t C = g.channels, H = g.height, W = g.width;
  for (int64_t d = 0; d < g.depth; ++d) {
    for (int64_t c0 = 0; c0 < C; c0 += 8) {
      const int64_t chunk = C - c0 < 8 ? C - c0 : 8;
      const ChunkAddress a = chunkAddress(g, layout, d, c0);
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t w = 0; w < W; ++w) {
          float* u = user + ((d * H + h) * W + w) * C + c0;
          auto* p = device + a.base + h * a.hStride + w * a.wStride;
          if constexpr (kToDevice) {
            DeviceIo<kHalf>::store(p, loadFloats(u, chunk), chunk);
          } else {
            storeFloats(u, DeviceIo<kHalf>::load(p, chunk), chunk);
          }
        }
      }
    }
  }
}

template <bool kHalf, bool kToDevice>
bool convert(const DeviceGeometry& g, DeviceLayout layout, UserLayout userLayout, float* user, void* deviceBytes) {
  auto* device = static_cast<typename DeviceIo<kHalf>::Element*>(deviceBytes);
  const bool sameOrder = (layout == DeviceLayout::Flat && userLayout == UserLayout::NCHW) ||
                         (layout == DeviceLayout::DHWC && userLayout == UserLayout::NHWC && g.channels <= 8);
  if (sameOrder) {
    contiguous<kHalf, kToDevice>(g, user, device);
  } else if (layout == DeviceLayout::Flat) {
    return false;  // NHWC user buffer into a flat NCHW tensor: the scalar walk handles it
  } else if (userLayout == UserLayout::NCHW) {
    planar<kHalf, kToDevice>(g, layout, user, device);
  } else {
    interleaved<kHalf, kToDevice>(g, layout, user, device);
  }
  return true;
}

}  // namespace

bool userToDeviceVector(const DeviceGeometry& g, DeviceLayout layout, UserLayout userLayout, DType userType,
                        const std::byte* user, DType deviceType, std::byte* device) {
  if (userType != DType::Float) return false;
  // The user side is only read; the shared helpers take a mutable pointer for both directions.
  float* in = const_cast<float*>(reinterpret_cast<const float*>(user));
  if (deviceType == DType::Float16) return convert<true, true>(g, layout, userLayout, in, device);
  if (deviceType == DType::Float) return convert<false, true>(g, layout, userLayout, in, device);
  return false;
}

bool deviceToUserVector(const DeviceGeometry& g, DeviceLayout layout, DType deviceType, const std::byte* device,
                        UserLayout userLayout, DType userType, std::byte* user) {
  if (userType != DType::Float) return false;
  float* out = reinterpret_cast<float*>(user);
  void* in = const_cast<std::byte*>(device);
  if (deviceType == DType::Float16) return convert<true, false>(g, layout, userLayout, out, in);
  if (deviceType == DType::Float) return convert<false, false>(g, layout, userLayout, out, in);
  return false;
}

}  // namespace qaic::kernels::format
