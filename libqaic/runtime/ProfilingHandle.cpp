#include "ProfilingState.hpp"

#include <qaic/InferenceSet.hpp>

#include "SetImpl.hpp"

namespace qaic::rt {

void ProfilingHandle::State::record(uint64_t requestId, QStatus status,
                                    const std::map<std::string, PerfCounter>& stages) {
  std::lock_guard lock(mutex);
  if (!started || samples.size() >= numSamples) return;
  samples.push_back({requestId, status, stages});
}

std::shared_ptr<ProfilingHandle> ProfilingHandle::Factory(std::shared_ptr<InferenceSet> set,
                                                          uint32_t numSamples, ProfilingCallback callback,
                                                          void* userData, ProfilingType type) {
  if (!set) throw Error(QS_INVAL, "ProfilingHandle::Factory: null InferenceSet");
  if (!callback) throw Error(QS_INVAL, "ProfilingHandle::Factory: null callback");
  if (numSamples == 0) throw Error(QS_INVAL, "ProfilingHandle::Factory: numSamples must be at least 1");
  if (type != PROFILING_TYPE_LATENCY)
    throw Error(QS_INVAL, "ProfilingHandle::Factory: unsupported profiling type " + std::to_string(type));
  auto state = std::make_shared<State>();
  state->set = set;
  state->numSamples = numSamples;
  state->callback = std::move(callback);
  state->userData = userData;
  state->type = type;
  set->impl().addProfiler(state);
  return std::make_shared<ProfilingHandle>(std::move(state));
}

ProfilingHandle::ProfilingHandle(std::shared_ptr<State> state) : state_(std::move(state)) {}

ProfilingHandle::~ProfilingHandle() {
  if (auto set = state_->set.lock()) set->impl().removeProfiler(state_.get());
}

void ProfilingHandle::start() {
  std::lock_guard lock(state_->mutex);
  if (state_->started) throw Error(QS_WRONG_STATE, "ProfilingHandle::start: already started");
  state_->samples.clear();
  state_->started = true;
}

void ProfilingHandle::stop() {
  ProfilingReport report;
  {
    std::lock_guard lock(state_->mutex);
    if (!state_->started) throw Error(QS_WRONG_STATE, "ProfilingHandle::stop: not started");
    state_->started = false;
    report.samples.swap(state_->samples);
  }
  if (report.samples.empty()) return;  // seed 001: no callback when nothing completed
  report.type = state_->type;
  if (auto set = state_->set.lock()) report.setName = set->getName();
  std::map<std::string, double> sums;
  for (const auto& sample : report.samples)
    for (const auto& [stage, counter] : sample.stages) sums[stage] += static_cast<double>(counter.realTimeUs);
  for (const auto& [stage, sum] : sums) report.meanUs[stage] = sum / static_cast<double>(report.samples.size());
  state_->callback(report, state_->userData);
}

}  // namespace qaic::rt
