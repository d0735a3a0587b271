// Copies to or from memory a client shares with the emulator (a BO's memory file, an imported
// memfd). The client owns that file and may truncate it under the emulator's mapping; an access
// past the new end raises SIGBUS, which would kill the emulator and every client with it. The
// copy catches that fault on its own thread and reports it instead.
#pragma once

#include <cstddef>

namespace qaic::emu {

// memcpy(to, from, bytes); false when a page of either side faulted (SIGBUS), in which case a
// part of the bytes may have been copied. Safe to call from any number of threads.
bool guardedCopy(void* to, const void* from, std::size_t bytes);

}  // namespace qaic::emu
