// The collecting side of a ProfilingHandle: samples recorded by the set's completion path
// between start() and stop(), at most numSamples of them.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <qaic/ProfilingHandle.hpp>

namespace qaic::rt {

struct ProfilingState {
  uint32_t numSamples = 0;
  ProfilingCallback callback;
  void* userData = nullptr;
  ProfilingType type = PROFILING_TYPE_LATENCY;

  std::mutex mutex;
  bool started = false;
  std::vector<ProfilingSample> samples;

  void record(uint64_t requestId, QStatus status, const std::map<std::string, PerfCounter>& stages);
};

}  // namespace qaic::rt
