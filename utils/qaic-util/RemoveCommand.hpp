// SPDX-License-Identifier: Apache-2.0
// qaic-util remove ID: ends a partition through qaicd (root, or the connection holding it).
#pragma once

#include <iosfwd>
#include <span>
#include <string>

namespace qaic::util {

// Exit status: 0 removed; 1 qaicd is not running, no such partition or not allowed;
// UsageError (2) for a bad command line.
int runRemoveCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace qaic::util
