// SPDX-License-Identifier: Apache-2.0
// The per-input state of EmuIoctlHarness and the helpers its call files share.
#pragma once

#include <unistd.h>
#include <chrono>
#include <cstdint>

#include <cstdio>
#include <memory>
#include <vector>

#include "EmuIoctlHarness.hpp"

namespace qaic::fuzz {

// Fixed places in the arena for the messages and arrays the harness builds itself.
inline constexpr std::size_t kManageAt = 0;
inline constexpr std::size_t kSlicesAt = 8192;
inline constexpr std::size_t kEntriesAt = 16384;

// A waiting ioctl or semaphore may not outlast libFuzzer's per-input timeout.
inline constexpr uint32_t kMaxWaitMs = 20;
inline constexpr std::chrono::milliseconds kSemaphoreTimeout{20};

// An invariant of the device broke: libFuzzer reports it as a crash with this input.
[[noreturn]] inline void violated(const char* what) {
  std::fprintf(stderr, "emu_ioctl: invariant violated: %s\n", what);
  __builtin_trap();
}

inline bool isShort(uint8_t fix) { return (fix & kShortArgument) == kShortArgument; }

template <typename V>
auto pick(const V& values, uint8_t index, typename V::value_type fallback) {
  return values.empty() ? fallback : values[index % values.size()];
}

struct EmuIoctlHarness::Session {
  ~Session() {
    for (const auto& e : exports) ::close(e.fd);
    for (int fd : memfds) ::close(fd);
  }
  std::unique_ptr<emu::Device> device;
  std::shared_ptr<emu::OpenFile> file;
  std::vector<Bo> bos;
  std::vector<uint32_t> dbcs;
  std::vector<uint32_t> groups;
  struct Export {
    int fd;
    uint32_t handle;  // the BO it was exported from
  };
  std::vector<Export> exports;  // descriptors PRIME_HANDLE_TO_FD accepted, closed at the end
  std::vector<int> memfds;      // memfds offered to PRIME_FD_TO_HANDLE

  Bo* bo(uint8_t index) { return bos.empty() ? nullptr : &bos[index % bos.size()]; }
  uint32_t handle(uint8_t index, uint32_t fallback) { return bos.empty() ? fallback : bo(index)->handle; }
};

}  // namespace qaic::fuzz
