// libFuzzer target: the emulator's ioctl argument decoding and MANAGE messages, in-process on
// one Device (EmuIoctlHarness.hpp describes the input format and the harness).
// `fuzz_emu_ioctl --write-seeds=DIR` writes the seed corpus instead of fuzzing.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "EmuIoctlHarness.hpp"
#include "EmuIoctlSeeds.hpp"

namespace {

qaic::fuzz::EmuIoctlHarness& harness() {
  static qaic::fuzz::EmuIoctlHarness h;
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const std::string flag = "--write-seeds=";
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = (*argv)[i];
    if (arg.rfind(flag, 0) != 0) continue;
    const std::string dir = arg.substr(flag.size());
    for (const auto& [name, bytes] : qaic::fuzz::emuIoctlSeeds()) {
      std::ofstream out(dir + "/" + name, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      if (!out) {
        std::fprintf(stderr, "emu_ioctl: cannot write %s/%s\n", dir.c_str(), name.c_str());
        std::exit(1);
      }
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  harness().run(data, size);
  return 0;
}
