#include "Options.hpp"

#include <charconv>
#include <cstdlib>

#include "Config.hpp"
#include "qaicd/QaicdClient.hpp"

namespace qaic::qaicd {

const char* const kUsage =
    "Usage: qaicd [--root DIR] [--socket PATH] [--config FILE] [--daemon] [--poll-ms N] [-v] [--help]\n"
    "  --root DIR      devices under DIR/dev/accel and DIR/sys/class/accel (default $QAIC_ROOT or /)\n"
    "  --socket PATH   the Unix socket to serve (default $QAICD_SOCKET or /run/qaic/qaicd.sock)\n"
    "  --config FILE   JSON: poll_ms and static_partitions (docs/qaicd.md)\n"
    "  --daemon        detach; print the daemon's pid and exit 0 once the socket accepts\n"
    "  --poll-ms N     how often an emulated root is rescanned (default 250)\n"
    "  -v, --verbose   log connections, leases and devices to stderr\n"
    "  -h, --help      this text\n"
    "  --version       print the version and exit\n"
    "\n"
    "Under systemd, qaicd.socket passes the listening socket (socket activation, --socket is then\n"
    "ignored) and qaicd.service (Type=notify) learns of readiness through sd_notify; without\n"
    "systemd qaicd binds --socket itself.\n"
    "\n"
    "Exit status: 0 clean stop (SIGTERM, SIGINT); 1 start failure; 2 bad arguments or\n"
    "configuration.\n";

CommandLine parseCommandLine(const std::vector<std::string>& args) {
  CommandLine line;
  auto value = [&](std::size_t& i, const std::string& name) -> std::string {
    if (i + 1 >= args.size()) throw UsageError(name + " needs a value");
    return args[++i];
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--root") line.root = value(i, a);
    else if (a == "--socket") line.socket = value(i, a);
    else if (a == "--config") line.config = value(i, a);
    else if (a == "--daemon") line.daemon = true;
    else if (a == "-v" || a == "--verbose") line.verbose = true;
    else if (a == "-h" || a == "--help") line.help = true;
    else if (a == "--version") line.version = true;
    else if (a == "--poll-ms") {
      const std::string text = value(i, a);
      unsigned ms = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
      if (ec != std::errc() || end != text.data() + text.size() || ms < kMinPollMs || ms > kMaxPollMs)
        throw UsageError("--poll-ms: \"" + text + "\" is not an integer in " + std::to_string(kMinPollMs) +
                         ".." + std::to_string(kMaxPollMs));
      line.pollMs = ms;
    } else {
      throw UsageError("unknown argument \"" + a + "\"");
    }
  }
  if (line.root.empty()) {
    const char* env = std::getenv("QAIC_ROOT");
    line.root = env != nullptr && *env != '\0' ? env : "/";
  }
  if (line.socket.empty()) line.socket = defaultQaicdSocket();
  return line;
}

}  // namespace qaic::qaicd
