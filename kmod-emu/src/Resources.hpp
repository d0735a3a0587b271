// SPDX-License-Identifier: Apache-2.0
// Where a device's resources (rt::Resources: what it has, a resource group holds and an
// activation uses) are reserved: resource groups and partitions.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include <qaic/Resources.hpp>

namespace qaic::emu {

// A reservation made through a PASSTHROUGH resource-group command, held by one open file.
struct ResourceGroup {
  uint32_t id = 0;
  rt::Resources capacity;
  rt::Resources free;  // capacity minus what the holder's activations use
  bool named = false;  // ReserveNamed: only activations naming it draw from it
};

// A loaded program's constants in device memory: charged with the first activation of the load
// (to the pool that activation draws from), shared by every further one, and given back when the
// last of them ends. Guarded by the Device mutex.
struct ResidentConstants {
  uint64_t bytes = 0;        // what is charged while activations > 0
  uint32_t groupId = 0;      // the resource group charged; 0 = the file's pool
  uint32_t activations = 0;  // the load's live activations
};

// A partition: resources carved out of a device for a derived device node (id >= 100). Created
// and removed by a privileged caller (qaicd); it outlives that caller's open file. Files opened
// on its node charge every activation and resource group to `free`. Guarded by the Device mutex.
class DeviceMemoryFile;

struct Partition {
  uint32_t id = 0;
  rt::Resources capacity;
  rt::Resources free;
  uid_t ownerUid = 0;
  gid_t ownerGid = 0;
  uint32_t mode = 0600;
  int32_t holderPid = 0;  // 0 = static
  std::string label;
  bool ended = false;  // removed, or its device reset or went away
  // Its node's memory file (created at first use, Device::nodeMemory): its own, so that only
  // those who may open the partition's node may map its BOs.
  std::shared_ptr<DeviceMemoryFile> memory;
};

}  // namespace qaic::emu
