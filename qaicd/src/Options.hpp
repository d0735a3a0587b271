// SPDX-License-Identifier: Apache-2.0
// qaicd's command line.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace qaic::qaicd {

struct CommandLine {
  std::string root;    // --root, else $QAIC_ROOT, else "/"
  std::string socket;  // --socket, else $QAICD_SOCKET, else /run/qaic/qaicd.sock
  std::string config;  // --config
  std::optional<unsigned> pollMs;
  std::optional<unsigned> deviceTimeoutMs;
  std::optional<std::string> kubeletDir;  // --kubelet-dir
  bool noKubelet = false;                 // --no-kubelet
  bool kubeletMountsOnly = false;         // --kubelet-mounts-only
  bool daemon = false;
  bool verbose = false;
  bool help = false;
  bool version = false;
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr const char* kDefaultKubeletDir = "/var/lib/kubelet/device-plugins";

// Options with a value may also be written "--name=value".
CommandLine parseCommandLine(const std::vector<std::string>& args);
// Where the kubelet device plugin serves, or "" for no plugin: --kubelet-dir; else, for the
// real root "/" only, kDefaultKubeletDir when that directory exists (a Kubernetes node); never
// with --no-kubelet. An emulated root is offered to a kubelet only when asked for.
std::string kubeletDirectory(const CommandLine& line);
extern const char* const kUsage;

}  // namespace qaic::qaicd
