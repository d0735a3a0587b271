// SPDX-License-Identifier: Apache-2.0
// What activations of one program draw from a device: NSPs, multicast ids, semaphores, one
// virtual channel (DBC) each, and DDR for the IO region plus the constants. This is the one rule
// for it: libqaic sizes a partition with it and the emulator charges an activation with it, so
// a partition sized for N activations always holds exactly N.
#pragma once

#include <cstdint>

#include <qaic/Resources.hpp>

#include "container/QpcModel.hpp"

namespace qaic::container {

// Bytes of every constant's data (each activation holds its own copy on the device).
uint64_t constantsBytes(const QpcContents& contents);

// What `numActivations` activations of `program` (one of `contents`' programs) need, per
// activation: numNsp = QpcProgram::numCores, numMcid = numMulticastIds, numSem = numSemaphores,
// numVc = 1 (its DBC), ddrSize = ioRegionSize + constantsBytes(contents). Throws
// std::overflow_error naming the field when a total does not fit its type.
rt::Resources resourceNeeds(const QpcContents& contents, const QpcProgram& program, uint32_t numActivations = 1);

}  // namespace qaic::container
