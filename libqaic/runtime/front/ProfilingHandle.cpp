// SPDX-License-Identifier: Apache-2.0
#include <qaic/ProfilingHandle.hpp>

#include "runtime/objects/InferenceSetImpl.hpp"
#include "runtime/objects/MultiDeviceSetImpl.hpp"
#include "runtime/objects/ProfilingHandleImpl.hpp"

namespace qaic::rt {

std::shared_ptr<ProfilingHandle> ProfilingHandle::Factory(std::shared_ptr<InferenceSet> set, uint32_t numSamples,
                                                          ProfilingCallback callback, void* userData,
                                                          ProfilingType type) {
  if (!set) throw Error(QS_INVAL, "ProfilingHandle::Factory: null InferenceSet");
  if (std::dynamic_pointer_cast<MultiDeviceSetImpl>(set))
    throw Error(QS_INVAL, "ProfilingHandle::Factory: InferenceSet '" + set->getName() +
                              "' runs a multi-device program, which is not profiled yet");
  auto impl = std::dynamic_pointer_cast<InferenceSetImpl>(set);
  if (!impl) throw Error(QS_INVAL, "ProfilingHandle::Factory: the InferenceSet was not made by InferenceSet::Factory");
  if (!callback) throw Error(QS_INVAL, "ProfilingHandle::Factory: null callback");
  if (numSamples == 0) throw Error(QS_INVAL, "ProfilingHandle::Factory: numSamples must be at least 1");
  if (type != PROFILING_TYPE_LATENCY)
    throw Error(QS_INVAL, "ProfilingHandle::Factory: unsupported profiling type " + std::to_string(type));
  auto state = std::make_shared<ProfilingHandleImpl::State>();
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
