// Countable device resources: what a device has, a resource group holds and an activation uses.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

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

// A partition: resources carved out of a device for a derived device node (id >= 100). Created
// and removed by a privileged caller (qaicd); it outlives that caller's open file. Files opened
// on its node charge every activation and resource group to `free`. Guarded by the Device mutex.
struct Partition {
  uint32_t id = 0;
  ResourceCounts capacity;
  ResourceCounts free;
  uid_t ownerUid = 0;
  gid_t ownerGid = 0;
  uint32_t mode = 0600;
  int32_t holderPid = 0;  // 0 = static
  std::string label;
  bool ended = false;     // removed, or its device reset or went away
};

}  // namespace qaic::emu
