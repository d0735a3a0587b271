// SPDX-License-Identifier: Apache-2.0
// The liveness mark of a running process that others must be able to test without asking it:
// an open file description lock (F_OFD_SETLK) on a file, held for the holder's lifetime. The
// kernel drops it when the holder's last descriptor closes, which happens as the process exits,
// before it is a zombie and whatever killed it; so a lock that can be placed means the holder is
// gone, with no pid to be reused and no round trip to the holder (which may be hung). qaic-emu
// marks its shared-memory directory so (docs/emulator.md), and libqaic tests the mark to see a
// lost device (docs/driver.md, "A lost device").
#pragma once

#include <string>

#include "base/Result.hpp"
#include "base/UniqueFd.hpp"

namespace qaic {

// Creates `path` (mode `mode`, read-only for others) holding the write lock: the lock is placed
// on a temporary name first and the file renamed into place, so no tester ever sees the file
// unlocked while its holder lives. Keep the descriptor open for as long as the mark must hold.
Result<UniqueFd> createHeldInstanceLock(const std::string& path, unsigned mode);

// Opens an instance lock to test it later (read-only, close-on-exec); ENOENT when there is none.
Result<UniqueFd> openInstanceLock(const std::string& path);

// True while some process holds the lock open on `fd`'s file; places no lock itself, so testing
// never gets in a holder's or another tester's way.
Result<bool> instanceLockHeld(int fd);

}  // namespace qaic
