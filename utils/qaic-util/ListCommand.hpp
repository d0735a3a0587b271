// SPDX-License-Identifier: Apache-2.0
// qaic-util list [-j]: the partitions, from qaicd (with their holders) when it runs, otherwise
// from the sys tree under $QAIC_ROOT.
#pragma once

#include <iosfwd>
#include <span>
#include <string>

namespace qaic::util {

// Exit status: 0 (also when there are none); 1 qaicd or the sys tree could not be read;
// UsageError (2) for a bad command line.
int runListCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace qaic::util
