// A one-operator program written with the shared container writer (relu over 16 floats, flat
// float device formats, so device bytes are the user's bytes), so that the ioctl tests need no
// compiler. The full-network tests use examples/smallcnn compiled by qaic-exec instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qaic::emu::test {

inline constexpr std::size_t kReluElements = 16;
inline constexpr uint64_t kReluDoorbell = 8192;
inline constexpr uint64_t kReluInputOffset = 12288;
inline constexpr uint64_t kReluOutputOffset = 16384;
inline constexpr uint64_t kReluIoRegion = 20480;

// programqpc.bin bytes: buffers "x" (in, [1,16] float) and "y" (out), one program on `numCores`
// cores with done semaphore 0.
std::vector<std::byte> reluProgram(uint32_t numCores = 1);

}  // namespace qaic::emu::test
