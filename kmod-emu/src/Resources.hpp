// Countable device resources: what a device has, a resource group holds and an activation uses.
#pragma once

#include <cstdint>

namespace qaic::emu {

struct ResourceCounts {
  uint32_t nsp = 0;
  uint32_t mcid = 0;
  uint32_t sem = 0;
  uint32_t vc = 0;  // virtual channels = DBCs
  uint64_t ddr = 0; // bytes

  bool covers(const ResourceCounts& need) const {
    return nsp >= need.nsp && mcid >= need.mcid && sem >= need.sem && vc >= need.vc &&
           ddr >= need.ddr;
  }
  ResourceCounts& operator-=(const ResourceCounts& o) {
    nsp -= o.nsp, mcid -= o.mcid, sem -= o.sem, vc -= o.vc, ddr -= o.ddr;
    return *this;
  }
  ResourceCounts& operator+=(const ResourceCounts& o) {
    nsp += o.nsp, mcid += o.mcid, sem += o.sem, vc += o.vc, ddr += o.ddr;
    return *this;
  }
  bool operator==(const ResourceCounts&) const = default;
};

// A reservation made through a PASSTHROUGH resource-group command, held by one open file.
struct ResourceGroup {
  uint32_t id = 0;
  ResourceCounts capacity;
  ResourceCounts free;  // capacity minus what the holder's activations use
};

}  // namespace qaic::emu
