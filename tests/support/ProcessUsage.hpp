// Open file descriptors, resident memory and CPU time of a process, read from /proc.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace qaic::testing {

struct ProcessUsage {
  long fds = -1;           // entries of /proc/<pid>/fd; -1 when unreadable
  long rssKb = -1;         // VmRSS of /proc/<pid>/status; -1 when unreadable
  long peakRssKb = -1;     // VmHWM of /proc/<pid>/status (the resident peak); -1 when unreadable
  double cpuSeconds = -1;  // utime + stime of /proc/<pid>/stat, all threads; -1 when unreadable
};

ProcessUsage sampleUsage(pid_t pid);

}  // namespace qaic::testing
