// SPDX-License-Identifier: Apache-2.0
// qaic-emu: the emulated qaic kernel driver and AIC100 devices, served over FUSE.
//   qaic-emu --root DIR [--config FILE] [--devices N] [--daemon] [--foreground] [-v]
//            [--trace-requests]
//   qaic-emu [--root DIR] [--config FILE] [--devices N] --namespace -- COMMAND [ARG...]
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ComputeThreadsWaitPolicy.hpp"
#include "Config.hpp"
#include "Emulator.hpp"
#include "FreedMemory.hpp"
#include "Log.hpp"
#include "PrivateNamespace.hpp"
#include "QaicVersion.hpp"

namespace {

using namespace qaic::emu;

constexpr const char* kUsage =
    "Usage: qaic-emu --root DIR [--config FILE] [--devices N] [--daemon] [--log FILE] [--foreground] [-v]\n"
    "                [--trace-requests]\n"
    "       qaic-emu [--root DIR] [options] --namespace -- COMMAND [ARG...]\n"
    "  --root DIR     mount point; devices appear at DIR/dev/accel/accelN and\n"
    "                 DIR/sys/class/accel/accelN (created if missing)\n"
    "  --config FILE  JSON configuration (docs/emulator.md); default: one AIC100-like device\n"
    "  --devices N    N copies of the configuration's first device\n"
    "  --ddr-mb N     every device's memory (DDR) in MiB, 1 to 1048576, instead of the\n"
    "                 configuration's ddr_mb (default 16384, the card's 16 GiB)\n"
    "  --p2p-groups G the cards linked peer to peer, instead of the configuration's p2p_groups:\n"
    "                 groups separated by ':', device indices by ',' (0,1:2,3); none: no links;\n"
    "                 default: every device in one group\n"
    "  --daemon       detach; exit 0 once the tree is visible\n"
    "  --log FILE     append what would go to stderr (errors; with -v, events; a sanitizer's\n"
    "                 report) to FILE: a daemon's from when it is ready, otherwise from the\n"
    "                 start; without it a daemon's messages are discarded unless -v\n"
    "  --foreground   stay attached (the default)\n"
    "  -v, --verbose  log control-plane events\n"
    "  --no-passthrough\n"
    "                 serve device nodes without FUSE passthrough: mmap of a node is then\n"
    "                 ENODEV and clients map the node's memory file in the shm directory\n"
    "  --namespace -- COMMAND [ARG...]\n"
    "                 serve, run COMMAND in a private mount namespace where DIR/dev/accel is\n"
    "                 /dev/accel and DIR/sys is /sys (SYSTEMD_DEVICE_VERIFY_SYSFS=0 for libudev,\n"
    "                 QAIC_ROOT unset), stop when it ends and exit with its status (126: no\n"
    "                 namespace, 127: COMMAND not run); without --root, DIR is a fresh\n"
    "                 directory, removed afterwards\n"
    "  --trace-requests\n"
    "                 log one line per request a device ends, in the device's order: DBC,\n"
    "                 request id, completion code, bytes moved to and from the device\n"
    "  -h, --help     this text\n"
    "  --version      print the version and exit\n"
    "\n"
    "Runs until SIGTERM or SIGINT (in-flight work fails with ABORTED, the tree is unmounted, exit\n"
    "0). As root it mounts directly; as a user it mounts through fusermount3 when /dev/fuse is open\n"
    "to users. Under systemd (qaic-emu@.service, Type=notify) it reports READY=1 once the tree\n"
    "answers.\n"
    "\n"
    "Exit status: 0 clean stop; 1 the mount or a device failed; 2 bad arguments or configuration;\n"
    "with --namespace, COMMAND's.\n";

struct Options {
  std::string root;
  std::string config;
  std::string log;  // --log: stderr's destination
  int devices = 0;
  uint64_t ddrMb = 0;                  // 0: each device's configured ddr_mb
  std::optional<P2pGroups> p2pGroups;  // --p2p-groups, instead of the configuration's
  bool daemon = false;
  bool passthrough = true;
  bool inNamespace = false;
  std::vector<std::string> command;  // --namespace: what to run there
};

int usageError(const std::string& message) {
  std::cerr << "qaic-emu: " << message << "\n" << kUsage;
  return 2;
}

// Waits for SIGTERM/SIGINT (blocked in every thread) or for the mount to go away.
void serveUntilSignalled(Emulator& emu) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  const timespec tick{0, 200'000'000};
  while (emu.serving()) {
    int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      logInfo(std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT"));
      return;
    }
  }
  logError("the file system at " + emu.root() + " was unmounted from outside; stopping");
}

void redirectToDevNull(int fd) {
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0) return;
  dup2(null, fd);
  close(null);
}

// Opened before the fork (so that a bad path is the starter's error) and kept open, not
// close-on-exec'd away, until it replaces stderr.
int openLog(const std::string& path) { return open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644); }

void redirectToLog(int logFd) {
  dup2(logFd, STDERR_FILENO);
  close(logFd);
}

int run(const Options& opt, int readyFd, int logFd) {
  EmuConfig config;
  try {
    if (!opt.config.empty()) config = loadConfig(opt.config);
  } catch (const ConfigError& e) {
    logError(e.what());
    return 2;
  }
  if (opt.devices > 0) config.devices.assign(static_cast<std::size_t>(opt.devices), config.devices.front());
  if (opt.p2pGroups) config.p2pGroups = opt.p2pGroups;
  try {
    const std::string source = opt.p2pGroups || opt.config.empty() ? std::string("qaic-emu") : opt.config;
    resolveP2pGroups(config, source, opt.p2pGroups ? "--p2p-groups" : "p2p_groups");
  } catch (const ConfigError& e) {
    logError(e.what());
    return 2;
  }
  if (opt.ddrMb > 0)
    for (auto& device : config.devices) device.ddrMb = opt.ddrMb;
  config.passthrough = opt.passthrough;
  try {
    Emulator emu(config);
    emu.start(opt.root);
    // start() returned once the kernel's INIT was served: the tree answers lookups now.
    // qaic-emu@.service (Type=notify) starts its dependents from here; a no-op without systemd.
    sd_notify(0, "READY=1");
    if (readyFd >= 0) {
      const char ok = '1';
      [[maybe_unused]] ssize_t w = write(readyFd, &ok, 1);
      close(readyFd);
      // A daemon must not hold its starter's pipes open (`pid=$(qaic-emu --daemon)` would
      // wait forever); with -v (and no --log) it keeps logging to the inherited stderr.
      if (logFd >= 0)
        redirectToLog(logFd);
      else if (!verbose() && !traceRequests())
        redirectToDevNull(STDERR_FILENO);
    }
    int status = 0;
    if (opt.inNamespace)
      status = runInEmulatedNamespace(opt.root, opt.command);
    else
      serveUntilSignalled(emu);
    sd_notify(0, "STOPPING=1");
    emu.stop();
    return status;
  } catch (const std::exception& e) {
    logError(e.what());
    return 1;
  }
}

// --namespace without --root: a fresh mount point, removed once the emulator unmounted it.
int runWithFreshRoot(Options opt) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/qaic-emu-ns.XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    std::cerr << "qaic-emu: mkdtemp " << dir << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  opt.root = dir;
  const int status = run(opt, -1, -1);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return status;
}

// Forks; the parent returns the child's verdict: 0 once the child reported the tree visible.
int daemonize(const Options& opt, int logFd) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return usageError(std::string("pipe: ") + std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0) return usageError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(pipefd[0]);
    setsid();
    redirectToDevNull(STDIN_FILENO);
    redirectToDevNull(STDOUT_FILENO);
    int rc = run(opt, pipefd[1], logFd);
    _exit(rc);
  }
  close(pipefd[1]);
  if (logFd >= 0) close(logFd);
  pollfd p{pipefd[0], POLLIN, 0};
  char verdict = 0;
  // Starting takes well under a second; a minute means something is stuck.
  int ready = poll(&p, 1, 60000);
  ssize_t n = ready > 0 ? read(pipefd[0], &verdict, 1) : -1;
  close(pipefd[0]);
  if (n == 1 && verdict == '1') {
    std::printf("%d\n", static_cast<int>(pid));
    return 0;
  }
  std::cerr << "qaic-emu: the daemon did not become ready\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  qaic::emu::execWithPassiveComputeThreads(argv);
  qaic::emu::keepLargeAllocationsReturnable();
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) return nullptr;
      (void)name;
      return argv[++i];
    };
    if (a == "--root") {
      const char* v = value("--root");
      if (!v) return usageError("--root needs a directory");
      opt.root = v;
    } else if (a == "--config") {
      const char* v = value("--config");
      if (!v) return usageError("--config needs a file");
      opt.config = v;
    } else if (a == "--devices") {
      const char* v = value("--devices");
      char* end = nullptr;
      long n = v ? std::strtol(v, &end, 10) : 0;
      if (!v || *end != '\0' || n < 1 || n > 64) return usageError("--devices needs a count from 1 to 64");
      opt.devices = static_cast<int>(n);
    } else if (a == "--ddr-mb") {
      const char* v = value("--ddr-mb");
      char* end = nullptr;
      const unsigned long long mb = v ? std::strtoull(v, &end, 10) : 0;
      // The bounds of the configuration's ddr_mb.
      if (!v || *v == '-' || *end != '\0' || mb < 1 || mb > (1u << 20))
        return usageError("--ddr-mb needs a size in MiB from 1 to 1048576");
      opt.ddrMb = mb;
    } else if (a == "--p2p-groups") {
      const char* v = value("--p2p-groups");
      if (!v) return usageError("--p2p-groups needs groups such as 0,1:2,3, or none");
      try {
        opt.p2pGroups = parseP2pGroupsOption(v);
      } catch (const ConfigError& e) {
        return usageError(e.what());
      }
    } else if (a == "--log") {
      const char* v = value("--log");
      if (!v || *v == '\0') return usageError("--log needs a file");
      opt.log = v;
    } else if (a == "--daemon") {
      opt.daemon = true;
    } else if (a == "--foreground") {
      opt.daemon = false;
    } else if (a == "-v" || a == "--verbose") {
      setVerbose(true);
    } else if (a == "--no-passthrough") {
      opt.passthrough = false;
    } else if (a == "--trace-requests") {
      setTraceRequests(true);
    } else if (a == "--namespace") {
      opt.inNamespace = true;
    } else if (a == "--") {
      opt.command.assign(argv + i + 1, argv + argc);
      break;
    } else if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--version") {
      qaic::printVersion("qaic-emu");
      return 0;
    } else {
      return usageError("unknown argument '" + a + "'");
    }
  }
  if (opt.inNamespace && opt.command.empty()) return usageError("--namespace needs '-- COMMAND'");
  if (!opt.inNamespace && !opt.command.empty()) return usageError("a command after '--' needs --namespace");
  if (opt.inNamespace && opt.daemon) return usageError("--namespace runs in the foreground");
  if (opt.root.empty() && !opt.inNamespace) return usageError("--root is required");

  // Signals are taken synchronously by the main thread; every other thread inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  // The namespace's command ending wakes the main thread's wait (runInEmulatedNamespace).
  if (opt.inNamespace) sigaddset(&set, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  int logFd = -1;
  if (!opt.log.empty()) {
    logFd = openLog(opt.log);
    if (logFd < 0) return usageError("--log " + opt.log + ": " + std::strerror(errno));
    if (!opt.daemon) redirectToLog(std::exchange(logFd, -1));
  }
  if (opt.inNamespace && opt.root.empty()) return runWithFreshRoot(opt);
  return opt.daemon ? daemonize(opt, logFd) : run(opt, -1, -1);
}
