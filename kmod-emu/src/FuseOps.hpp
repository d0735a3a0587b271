// SPDX-License-Identifier: Apache-2.0
// The libfuse low-level operations of qaic-emu's file tree (userdata: the Emulator).
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>

namespace qaic::emu {

const fuse_lowlevel_ops& fuseOperations();

}  // namespace qaic::emu
