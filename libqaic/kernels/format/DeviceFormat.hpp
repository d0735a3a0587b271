// SPDX-License-Identifier: Apache-2.0
// Device formats (seed 003): sizes and conversions between a user buffer and the device's native
// layout and precision. libqaic's preprocess (user -> device), postprocess (device -> user) and
// the emulated NSP (which reads inputs and writes outputs in these formats) all call these.
//
// Geometry. A tensor's logical dims are always the network's (NCHW for images). Seed 003 speaks
// of (D, W, H, C); the mapping is:
//   rank 4 [N, C, H, W] -> D = N (the batch is the depth), C, H, W
//   rank 3 [N, C, L]    -> D = N, C, H = 1, W = L (1-D data with channels: a row of an image)
//   rank 2 [N, C]       -> D = N, C, H = W = 1
//   rank 1 [C]          -> D = 1, C, H = W = 1
//   rank 0              -> one element (D = C = H = W = 1)
// Lower ranks are the rank-4 case with the missing spatial axes of size 1, the axes PyTorch's
// Conv1d / the ONNX importer's 1-D convolution use ([N, C, L] runs as [N, C, 1, L]). With one
// spatial axis of size 1, DWHC and DHWC give the same offsets, so L could equally be H.
// DWHC / DHWC of a tensor of rank > 4 is an error; Flat takes any rank.
//
// Offsets (in elements of the device element type; bytes = offset * element size), with
// chunk = c / 8, c8 = c % 8, C_ = 8 if chunk < C / 8 else C % 8:
//   DWHC: d*(W*H*C) + chunk*(W*H*8) + w*(H*C_) + h*C_ + c8
//   DHWC: d*(W*H*C) + chunk*(W*H*8) + h*(W*C_) + w*C_ + c8
//   Flat: the row-major (logical NCHW) index.
// For C <= 8 these are seed 003's first formulas; for C > 8 its chunked ones, with depth slices
// of W*H*C elements one after another.
//
// User buffers: UserLayout::NCHW is the logical row-major order; UserLayout::NHWC (rank 4 only)
// stores [N, H, W, C]. Element conversions go through float: float16 is IEEE binary16 (round to
// nearest even), integers convert to float exactly as static_cast<float> does, and float to an
// integer type truncates toward zero and saturates (NaN -> 0). A conversion between the same
// types copies (int64 token ids stay exact); TL_BOOL is one byte, zero false and any other value
// true (a conversion from another type writes 1).
//
// Every function throws FormatError (naming the buffer and what is wrong) for an unsupported
// dtype, a wrong rank or a buffer smaller than the format needs; nothing is written then.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "ir/Graph.hpp"

namespace qaic::kernels {

class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Seed 003's view of a tensor.
struct DeviceGeometry {
  int64_t depth = 1;
  int64_t channels = 1;
  int64_t height = 1;
  int64_t width = 1;
};

DeviceGeometry deviceGeometry(const ir::Dims& dims, ir::DeviceLayout layout);

// Element offset of (d, w, h, c) in a DWHC / DHWC buffer, exactly seed 003's formula.
int64_t deviceElementOffset(const DeviceGeometry& geometry, ir::DeviceLayout layout, int64_t d, int64_t w, int64_t h,
                            int64_t c);

// Bytes a user buffer of `dims` in `dtype` occupies (either user layout).
std::size_t userBufferBytes(const ir::Dims& dims, ir::DType dtype);
// Bytes of the device format of a tensor of `dims`.
std::size_t deviceBufferBytes(const ir::Dims& dims, const ir::DeviceFormat& format);

// Which implementation converts. Auto: the fastest vector kernels the CPU has (the AVX-512 ones
// where they were measured faster, else F16C/AVX2), the scalar walk without F16C/AVX2. Vector:
// the same, but an error without F16C/AVX2. Avx2 and Avx512 force one kernel family (for tests
// and benchmarks) and are an error on a CPU without it; Avx512 uses the AVX2 kernels for the
// cases that have no AVX-512 kernel.
enum class ConversionPath : uint8_t { Auto, Scalar, Vector, Avx2, Avx512 };
// The element types a user buffer may have: the ones the conversions read and write (float,
// float16, int8/16/32/64, uint8/16, bool). The compiler refuses io buffers of any other.
bool isUserType(ir::DType type);

bool vectorPathAvailable();  // F16C and AVX2
bool avx512PathAvailable();  // AVX-512 F/BW/VL/DQ enabled by the OS (and F16C/AVX2)

struct UserBufferView {
  std::string_view name;  // for messages
  ir::DType dtype = ir::DType::Float;
  ir::UserLayout layout = ir::UserLayout::NCHW;
  ir::Dims dims;  // logical (NCHW) dims
};

// Preprocess: the user buffer `user` (described by `view`) into `device` in `format`.
void userToDevice(const UserBufferView& view, std::span<const std::byte> user, const ir::DeviceFormat& format,
                  std::span<std::byte> device, ConversionPath path = ConversionPath::Auto);

// Postprocess: a device-format buffer back into the user's dtype and layout.
void deviceToUser(const ir::DeviceFormat& format, std::span<const std::byte> device, const UserBufferView& view,
                  std::span<std::byte> user, ConversionPath path = ConversionPath::Auto);

}  // namespace qaic::kernels
