// SPDX-License-Identifier: Apache-2.0
// qaic-util create: asks qaicd for a partition and holds its lease, until SIGINT/SIGTERM or for
// the life of a command run inside it (with QAIC_PARTITION=<id> in its environment).
#pragma once

#include <iosfwd>
#include <span>
#include <string>

namespace qaic::util {

// Exit status: 0 (held until a signal); the command's own status (128 + signal when killed, 127
// when it could not start); 1 qaicd is not running or refused (the message names the resource);
// UsageError (2) for a bad command line, resources file or container.
int runCreateCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace qaic::util
