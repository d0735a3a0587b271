// SPDX-License-Identifier: Apache-2.0
// kubelet_service's seed corpus, written by `fuzz_kubelet_service --write-seeds=DIR`: nodes of
// whole devices and of partition profiles (real and emulated roots), and calls that are
// answered, refused for each reason, parsed from protobuf bytes, and huge.
#pragma once

#include "SeedWriter.hpp"

namespace qaic::fuzz {

Seeds kubeletServiceSeeds();

}  // namespace qaic::fuzz
