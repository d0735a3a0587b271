// The seed corpus of emu_ioctl: valid call sequences (and a few that test one refusal each),
// written with InputWriter so they follow EmuIoctlInput.hpp. `fuzz_emu_ioctl --write-seeds=DIR`
// writes them to DIR; the committed tests/fuzz/corpus/emu_ioctl/seed-* files came from there.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qaic::fuzz {

std::vector<std::pair<std::string, std::vector<uint8_t>>> emuIoctlSeeds();

}  // namespace qaic::fuzz
