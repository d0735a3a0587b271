// SPDX-License-Identifier: Apache-2.0
// The qaic-util command line. Each mode is a separate command file: device queries (-q, -d, -t,
// -j), --qpc, and the partition subcommands create, list and remove, which parse their own
// arguments.
#pragma once

#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace qaic::util {

enum class Mode { Help, Version, Qpc, Query, Create, List, Remove };

struct UtilOptions {
  Mode mode = Mode::Help;
  std::string qpcDir;                                        // --qpc DIR
  std::vector<unsigned> devices;                             // -d ID, repeatable
  bool json = false;                                         // -j
  std::string jsonFile;                                      // -j FILE
  std::vector<std::pair<std::string, std::string>> filters;  // -f FIELD==VALUE (second: "==VALUE" or "!=VALUE")
  std::optional<unsigned> refreshSeconds;                    // -t N
  std::optional<unsigned> refreshCount;                      // --count N (with -t)
  std::vector<std::string> commandArgs;                      // create / list / remove: what follows the word
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

UtilOptions parseUtilOptions(std::span<const std::string> args);  // throws UsageError
std::string utilHelpText();

}  // namespace qaic::util
