// SPDX-License-Identifier: Apache-2.0
// The countable resources of a device, with the field names of the vendor's resource-group
// JSON: what a partition holds or asks for, what a device has free, and what activations of a
// program need. One type for the API (Partition, resourcesFor), qaicd's protocol, the device
// protocol's partition and resource-group messages, and the emulator's accounting.
#pragma once

#include <cstdint>

namespace qaic::rt {

struct Resources {
  uint32_t numNsp = 0;   // neural signal processors (cores)
  uint32_t numMcid = 0;  // multicast ids
  uint32_t numSem = 0;   // semaphores
  uint32_t numVc = 0;    // virtual channels, one DMA bridge channel (DBC) each
  uint64_t ddrSize = 0;  // bytes of device memory

  // Spelled out rather than defaulted: the public headers also compile as C++17.
  friend bool operator==(const Resources& a, const Resources& b) {
    return a.numNsp == b.numNsp && a.numMcid == b.numMcid && a.numSem == b.numSem && a.numVc == b.numVc &&
           a.ddrSize == b.ddrSize;
  }
  friend bool operator!=(const Resources& a, const Resources& b) { return !(a == b); }
  // Every count at least `need`'s.
  bool covers(const Resources& need) const {
    return numNsp >= need.numNsp && numMcid >= need.numMcid && numSem >= need.numSem && numVc >= need.numVc &&
           ddrSize >= need.ddrSize;
  }
  Resources& operator+=(const Resources& other) {
    numNsp += other.numNsp, numMcid += other.numMcid, numSem += other.numSem, numVc += other.numVc;
    ddrSize += other.ddrSize;
    return *this;
  }
  // Only after covers(other).
  Resources& operator-=(const Resources& other) {
    numNsp -= other.numNsp, numMcid -= other.numMcid, numSem -= other.numSem, numVc -= other.numVc;
    ddrSize -= other.ddrSize;
    return *this;
  }
};

// The name the partition API gives the resources it asks for (Partition::acquire,
// QAicContextProperties::partition, resourcesFor).
using ResourceRequest = Resources;

}  // namespace qaic::rt
