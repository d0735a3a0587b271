// SPDX-License-Identifier: Apache-2.0
// Open file descriptors, resident memory and CPU time of a process, read from /proc.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>

namespace qaic::testing {

struct ProcessUsage {
  long fds = -1;           // entries of /proc/<pid>/fd; -1 when unreadable
  long rssKb = -1;         // VmRSS of /proc/<pid>/status; -1 when unreadable
  long peakRssKb = -1;     // VmHWM of /proc/<pid>/status (the resident peak); -1 when unreadable
  double cpuSeconds = -1;  // utime + stime of /proc/<pid>/stat, all threads; -1 when unreadable
};

ProcessUsage sampleUsage(pid_t pid);

// sampleUsage with `fds` the fewest descriptors over `readings` readings `apart` from each
// other. A descriptor another thread holds for a moment (ThreadSanitizer's background thread
// reading /proc, a transient pipe) is in some readings only; a leaked one is in all of them.
ProcessUsage sampleSettledUsage(pid_t pid, int readings = 5,
                                std::chrono::milliseconds apart = std::chrono::milliseconds(20));

}  // namespace qaic::testing
