// What activations of one program draw from a device: NSPs, multicast ids, semaphores, one
// virtual channel (DBC) each, and DDR for the IO region plus the constants. This is the one rule
// for it: libqaic sizes a partition with it and the emulator charges an activation with it, so
// a partition sized for N activations always holds exactly N.
#pragma once

#include <cstdint>

#include "container/QpcModel.hpp"

namespace qaic::container {

struct ResourceNeeds {
  uint32_t numNsp = 0;    // QpcProgram::numCores per activation
  uint32_t numMcid = 0;   // QpcProgram::numMulticastIds per activation
  uint32_t numSem = 0;    // QpcProgram::numSemaphores per activation
  uint32_t numVc = 0;     // one DBC per activation
  uint64_t ddrBytes = 0;  // QpcProgram::ioRegionSize + constantsBytes(contents) per activation
  bool operator==(const ResourceNeeds&) const = default;
};

// Bytes of every constant's data (each activation holds its own copy on the device).
uint64_t constantsBytes(const QpcContents& contents);

// What `numActivations` activations of `program` (one of `contents`' programs) need. Throws
// std::overflow_error naming the field when a total does not fit its type.
ResourceNeeds resourceNeeds(const QpcContents& contents, const QpcProgram& program,
                            uint32_t numActivations = 1);

}  // namespace qaic::container
