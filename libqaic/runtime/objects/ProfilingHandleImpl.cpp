// SPDX-License-Identifier: Apache-2.0
#include "runtime/objects/ProfilingHandleImpl.hpp"

#include "runtime/objects/InferenceSetImpl.hpp"

namespace qaic::rt {

ProfilingHandleImpl::~ProfilingHandleImpl() {
  if (auto set = set_.lock()) set->removeProfiler(state_.get());
}

void ProfilingHandleImpl::start() {
  std::lock_guard lock(state_->mutex);
  if (state_->started) throw Error(QS_WRONG_STATE, "ProfilingHandle::start: already started");
  state_->samples.clear();
  state_->started = true;
  state_->endedByCount = false;
}

void ProfilingHandleImpl::stop() {
  std::vector<ProfilingSample> samples;
  {
    std::lock_guard lock(state_->mutex);
    // After the numSamples-th sample delivered the report, stop() has nothing left to deliver.
    if (!state_->started && state_->endedByCount) return;
    if (!state_->started) throw Error(QS_WRONG_STATE, "ProfilingHandle::stop: not started");
    state_->started = false;
    samples.swap(state_->samples);
  }
  if (samples.empty()) return;  // seed 001: no callback when nothing completed
  state_->deliver(state_->report(std::move(samples)));
}

std::optional<ProfilingReport> ProfilingHandleImpl::State::record(uint64_t requestId, QStatus status,
                                                                  const std::map<std::string, PerfCounter>& stages) {
  std::vector<ProfilingSample> full;
  {
    std::lock_guard lock(mutex);
    if (!started) return std::nullopt;
    samples.push_back({requestId, status, stages});
    if (samples.size() < numSamples) return std::nullopt;
    started = false;  // seed 001: profiling runs until numSamples have been collected
    endedByCount = true;
    full.swap(samples);
  }
  return report(std::move(full));
}

ProfilingReport ProfilingHandleImpl::State::report(std::vector<ProfilingSample> collected) const {
  ProfilingReport report;
  report.type = type;
  report.setName = setName;
  report.samples = std::move(collected);
  std::map<std::string, double> sums;
  for (const auto& sample : report.samples)
    for (const auto& [stage, counter] : sample.stages) sums[stage] += static_cast<double>(counter.realTimeUs);
  for (const auto& [stage, sum] : sums) report.meanUs[stage] = sum / static_cast<double>(report.samples.size());
  return report;
}

}  // namespace qaic::rt
