// SPDX-License-Identifier: Apache-2.0
// The seed corpus of emu_ioctl: valid call sequences (and a few that test one refusal each),
// written with InputWriter so they follow EmuIoctlInput.hpp. `fuzz_emu_ioctl --write-seeds=DIR`
// writes them to DIR; the committed tests/fuzz/corpus/emu_ioctl/seed-* files came from there.
#pragma once

#include "SeedWriter.hpp"

namespace qaic::fuzz {

Seeds emuIoctlSeeds();

}  // namespace qaic::fuzz
