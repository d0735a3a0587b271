// SPDX-License-Identifier: Apache-2.0
#include <qaic/InferenceSet.hpp>

#include "runtime/loading/QAicQpcObj.hpp"
#include "runtime/objects/InferenceSetImpl.hpp"
#include "runtime/objects/MultiDeviceSetImpl.hpp"

namespace qaic::rt {

std::shared_ptr<InferenceSet> InferenceSet::Factory(std::shared_ptr<Context> context, std::shared_ptr<Qpc> qpc,
                                                    QID device, uint32_t setSize, uint32_t numActivations,
                                                    const InferenceSetProperties* properties) {
  const InferenceSetProperties defaults;
  auto impl = ContextImpl::of(context, "InferenceSet::Factory");
  // A program whose container spans several devices runs as one set per part, one part per card.
  const QAicQpcObj* obj = qpc ? qpc->get() : nullptr;
  if (obj != nullptr && obj->image != nullptr && obj->image->deviceCount() > 1)
    return std::make_shared<MultiDeviceSetImpl>(std::move(impl), std::move(qpc), setSize, numActivations,
                                                properties ? *properties : defaults);
  return std::make_shared<InferenceSetImpl>(std::move(impl), std::move(qpc), device, setSize, numActivations,
                                            properties ? *properties : defaults);
}

InferenceSet::~InferenceSet() = default;

}  // namespace qaic::rt
