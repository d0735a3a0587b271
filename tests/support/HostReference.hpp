// SPDX-License-Identifier: Apache-2.0
// Expected outputs of a network for a runtime or device test: the host executor
// (kernels::HostProgram, the code the emulator computes with) run in-process on the network's IR.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace qaic::testing {

// The float outputs of IR file `irPath` (weights file beside it) for float `inputs`, in io order;
// `inputDims[i]`, when given and not empty, overrides input i's dims (a partial or specialized
// shape), and each output is cut to the dims the run gave it.
std::vector<std::vector<float>> hostReferenceOutputs(const std::filesystem::path& irPath,
                                                     const std::vector<std::vector<float>>& inputs,
                                                     const std::vector<std::vector<int64_t>>& inputDims = {});

}  // namespace qaic::testing
