#include "runtime/objects/ProfilingState.hpp"

#include "runtime/objects/SetImpl.hpp"

namespace qaic::rt {

namespace {

class ProfilingHandleImpl final : public ProfilingHandle {
 public:
  ProfilingHandleImpl(std::shared_ptr<SetImpl> set, std::shared_ptr<ProfilingState> state)
      : set_(std::move(set)), state_(std::move(state)) {}
  ~ProfilingHandleImpl() override {
    if (auto set = set_.lock()) set->removeProfiler(state_.get());
  }

  void start() override;
  void stop() override;

 private:
  std::weak_ptr<SetImpl> set_;
  std::shared_ptr<ProfilingState> state_;
};

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

}  // namespace

std::optional<ProfilingReport> ProfilingState::record(uint64_t requestId, QStatus status,
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

ProfilingReport ProfilingState::report(std::vector<ProfilingSample> collected) const {
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

std::shared_ptr<ProfilingHandle> ProfilingHandle::Factory(std::shared_ptr<InferenceSet> set, uint32_t numSamples,
                                                          ProfilingCallback callback, void* userData,
                                                          ProfilingType type) {
  if (!set) throw Error(QS_INVAL, "ProfilingHandle::Factory: null InferenceSet");
  auto impl = std::dynamic_pointer_cast<SetImpl>(set);
  if (!impl) throw Error(QS_INVAL, "ProfilingHandle::Factory: the InferenceSet was not made by InferenceSet::Factory");
  if (!callback) throw Error(QS_INVAL, "ProfilingHandle::Factory: null callback");
  if (numSamples == 0) throw Error(QS_INVAL, "ProfilingHandle::Factory: numSamples must be at least 1");
  if (type != PROFILING_TYPE_LATENCY)
    throw Error(QS_INVAL, "ProfilingHandle::Factory: unsupported profiling type " + std::to_string(type));
  auto state = std::make_shared<ProfilingState>();
  state->numSamples = numSamples;
  state->callback = std::move(callback);
  state->userData = userData;
  state->type = type;
  state->setName = impl->getName();
  impl->addProfiler(state);
  return std::make_shared<ProfilingHandleImpl>(std::move(impl), std::move(state));
}

ProfilingHandle::~ProfilingHandle() = default;

}  // namespace qaic::rt
