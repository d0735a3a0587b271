// SPDX-License-Identifier: Apache-2.0
#include <qaic/InferenceSet.hpp>

#include "runtime/objects/InferenceSetImpl.hpp"

namespace qaic::rt {

std::shared_ptr<InferenceSet> InferenceSet::Factory(std::shared_ptr<Context> context, std::shared_ptr<Qpc> qpc,
                                                    QID device, uint32_t setSize, uint32_t numActivations,
                                                    const InferenceSetProperties* properties) {
  const InferenceSetProperties defaults;
  return std::make_shared<InferenceSetImpl>(ContextImpl::of(context, "InferenceSet::Factory"), std::move(qpc), device,
                                            setSize, numActivations, properties ? *properties : defaults);
}

InferenceSet::~InferenceSet() = default;

}  // namespace qaic::rt
