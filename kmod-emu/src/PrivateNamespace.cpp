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
#include <cstdlib>
#include <cstring>

namespace qaic::emu {
namespace {

std::string failure(const std::string& what) { return what + ": " + std::strerror(errno); }

bool writeFile(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// An ordinary user may still make a mount namespace inside a user namespace of its own, where it
// maps only itself: it keeps its identity towards the FUSE server and every file it owns.
std::string unshareMounts() {
  if (::unshare(CLONE_NEWNS) == 0) return {};
  if (errno != EPERM || ::geteuid() == 0) return failure("unshare(CLONE_NEWNS)");
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return failure("unshare(CLONE_NEWUSER | CLONE_NEWNS)");
  if (!writeFile("/proc/self/setgroups", "deny") ||
      !writeFile("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
      !writeFile("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1"))
    return failure("mapping the user namespace");
  return {};
}

}  // namespace

std::string enterEmulatedNamespace(const std::string& root) {
  if (std::string err = unshareMounts(); !err.empty()) return err;
  // Nothing mounted here may reach the host's namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return failure("making / private");
  // A host without the qaic driver has no /dev/accel to mount over; the empty directory made
  // here (in the host's /dev) is what udev would have made.
  struct stat st {};
  if (::stat("/dev/accel", &st) != 0 && ::mkdir("/dev/accel", 0755) != 0 && errno != EEXIST)
    return failure("mkdir /dev/accel");
  const std::string accel = root + "/dev/accel";
  if (::mount(accel.c_str(), "/dev/accel", nullptr, MS_BIND | MS_REC, nullptr) != 0)
    return failure("binding " + accel + " over /dev/accel");
  const std::string sys = root + "/sys";
  if (::mount(sys.c_str(), "/sys", nullptr, MS_BIND | MS_REC, nullptr) != 0)
    return failure("binding " + sys + " over /sys");
  // libudev accepts a /sys that is not a sysfs mount only with this; the devices under
  // /sys/devices it checks by their uevent files, which the tree has.
  ::setenv("SYSTEMD_DEVICE_VERIFY_SYSFS", "0", 1);
  // The programs inside find the devices at / like on a host.
  ::unsetenv("QAIC_ROOT");
  return {};
}

int runInEmulatedNamespace(const std::string& root, const std::vector<std::string>& command) {
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
    if (std::string err = enterEmulatedNamespace(root); !err.empty()) {
      std::fprintf(stderr, "qaic-emu: --namespace: %s\n", err.c_str());
      ::_exit(126);
    }
    std::vector<char*> argv;
    for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "qaic-emu: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  const timespec tick{0, 20'000'000};
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (done < 0 && errno != EINTR) return 126;
    // The emulator keeps serving until the command ends; a stop signal goes to the command.
    if (const int sig = ::sigtimedwait(&stopSignals, nullptr, &tick); sig > 0) ::kill(child, sig);
  }
}

}  // namespace qaic::emu
