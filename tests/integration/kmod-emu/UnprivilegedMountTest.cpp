// SPDX-License-Identifier: Apache-2.0
// qaic-emu as an ordinary user. Each case forks a child that enters a private mount namespace,
// puts its own /dev/fuse node there (mode 0666 as systemd-udev makes it, or 0600 root as on a
// machine without udev; the host's node is never touched), drops to uid/gid nobody (65534)
// and runs the real qaic-emu. libfuse then mounts through the setuid fusermount3, which is the
// only way an ordinary user mounts. The child reports what it found over a pipe; its namespace,
// and any mount left in it, ends with it.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "DeviceAttributes.hpp"
#include "EmulatorProcess.hpp"
#include "FusermountMount.hpp"
#include "Paths.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace std::chrono_literals;

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

// In the child, still root: a private mount namespace whose /dev/fuse is a node of the host's
// FUSE device with `mode`, on a tmpfs mounted at `nodeDir`. "" or what failed.
std::string usePrivateFuseDevice(const std::string& nodeDir, mode_t mode) {
  struct stat real;
  if (stat("/dev/fuse", &real) != 0 || !S_ISCHR(real.st_mode))
    return "/dev/fuse is not a character device on this host";
  if (unshare(CLONE_NEWNS) != 0) return std::string("unshare: ") + std::strerror(errno);
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return std::string("making / private: ") + std::strerror(errno);
  if (mount("tmpfs", nodeDir.c_str(), "tmpfs", MS_NOSUID, "mode=0755") != 0)
    return std::string("tmpfs: ") + std::strerror(errno);
  const std::string node = nodeDir + "/fuse";
  if (mknod(node.c_str(), S_IFCHR | 0600, real.st_rdev) != 0 || chmod(node.c_str(), mode) != 0)
    return std::string("mknod: ") + std::strerror(errno);
  if (mount(node.c_str(), "/dev/fuse", nullptr, MS_BIND, nullptr) != 0)
    return std::string("bind over /dev/fuse: ") + std::strerror(errno);
  return "";
}

struct ChildOutcome {
  int exitCode = -1;   // -1: did not finish in time (killed)
  std::string report;  // empty when every check in the child passed
};

// Runs `body` in a forked child as nobody, with a private /dev/fuse of `fuseMode`. `body`
// returns "" or what failed; the child writes that to its stdout, which the test captures.
ChildOutcome runAsNobody(mode_t fuseMode, const std::function<std::string()>& body,
                         std::chrono::seconds timeout = 180s) {
  TempDir nodeDir("qaic-emu-fusedev");
  ProcessOptions options;
  options.captureStdout = true;
  Process child = Process::fork(
      [&]() -> int {
        std::string report = usePrivateFuseDevice(nodeDir.str(), fuseMode);
        if (report.empty() && (setgroups(0, nullptr) != 0 || setgid(kNogroup) != 0 || setuid(kNobody) != 0))
          report = std::string("dropping to nobody: ") + std::strerror(errno);
        if (report.empty() && (getuid() != kNobody || geteuid() != kNobody)) report = "still privileged after setuid";
        // An exception must not escape into gtest's frames: the child would go on running tests.
        try {
          if (report.empty()) report = body();
        } catch (const std::exception& e) {
          report = std::string("exception: ") + e.what();
        }
        [[maybe_unused]] ssize_t w = write(STDOUT_FILENO, report.data(), report.size());
        return 0;
      },
      options);
  const ExitStatus status = child.finish(timeout);
  return {status.exited && !status.timedOut ? status.code : -1, child.output()};
}

// The mountinfo line of the mount at `dir` in this process's namespace, or "".
std::string mountInfo(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, rootField, mountPoint;
    fields >> id >> parent >> devno >> rootField >> mountPoint;
    if (mountPoint == dir) return line;
  }
  return "";
}

// The emulator's root: a directory nobody owns (fusermount3 mounts only on the user's own).
class NobodysRoot {
 public:
  NobodysRoot() {
    if (chown(dir_.path().c_str(), kNobody, kNogroup) != 0) error_ = std::string("chown: ") + std::strerror(errno);
  }
  std::string path() const { return dir_.str(); }
  const std::string& error() const { return error_; }

 private:
  TempDir dir_{"qaic-emu-user"};
  std::string error_;
};

// What an ordinary user must see through a mount with a root-only node policy: the tree and
// its attributes served, the device node owned by root with 0600, and open() refused.
std::string checkServedTree(const EmulatorProcess& emu) {
  std::ostringstream failures;
  const std::string node = emu.nodePath(0).string();
  struct stat st;
  if (stat(node.c_str(), &st) != 0) return node + ": " + std::strerror(errno);
  if (st.st_uid != 0 || (st.st_mode & 0777) != 0600)
    failures << node << ": owner " << st.st_uid << " mode " << std::oct << (st.st_mode & 0777) << std::dec
             << ", want root 0600; ";
  if (emu.attribute(0, driver::sysfs::kEmuStatus) != "Ready")
    failures << "status reads '" << emu.attribute(0, driver::sysfs::kEmuStatus) << "', want Ready; ";
  if (emu.attribute(0, driver::sysfs::kEmuPid) != std::to_string(emu.pid()))
    failures << driver::sysfs::kEmuPid << " does not name the emulator; ";
  const int fd = open(node.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    close(fd);
    failures << "an ordinary user opened the root-only node; ";
  } else if (errno != EACCES) {
    failures << "open of the root-only node: " << std::strerror(errno) << ", want EACCES; ";
  }
  return failures.str();
}

// A mount an ordinary user made: through fusermount3 (user_id is the user), without allow_other
// (which needs user_allow_other in /etc/fuse.conf).
std::string checkUserMount(const std::string& dir) {
  const std::string line = mountInfo(dir);
  if (line.empty()) return "no mount at " + dir + "; ";
  std::string failures;
  if (line.find(" fuse.qaic-emu ") == std::string::npos) failures += "not a qaic-emu mount; ";
  if (line.find("user_id=" + std::to_string(kNobody)) == std::string::npos)
    failures += "mount not owned by nobody: " + line + "; ";
  if (line.find("allow_other") != std::string::npos) failures += "allow_other set: " + line + "; ";
  return failures;
}

class UnprivilegedMount : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_FAIL() << "these tests need root to build a private /dev/fuse and setuid() to nobody";
    ASSERT_EQ(root_.error(), "");
    ASSERT_FALSE(fusermountProgram().empty()) << "fusermount3 (package fuse3) is missing";
  }
  std::string dir() const { return root_.path(); }

 private:
  NobodysRoot root_;
};

TEST_F(UnprivilegedMount, OrdinaryUserRunsTheEmulatorThroughFusermount) {
  ChildOutcome child = runAsNobody(0666, [&]() -> std::string {
    if (const std::string why = fuseDeviceProblem(); !why.empty()) return "setup: " + why;
    EmulatorProcess emu(EmulatorOptions{R"({"nodes": {"mode": "0600", "owner": "root", "group": "root"},
                                            "compute_threads": 1})",
                                        {},
                                        dir(),
                                        true});
    std::string failures = checkUserMount(dir()) + checkServedTree(emu);
    if (!emu.stop()) failures += "SIGTERM did not end it with exit status 0 and no mount: " + emu.log() + "; ";
    if (!mountInfo(dir()).empty()) failures += "still mounted after SIGTERM; ";
    return failures;
  });
  EXPECT_EQ(child.exitCode, 0);
  EXPECT_EQ(child.report, "");
}

TEST_F(UnprivilegedMount, OrdinaryUserRestartsOverAStaleMount) {
  ChildOutcome child = runAsNobody(0666, [&]() -> std::string {
    {
      EmulatorProcess killed(EmulatorOptions{{}, {}, dir(), true});
      killed.kill();
    }
    struct stat st;
    if (stat(dir().c_str(), &st) == 0 || errno != ENOTCONN) return "no stale mount (ENOTCONN) after SIGKILL";
    EmulatorProcess emu(EmulatorOptions{{}, {}, dir(), true});  // recovers it through fusermount3 -u -z
    std::string failures = checkUserMount(dir());
    if (emu.attribute(0, driver::sysfs::kEmuStatus) != "Ready") failures += "status not Ready; ";
    if (!emu.stop()) failures += "SIGTERM: nonzero exit; ";
    if (!mountInfo(dir()).empty()) failures += "still mounted after SIGTERM; ";
    return failures;
  });
  EXPECT_EQ(child.exitCode, 0);
  EXPECT_EQ(child.report, "");
}

TEST_F(UnprivilegedMount, UnmountThroughFusermountRemovesAStaleMount) {
  ChildOutcome child = runAsNobody(0666, [&]() -> std::string {
    std::string shmDir;
    {
      EmulatorProcess killed(EmulatorOptions{{}, {}, dir(), true});
      shmDir = killed.attribute(0, driver::sysfs::kEmuShmDir);
      killed.kill();
    }
    // No emulator starts after this one to sweep its shared memory away.
    std::error_code ignored;
    if (shmDir.rfind("/dev/shm/qaic-emu.", 0) == 0) std::filesystem::remove_all(shmDir, ignored);
    if (mountInfo(dir()).empty()) return "no mount left behind by SIGKILL";
    auto r = unmountThroughFusermount(dir(), true);
    if (!r) return "unmountThroughFusermount: " + r.message();
    struct stat st;
    if (!mountInfo(dir()).empty() || stat(dir().c_str(), &st) != 0) return "the stale mount is still there";
    return "";
  });
  EXPECT_EQ(child.exitCode, 0);
  EXPECT_EQ(child.report, "");
}

TEST_F(UnprivilegedMount, UnmountOfAPathThatIsNotMountedFailsNamingIt) {
  ChildOutcome child = runAsNobody(0666, [&]() -> std::string {
    auto r = unmountThroughFusermount(dir(), false);
    if (r) return "unmounting a plain directory succeeded";
    if (r.error() != EPERM) return "errno " + std::to_string(r.error()) + ", want EPERM";
    if (r.message().find(dir()) == std::string::npos) return "message lacks the path: " + r.message();
    return "";
  });
  EXPECT_EQ(child.exitCode, 0);
  EXPECT_EQ(child.report, "");
}

TEST_F(UnprivilegedMount, WithoutAccessToDevFuseStartFailsSayingWhy) {
  ChildOutcome child = runAsNobody(0600, [&]() -> std::string {
    std::string failures;
    const std::string why = fuseDeviceProblem();
    if (why.find("/dev/fuse: Permission denied") == std::string::npos || why.find("mode 0600") == std::string::npos)
      failures += "fuseDeviceProblem says '" + why + "'; ";
    const RunResult run = runCapturing({EmulatorProcess::binary().string(), "--root", dir()}, 60s);
    if (run.exitCode != 1) failures += "exit status " + std::to_string(run.exitCode) + ", want 1; ";
    if (run.err.find("/dev/fuse") == std::string::npos || run.err.find(dir()) == std::string::npos)
      failures += "stderr does not name /dev/fuse and the root: " + run.err;
    if (!mountInfo(dir()).empty()) failures += "a mount was left behind; ";
    return failures;
  });
  EXPECT_EQ(child.exitCode, 0);
  EXPECT_EQ(child.report, "");
}

// `qaic-emu --namespace` as an ordinary user: without CAP_SYS_ADMIN the command's mount
// namespace is made inside a user namespace that maps only the user, so it keeps its identity
// towards the FUSE server (a mount without allow_other) and sees the tree at /sys and /dev/accel.
// /dev/accel must exist (a user cannot make it); the test makes it as root, as udev would.
TEST_F(UnprivilegedMount, OrdinaryUserRunsACommandInTheEmulatedNamespace) {
  const bool made = mkdir("/dev/accel", 0755) == 0;
  ASSERT_TRUE(made || errno == EEXIST) << "mkdir /dev/accel: " << std::strerror(errno);
  ChildOutcome child = runAsNobody(0666, [&]() -> std::string {
    if (const std::string why = fuseDeviceProblem(); !why.empty()) return "setup: " + why;
    const auto out = runCapturing(
        {EmulatorProcess::binary().string(), "--root", dir(), "--namespace", "--", "/bin/sh", "-c",
         "cat /sys/class/accel/accel0/qaic-emu/status; id -u; "
         "cat /sys/bus/pci/devices/0000:01:00.0/vendor; test -e /dev/accel/accel0"},
        60s);
    if (out.exitCode != 0) return "exit " + std::to_string(out.exitCode) + ": " + out.err;
    if (out.out != "Ready\n65534\n0x17cb\n") return "inside the namespace: '" + out.out + "' " + out.err;
    if (!mountInfo(dir()).empty()) return "still mounted after the command ended; ";
    return "";
  });
  EXPECT_EQ(child.exitCode, 0);
  EXPECT_EQ(child.report, "");
}

// An ordinary user's command installs the PRIME export filter inside its own user namespace
// (where it holds CAP_SYS_ADMIN), and the emulator, the same user outside, still answers it:
// the kernel tree client's plain drmPrimeHandleToFD and its other checks pass.
TEST_F(UnprivilegedMount, OrdinaryUsersPlainPrimeExportWorksInTheEmulatedNamespace) {
  const bool made = mkdir("/dev/accel", 0755) == 0;
  ASSERT_TRUE(made || errno == EEXIST) << "mkdir /dev/accel: " << std::strerror(errno);
  ChildOutcome child = runAsNobody(0666, [&]() -> std::string {
    if (const std::string why = fuseDeviceProblem(); !why.empty()) return "setup: " + why;
    const auto out = runCapturing({EmulatorProcess::binary().string(), "--root", dir(), "--namespace", "--",
                                   (buildDir() / "tests" / "qaic_kernel_tree_client").string()},
                                  60s);
    if (out.exitCode != 0) return "exit " + std::to_string(out.exitCode) + ": " + out.out + out.err;
    // An ordinary user's emulator has no FUSE passthrough: mmap of the node is ENODEV, as
    // its sysfs says; exports and imports work the same.
    for (const std::string line : {"prime /dev/accel/accel0 export 8192 bytes, import handle 1, own export back as 1\n",
                                   "mmap /dev/accel/accel0 ENODEV, passthrough 0\n"})
      if (out.out.find(line) == std::string::npos) return "no '" + line + "' in: " + out.out;
    return "";
  });
  EXPECT_EQ(child.exitCode, 0);
  EXPECT_EQ(child.report, "");
}

}  // namespace
}  // namespace qaic::emu::test
