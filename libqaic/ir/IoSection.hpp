// SPDX-License-Identifier: Apache-2.0
// Internal: the `io` and `allowed_shapes` sections of the IR.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/Graph.hpp"

namespace qaic::ir {

// Parses and checks each entry on its own (names unique, enums, selective-IO flags, layouts).
std::vector<IoBuffer> parseIoSection(const nlohmann::json& io, const std::string& source);
// Each combination names every io buffer; ranks match and sizes respect partial rules.
std::vector<ShapeCombination> parseAllowedShapes(const nlohmann::json& shapes, const std::vector<IoBuffer>& io,
                                                 const std::string& source);

std::string_view deviceLayoutName(DeviceLayout layout);
std::string_view userLayoutName(UserLayout layout);

}  // namespace qaic::ir
