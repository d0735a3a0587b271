// SPDX-License-Identifier: Apache-2.0
#include "PrivateNamespace.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>

#include "ExportSupervisor.hpp"
#include "Log.hpp"

extern char** environ;

namespace qaic::emu {
namespace {

// Everything the child needs, made before fork: the emulator's FUSE threads run on while it
// forks, so the child may only make system calls (an allocation could wait forever for a lock
// some thread held at the fork).
struct NamespacePlan {
  std::string accel, sys;
  std::string uidMap, gidMap;
  uid_t euid = 0;
  std::vector<std::string> environment;
  std::vector<char*> argv, envp;
};

NamespacePlan planFor(const std::string& root, const std::vector<std::string>& command) {
  NamespacePlan plan;
  plan.accel = root + "/dev/accel";
  plan.sys = root + "/sys";
  plan.euid = ::geteuid();
  plan.uidMap = std::to_string(plan.euid) + " " + std::to_string(plan.euid) + " 1";
  plan.gidMap = std::to_string(::getegid()) + " " + std::to_string(::getegid()) + " 1";
  // The programs inside find the devices at / like on a host (no QAIC_ROOT); libudev accepts a
  // /sys that is not a sysfs mount only with SYSTEMD_DEVICE_VERIFY_SYSFS=0 (the devices under
  // /sys/devices it checks by their uevent files, which the tree has).
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (!text.starts_with("QAIC_ROOT=") && !text.starts_with("SYSTEMD_DEVICE_VERIFY_SYSFS="))
      plan.environment.emplace_back(text);
  }
  plan.environment.emplace_back("SYSTEMD_DEVICE_VERIFY_SYSFS=0");
  for (std::string& entry : plan.environment) plan.envp.push_back(entry.data());
  plan.envp.push_back(nullptr);
  for (const std::string& word : command) plan.argv.push_back(const_cast<char*>(word.c_str()));
  plan.argv.push_back(nullptr);
  return plan;
}

// Async-signal-safe reporting for the child: "qaic-emu: --namespace: WHAT[ SUBJECT]: ERRNO TEXT";
// returns false, the outcome of the step that failed.
bool fail(const char* what, const char* subject = nullptr) {
  const int saved = errno;
  auto put = [](const char* text) { [[maybe_unused]] auto n = ::write(STDERR_FILENO, text, std::strlen(text)); };
  put("qaic-emu: --namespace: ");
  put(what);
  if (subject != nullptr) {
    put(" ");
    put(subject);
  }
  put(": ");
  const char* description = ::strerrordesc_np(saved);
  put(description != nullptr ? description : "unknown error");
  put("\n");
  return false;
}

bool writeFile(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// An ordinary user may still make a mount namespace inside a user namespace of its own, where it
// maps only itself: it keeps its identity towards the FUSE server and every file it owns.
bool unshareMounts(const NamespacePlan& plan) {
  if (::unshare(CLONE_NEWNS) == 0) return true;
  if (errno != EPERM || plan.euid == 0) return fail("unshare(CLONE_NEWNS)");
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return fail("unshare(CLONE_NEWUSER | CLONE_NEWNS)");
  if (!writeFile("/proc/self/setgroups", "deny") || !writeFile("/proc/self/uid_map", plan.uidMap) ||
      !writeFile("/proc/self/gid_map", plan.gidMap))
    return fail("mapping the user namespace");
  return true;
}

bool enterEmulatedNamespace(const NamespacePlan& plan) {
  if (!unshareMounts(plan)) return false;
  // Nothing mounted here may reach the host's namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return fail("making / private");
  // A host without the qaic driver has no /dev/accel to mount over; the empty directory made
  // here (in the host's /dev) is what udev would have made.
  struct stat st {};
  if (::stat("/dev/accel", &st) != 0 && ::mkdir("/dev/accel", 0755) != 0 && errno != EEXIST)
    return fail("mkdir /dev/accel");
  if (::mount(plan.accel.c_str(), "/dev/accel", nullptr, MS_BIND | MS_REC, nullptr) != 0)
    return fail("binding over /dev/accel:", plan.accel.c_str());
  if (::mount(plan.sys.c_str(), "/sys", nullptr, MS_BIND | MS_REC, nullptr) != 0)
    return fail("binding over /sys:", plan.sys.c_str());
  return true;
}

// The command's PRIME exports come to a supervisor thread of this process, which owns it until
// the command has ended (ExportSupervisor.hpp); without one, a plain export gets EBADF.
std::optional<ExportSupervisor> superviseExports(const std::string& root, ExportInterception& interception) {
  UniqueFd listener = interception.receiveListener();
  if (!listener) return std::nullopt;
  try {
    return std::optional<ExportSupervisor>(std::in_place, root, std::move(listener));
  } catch (const std::system_error& e) {
    logError(std::string(e.what()) + " (exports of the command fail with ENOSYS)");
    return std::nullopt;
  }
}

}  // namespace

int runInEmulatedNamespace(const std::string& root, const std::vector<std::string>& command) {
  const NamespacePlan plan = planFor(root, command);
  std::optional<ExportInterception> interception;
  try {
    interception.emplace();
  } catch (const std::system_error& e) {
    logError(e.what());
    return 126;
  }
  const pid_t child = ::fork();
  if (child < 0) {
    std::perror("qaic-emu: fork");
    return 126;
  }
  if (child == 0) {
    // The emulator's threads take SIGTERM/SIGINT synchronously (blocked); the command gets them
    // as any program does.
    sigset_t none;
    sigemptyset(&none);
    ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    if (!enterEmulatedNamespace(plan)) ::_exit(126);
    interception->installInChild();  // failed, it said why; the command runs without it
    ::execvpe(plan.argv[0], plan.argv.data(), plan.envp.data());
    fail("cannot run", plan.argv[0]);
    ::_exit(127);
  }
  const std::optional<ExportSupervisor> supervisor = superviseExports(root, *interception);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGCHLD);
  // SIGCHLD wakes the wait when the command ends; the tick only bounds it should the caller not
  // have blocked SIGCHLD.
  const timespec tick{1, 0};
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (done < 0 && errno != EINTR) return 126;
    // The emulator keeps serving until the command ends; a stop signal goes to the command.
    if (const int sig = ::sigtimedwait(&signals, nullptr, &tick); sig == SIGTERM || sig == SIGINT) ::kill(child, sig);
  }
}

}  // namespace qaic::emu
