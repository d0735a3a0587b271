// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the emulator's ioctl argument decoding and MANAGE messages, in-process on
// one Device (EmuIoctlHarness.hpp describes the input format and the harness).
// `fuzz_emu_ioctl --write-seeds=DIR` writes the seed corpus instead of fuzzing.
#include <cstddef>
#include <cstdint>

#include "EmuIoctlHarness.hpp"
#include "EmuIoctlSeeds.hpp"
#include "SeedWriter.hpp"

namespace {

qaic::fuzz::EmuIoctlHarness& harness() {
  static qaic::fuzz::EmuIoctlHarness h;
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  qaic::fuzz::writeSeedsIfAsked(*argc, *argv, "emu_ioctl", qaic::fuzz::emuIoctlSeeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  harness().run(data, size);
  return 0;
}
