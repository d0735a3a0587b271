// SPDX-License-Identifier: Apache-2.0
#include "Options.hpp"

#include <charconv>
#include <cstdlib>
#include <filesystem>

#include "Config.hpp"
#include "qaicd/QaicdClient.hpp"

namespace qaic::qaicd {

const char* const kUsage =
    "Usage: qaicd [--root DIR] [--socket PATH] [--config FILE] [--kubelet-dir DIR | --no-kubelet]\n"
    "             [--kubelet-mounts-only] [--daemon] [--poll-ms N] [--device-timeout-ms N] [-v] [--help]\n"
    "  --root DIR         devices under DIR/dev/accel and DIR/sys/class/accel (default $QAIC_ROOT or /)\n"
    "  --socket PATH      the Unix socket to serve (default $QAICD_SOCKET or /run/qaic/qaicd.sock)\n"
    "  --config FILE      JSON: poll_ms, device_timeout_ms, static_partitions, k8s_profiles (docs/qaicd.md,\n"
    "                     docs/kubernetes.md)\n"
    "  --kubelet-dir DIR  be the kubelet's device plugin: serve qualcomm.com/qaic (whole devices) and one\n"
    "                     resource per k8s_profiles entry on sockets in DIR, registered with\n"
    "                     DIR/kubelet.sock (default with the root /: /var/lib/kubelet/device-plugins\n"
    "                     when it exists; with another root: off unless given)\n"
    "  --no-kubelet       no device plugin, even on a Kubernetes node\n"
    "  --kubelet-mounts-only\n"
    "                     with an emulated root: give containers qaic-emu's files as mounts only, no\n"
    "                     DeviceSpec (container runtimes refuse one that is not a device node)\n"
    "  --daemon           detach; print the daemon's pid and exit 0 once the socket accepts\n"
    "  --poll-ms N        how often an emulated root is rescanned (default 250)\n"
    "  --device-timeout-ms N\n"
    "                     how long a request waits for a device that does not answer before it is\n"
    "                     refused with ETIMEDOUT, 100..600000 (default 5000); other devices and\n"
    "                     clients are served meanwhile\n"
    "  -v, --verbose      log connections, leases, devices and kubelet calls to stderr\n"
    "  -h, --help         this text\n"
    "  --version          print the version and exit\n"
    "\n"
    "Under systemd, qaicd.socket passes the listening socket (socket activation, --socket is then\n"
    "ignored) and qaicd.service (Type=notify) learns of readiness through sd_notify; without\n"
    "systemd qaicd binds --socket itself.\n"
    "\n"
    "Exit status: 0 clean stop (SIGTERM, SIGINT); 1 start failure; 2 bad arguments or\n"
    "configuration.\n";

namespace {

unsigned milliseconds(const std::string& name, const std::string& text, unsigned min, unsigned max) {
  unsigned ms = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
  if (ec != std::errc() || end != text.data() + text.size() || ms < min || ms > max)
    throw UsageError(name + ": \"" + text + "\" is not an integer in " + std::to_string(min) + ".." +
                     std::to_string(max));
  return ms;
}

}  // namespace

CommandLine parseCommandLine(const std::vector<std::string>& given) {
  // "--root=/r" is "--root /r", as manifests and unit files often write it.
  std::vector<std::string> args;
  for (const std::string& a : given) {
    const auto eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const bool valued = name == "--root" || name == "--socket" || name == "--config" || name == "--kubelet-dir" ||
                        name == "--poll-ms" || name == "--device-timeout-ms";
    if (eq != std::string::npos && valued) {
      args.push_back(name);
      args.push_back(a.substr(eq + 1));
    } else {
      args.push_back(a);
    }
  }
  CommandLine line;
  auto value = [&](std::size_t& i, const std::string& name) -> std::string {
    if (i + 1 >= args.size()) throw UsageError(name + " needs a value");
    return args[++i];
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--root")
      line.root = value(i, a);
    else if (a == "--socket")
      line.socket = value(i, a);
    else if (a == "--config")
      line.config = value(i, a);
    else if (a == "--kubelet-dir") {
      line.kubeletDir = value(i, a);
      if (line.kubeletDir->empty()) throw UsageError("--kubelet-dir: needs a directory");
    } else if (a == "--no-kubelet")
      line.noKubelet = true;
    else if (a == "--kubelet-mounts-only")
      line.kubeletMountsOnly = true;
    else if (a == "--daemon")
      line.daemon = true;
    else if (a == "-v" || a == "--verbose")
      line.verbose = true;
    else if (a == "-h" || a == "--help")
      line.help = true;
    else if (a == "--version")
      line.version = true;
    else if (a == "--poll-ms")
      line.pollMs = milliseconds(a, value(i, a), kMinPollMs, kMaxPollMs);
    else if (a == "--device-timeout-ms")
      line.deviceTimeoutMs = milliseconds(a, value(i, a), kMinDeviceTimeoutMs, kMaxDeviceTimeoutMs);
    else {
      throw UsageError("unknown argument \"" + a + "\"");
    }
  }
  if (line.root.empty()) {
    const char* env = std::getenv("QAIC_ROOT");
    line.root = env != nullptr && *env != '\0' ? env : "/";
  }
  if (line.socket.empty()) line.socket = defaultQaicdSocket();
  if (line.kubeletDir && line.noKubelet) throw UsageError("--kubelet-dir and --no-kubelet contradict each other");
  return line;
}

std::string kubeletDirectory(const CommandLine& line) {
  std::error_code ec;
  if (line.noKubelet) return {};
  if (line.kubeletDir) return std::filesystem::absolute(*line.kubeletDir, ec).lexically_normal().string();
  if (std::filesystem::equivalent(line.root, "/", ec) && std::filesystem::is_directory(kDefaultKubeletDir, ec))
    return kDefaultKubeletDir;
  return {};
}

}  // namespace qaic::qaicd
