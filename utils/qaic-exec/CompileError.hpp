// SPDX-License-Identifier: Apache-2.0
// A problem qaic-exec finds in its input beyond what the IR library reports (host-only ops,
// a missing io section, too many buffers, a missing weight). The message names file and op.
#pragma once

#include <stdexcept>

namespace qaic::compiler {

class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace qaic::compiler
