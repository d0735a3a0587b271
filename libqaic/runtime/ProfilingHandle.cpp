#include "ProfilingState.hpp"

#include "SetImpl.hpp"

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
}

void ProfilingHandleImpl::stop() {
  ProfilingReport report;
  {
    std::lock_guard lock(state_->mutex);
    if (!state_->started) throw Error(QS_WRONG_STATE, "ProfilingHandle::stop: not started");
    state_->started = false;
    report.samples.swap(state_->samples);
  }
  if (report.samples.empty()) return;  // seed 001: no callback when nothing completed
  report.type = state_->type;
  if (auto set = set_.lock()) report.setName = set->getName();
  std::map<std::string, double> sums;
  for (const auto& sample : report.samples)
    for (const auto& [stage, counter] : sample.stages) sums[stage] += static_cast<double>(counter.realTimeUs);
  for (const auto& [stage, sum] : sums) report.meanUs[stage] = sum / static_cast<double>(report.samples.size());
  state_->callback(report, state_->userData);
}

}  // namespace

void ProfilingState::record(uint64_t requestId, QStatus status, const std::map<std::string, PerfCounter>& stages) {
  std::lock_guard lock(mutex);
  if (!started || samples.size() >= numSamples) return;
  samples.push_back({requestId, status, stages});
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
  impl->addProfiler(state);
  return std::make_shared<ProfilingHandleImpl>(std::move(impl), std::move(state));
}

ProfilingHandle::~ProfilingHandle() = default;

}  // namespace qaic::rt
