// SPDX-License-Identifier: Apache-2.0
// ProfilingHandle's implementation. Its collecting side (State) is shared with the inference set,
// which holds it weakly: the set's completion path records samples into it between start() and
// stop(). The numSamples-th ends the profiling: record() then returns the report, which the set
// delivers (deliver()) once it holds no lock.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <qaic/ProfilingHandle.hpp>

namespace qaic::rt {

class InferenceSetImpl;

class ProfilingHandleImpl final : public ProfilingHandle {
 public:
  struct State {
    uint32_t numSamples = 0;
    ProfilingCallback callback;
    void* userData = nullptr;
    ProfilingType type = PROFILING_TYPE_LATENCY;

    std::string setName;

    std::mutex mutex;
    bool started = false;
    bool endedByCount = false;  // the last start() ended with numSamples samples, not by stop()
    std::vector<ProfilingSample> samples;

    // The report when this sample was the numSamples-th.
    std::optional<ProfilingReport> record(uint64_t requestId, QStatus status,
                                          const std::map<std::string, PerfCounter>& stages);
    ProfilingReport report(std::vector<ProfilingSample> samples) const;  // samples and per-stage means
    void deliver(const ProfilingReport& report) const { callback(report, userData); }
  };

  ProfilingHandleImpl(std::shared_ptr<InferenceSetImpl> set, std::shared_ptr<State> state)
      : set_(std::move(set)), state_(std::move(state)) {}
  ~ProfilingHandleImpl() override;  // stops the set's recording into this handle's state

  void start() override;
  void stop() override;

 private:
  std::weak_ptr<InferenceSetImpl> set_;
  std::shared_ptr<State> state_;
};

}  // namespace qaic::rt
