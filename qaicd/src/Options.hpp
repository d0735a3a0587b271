// qaicd's command line.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace qaic::qaicd {

struct CommandLine {
  std::string root;          // --root, else $QAIC_ROOT, else "/"
  std::string socket;        // --socket, else $QAICD_SOCKET, else /run/qaic/qaicd.sock
  std::string config;        // --config
  std::optional<unsigned> pollMs;
  bool daemon = false;
  bool verbose = false;
  bool help = false;
  bool version = false;
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

CommandLine parseCommandLine(const std::vector<std::string>& args);
extern const char* const kUsage;

}  // namespace qaic::qaicd
