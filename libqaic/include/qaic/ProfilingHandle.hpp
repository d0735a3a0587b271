// Num-iter based profiling (seed 001): collects the per-stage durations of up to numSamples
// inferences of one InferenceSet between start() and stop(); stop() delivers the report to the
// callback, unless no inference completed in between.
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
  static std::shared_ptr<ProfilingHandle> Factory(std::shared_ptr<InferenceSet> set,
                                                  uint32_t numSamples, ProfilingCallback callback,
                                                  void* userData = nullptr,
                                                  ProfilingType type = PROFILING_TYPE_LATENCY);
  virtual ~ProfilingHandle();
  ProfilingHandle(const ProfilingHandle&) = delete;
  ProfilingHandle& operator=(const ProfilingHandle&) = delete;

  virtual void start() = 0;  // forgets earlier samples; Error(QS_WRONG_STATE) when already started
  virtual void stop() = 0;   // delivers the report (if any sample) on the calling thread

 protected:
  ProfilingHandle() = default;
};

}  // namespace qaic::rt
