// SPDX-License-Identifier: Apache-2.0
// FUSE as an ordinary user. libfuse mounts through the setuid fusermount3 by itself when mount(2)
// says EPERM, but only after opening /dev/fuse, and fusermount3 opens /dev/fuse with the
// caller's rights too (it drops to the caller's fsuid for that open): the device's mode is the
// administrator's gate, which no user-space helper bypasses. What is left for us: saying why a
// mount failed, and unmounting through fusermount3 with a bounded wait.
#pragma once

#include <chrono>
#include <string>

#include "base/Result.hpp"

namespace qaic::emu {

// Empty when this process can open /dev/fuse read-write; otherwise one line saying why not
// (errno, the node's mode and owner, what to do about it).
std::string fuseDeviceProblem();

// The setuid helper: the first fusermount3 on PATH, else /usr/bin/fusermount3 or
// /bin/fusermount3; empty when there is none.
std::string fusermountProgram();

// `fusermount3 -u [-z] -- dir`, for users without CAP_SYS_ADMIN (a mount libfuse made through
// fusermount3, or a stale one left by a killed emulator). `lazy` detaches even while files are
// open. Errors name the directory and carry fusermount3's message: ENOENT (no fusermount3),
// EPERM (it refused, e.g. not mounted or not the user's mount), ETIMEDOUT (killed after
// `timeout`).
Result<void> unmountThroughFusermount(const std::string& dir, bool lazy,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace qaic::emu
