// kubelet_service's seed corpus, written by `fuzz_kubelet_service --write-seeds=DIR`: nodes of
// whole devices and of partition profiles (real and emulated roots), and calls that are
// answered, refused for each reason, parsed from protobuf bytes, and huge.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qaic::fuzz {

std::vector<std::pair<std::string, std::vector<uint8_t>>> kubeletServiceSeeds();

}  // namespace qaic::fuzz
