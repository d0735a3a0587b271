// SPDX-License-Identifier: Apache-2.0
// Num-iter based profiling (seed 001): collects the per-stage durations of the inferences of one
// InferenceSet from start() until numSamples have completed, then delivers the report to the
// callback (on the thread that completed the last sample, before that inference's handle
// completes: keep the callback short). stop() ends it earlier and delivers what was collected,
// unless no inference completed in between.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <qaic/InferenceHandle.hpp>

namespace qaic::rt {

class InferenceSet;

enum ProfilingType : uint32_t { PROFILING_TYPE_LATENCY = 0 };

struct ProfilingSample {
  uint64_t requestId = 0;
  QStatus status = QS_SUCCESS;
  std::map<std::string, PerfCounter> stages;  // InferenceHandle::getPerformanceCounts()
};

struct ProfilingReport {
  ProfilingType type = PROFILING_TYPE_LATENCY;
  std::string setName;
  std::vector<ProfilingSample> samples;
  std::map<std::string, double> meanUs;  // per stage, over samples
};

using ProfilingCallback = std::function<void(const ProfilingReport& report, void* userData)>;

class ProfilingHandle {
 public:
  // Throws Error(QS_INVAL) for a null set or callback, numSamples 0, or a set that
  // InferenceSet::Factory did not create.
  static std::shared_ptr<ProfilingHandle> Factory(std::shared_ptr<InferenceSet> set, uint32_t numSamples,
                                                  ProfilingCallback callback, void* userData = nullptr,
                                                  ProfilingType type = PROFILING_TYPE_LATENCY);
  virtual ~ProfilingHandle();
  ProfilingHandle(const ProfilingHandle&) = delete;
  ProfilingHandle& operator=(const ProfilingHandle&) = delete;

  virtual void start() = 0;  // forgets earlier samples; Error(QS_WRONG_STATE) when already started
  // Delivers the report (if any sample) on the calling thread. After the numSamples-th sample
  // delivered it, a no-op; Error(QS_WRONG_STATE) when never started.
  virtual void stop() = 0;

 protected:
  ProfilingHandle() = default;
};

}  // namespace qaic::rt
