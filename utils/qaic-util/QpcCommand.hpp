// SPDX-License-Identifier: Apache-2.0
// `qaic-util --qpc DIR`: prints a program container, one "Key:Value" per line (tab indented)
// under "Program N", "Buffer N", "Allowed Shapes" and "Constant N" headings.
#pragma once

#include <iosfwd>
#include <string>

namespace qaic::util {

// Returns the exit status: 0, or 2 after printing the loader's error to `err`.
int runQpcCommand(const std::string& dir, std::ostream& out, std::ostream& err);

}  // namespace qaic::util
