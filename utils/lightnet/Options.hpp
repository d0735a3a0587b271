// SPDX-License-Identifier: Apache-2.0
// lightnet's command line (lightnet-ops.md "The lightnet command").
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace qaic::lightnet {

struct Options {
  bool help = false;
  bool version = false;
  std::string outfile = "out.json";  // "-" stdout, "!" none
  std::string target = "cpu";
  std::string datafile;
  bool compileOnly = false;
  bool runOnly = false;
  bool debug = false;
  bool warnings = true;        // -Wwarn / -w / -Wno-warn
  bool interWarnings = false;  // -Winter / -Wno-inter: tensors computed but never read
  std::string source;          // "-" = stdin; empty = none given
  // Project extensions for exchanging raw buffers with qaic-runner and its batch JSON:
  std::vector<std::pair<std::string, std::string>> rawInputs;  // --input BUFFER=FILE (raw bytes)
  std::string outputDir;                                       // --output-dir DIR: each io output as DIR/<buffer>.raw
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws UsageError for an unknown option, a missing option value or a second SOURCE.
Options parseOptions(const std::vector<std::string>& args);

std::string usageText();

}  // namespace qaic::lightnet
