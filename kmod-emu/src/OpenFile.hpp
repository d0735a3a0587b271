// SPDX-License-Identifier: Apache-2.0
// Per-open-file state of a device node, like a DRM file: everything it holds is freed when the
// file is released (the TERMINATE semantics). Guarded by the owning Device's mutex.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "Activation.hpp"
#include "BufferObject.hpp"
#include "DeviceProgram.hpp"
#include "Resources.hpp"

namespace qaic::emu {

// A program container being transferred or already activated. Once an activation uses it, it is
// sealed: no transfer changes its bytes again (programs point into them). Only the programs
// themselves rewrite a constant, once, into the layout their kernels want (ContainerProgram.cpp,
// kernels::ConstantPacking).
struct ProgramLoad {
  std::shared_ptr<LoadBuffer> bytes;
  bool sealed = false;
  // Its constants on the device; held by its activations too, so that unloading while they run
  // keeps the charge until the last one ends.
  std::shared_ptr<ResidentConstants> constants = std::make_shared<ResidentConstants>();
};

struct OpenFile {
  // The pool activations and resource groups of this file draw from (Device mutex held).
  rt::Resources* pool(rt::Resources& deviceFree) { return partition ? &partition->free : &deviceFree; }

  uint64_t id = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::shared_ptr<Partition> partition;  // opened on a derived node; null = the whole device
  uint32_t nextHandle = 1;               // handles are never reused: a closed one cannot name another BO
  std::map<uint32_t, std::shared_ptr<BufferObject>> bos;  // by handle
  // The PRIME table of a DRM file: the handle each memory was exported from or imported as, so
  // that importing a descriptor of it again gives that handle back.
  std::map<MemoryIdentity, uint32_t> prime;
  std::string clientName;                                       // DRM_IOCTL_SET_CLIENT_NAME
  std::map<uint32_t, ProgramLoad> loads;                        // by load id
  std::map<uint32_t, ResourceGroup> groups;                     // by group id
  std::map<uint32_t, std::shared_ptr<Activation>> activations;  // by DBC id
};

}  // namespace qaic::emu
