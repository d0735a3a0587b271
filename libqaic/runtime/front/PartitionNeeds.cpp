// SPDX-License-Identifier: Apache-2.0
// resourcesFor: the container's own rule (container/ResourceNeeds), which speaks rt::Resources too.
// A multi-device program needs it on each of its cards: the largest of its parts' needs.
#include <qaic/Partition.hpp>

#include <stdexcept>

#include "container/ResourceNeeds.hpp"
#include "runtime/loading/QAicQpcObj.hpp"

namespace qaic::rt {

ResourceRequest resourcesFor(const Qpc& qpc, uint32_t numActivations, uint32_t programIndex) {
  if (numActivations == 0) throw Error(QS_INVAL, "resourcesFor: numActivations is 0");
  const container::QpcImage& image = *qpc.get()->image;
  if (programIndex >= image.programs().size())
    throw Error(QS_INVAL, "resourcesFor: program index " + std::to_string(programIndex) + " of " + image.sourceName() +
                              ", which has " + std::to_string(image.programs().size()) + " program(s)");
  try {
    return container::largestPartNeeds(image.contents(), programIndex, numActivations);
  } catch (const std::invalid_argument& e) {
    throw Error(QS_INVAL, "resourcesFor: " + image.sourceName() + ": " + e.what());
  } catch (const std::overflow_error& e) {
    throw Error(QS_INVAL, "resourcesFor(" + std::to_string(numActivations) + " activations of " + image.sourceName() +
                              "): " + e.what());
  }
}

}  // namespace qaic::rt
