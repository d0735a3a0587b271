// SPDX-License-Identifier: Apache-2.0
// What PermissionTest (emu_uapi_tests) leaves out: with a node every user may open, another uid
// still cannot reach a user's activation (DBC_INFO is EPERM, the window file is 0600 and owned by
// the owner), BO memory files or handles; and the same holds between two unprivileged users,
// where root's DAC override cannot hide a wrong mode or owner.
#include <drm.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "DeviceClient.hpp"
#include "EmuTest.hpp"
#include "Process.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;
using namespace std::chrono_literals;

uid_t uidOf(const char* user) {
  const passwd* pw = ::getpwnam(user);
  return pw != nullptr ? pw->pw_uid : 0;
}

// The first `count` lines a child writes to `fd`, waiting up to 15 s for each read; fewer when
// it wrote fewer.
std::vector<std::string> readLines(int fd, std::size_t count) {
  std::string text;
  char buffer[512];
  for (pollfd p{fd, POLLIN, 0};
       static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) < count && ::poll(&p, 1, 15'000) == 1;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  std::vector<std::string> lines;
  for (std::size_t start = 0, end; lines.size() < count && (end = text.find('\n', start)) != std::string::npos;
       start = end + 1)
    lines.push_back(text.substr(start, end - start));
  return lines;
}

// True when open(path) is refused with EACCES.
bool openIsDenied(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return false;
  }
  return errno == EACCES;
}

class CrossUserTest : public EmuTest {
 protected:
  // The default device with nodes any user may open, so permissions rest on the files inside.
  std::string config() const override {
    return R"({"devices": [{"nsps": 4, "dbcs": 4}],
               "nodes": {"mode": "0666", "owner": "root", "group": "root"},
               "semaphore_timeout_ms": 2000, "compute_threads": 1})";
  }
  void SetUp() override {
    if (::getuid() != 0) GTEST_FAIL() << "the cross-user tests need root to setuid()";
    if (uidOf("nobody") == 0 || uidOf("daemon") == 0) GTEST_FAIL() << "users nobody and daemon are needed";
    // EmulatorProcess lets other users traverse its work directory to reach the 0666 node
    // (otherwise every check below would pass for the wrong reason).
    EmuTest::SetUp();
  }
};

TEST_F(CrossUserTest, AnotherUidCannotReachRootsActivationOrBo) {
  auto owner = openNode();
  const uint32_t dbc = activateRelu(owner, 1, 16);
  auto info = owner.emuDbcInfo(dbc);
  ASSERT_TRUE(info) << info.message();
  const std::string window = (owner.shmDir() / info->name).string();
  struct stat st {};
  ASSERT_EQ(::stat(window.c_str(), &st), 0) << window;
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, 0u);
  auto bo = BufferObject::create(owner, 4096);
  ASSERT_TRUE(bo) << bo.message();
  const uint32_t handle = bo->handle();

  // Exit codes name the first check that failed.
  const ExitStatus child = runInChild(
      [&] {
        becomeUser("nobody");
        auto node = DeviceNode::open(root(), 0);
        if (!node) return 10;  // the node is 0666: opening it must work
        auto stranger = node->emuDbcInfo(dbc);
        if (stranger || stranger.error() != EPERM) return 11;
        if (DbcWindow::map(*node, dbc)) return 12;
        if (!openIsDenied(window)) return 13;
        // No check of the BO's pages: whoever may open the node maps its memory file, every BO
        // in it (docs/emulator.md, "What still tells the difference": mmap of the node).
        auto foreign = node->mmapBo(handle);
        if (foreign || foreign.error() != ENOENT) return 15;
        if (deactivate(*node, dbc)) return 16;
        return 0;
      },
      30s);
  ASSERT_TRUE(child.exited);
  EXPECT_EQ(child.code, 0) << "10 open node, 11 DBC_INFO not EPERM, 12 window mapped, 13 window "
                              "opened, 15 foreign handle resolved, 16 "
                              "deactivated another's DBC, 90 setuid";

  // The owner's activation is untouched.
  auto window2 = DbcWindow::map(owner, dbc);
  ASSERT_TRUE(window2) << window2.message();
  EXPECT_EQ(window2->deviceStatus(), DeviceStatus::Ok);
}

// nobody activates and creates a BO, then waits; daemon tries to open nobody's files.
TEST_F(CrossUserTest, TwoUnprivilegedUsersCannotOpenEachOthersFiles) {
  int paths[2], release[2];
  ASSERT_EQ(::pipe2(paths, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(release, O_CLOEXEC), 0);

  ExitStatus ownerStatus;
  std::thread ownerThread([&] {
    ownerStatus = runInChild(
        [&] {
          becomeUser("nobody");
          auto node = DeviceNode::open(root(), 0);
          if (!node) return 20;
          const uint32_t dbc = activateRelu(*node, 1, 16);
          auto info = node->emuDbcInfo(dbc);
          auto bo = BufferObject::create(*node, 4096);
          if (!info || !bo) return 21;
          const std::string text = (node->shmDir() / info->name).string() + "\n" +
                                   (node->shmDir() / deviceMemoryFileName(0)).string() + "\n";
          if (::write(paths[1], text.data(), text.size()) != static_cast<ssize_t>(text.size())) return 22;
          // Hold the activation and BO until the parent has run the stranger (or gave up).
          pollfd p{release[0], POLLIN, 0};
          return ::poll(&p, 1, 30'000) == 1 ? 0 : 23;
        },
        60s);
  });

  // The write end stays open here until the end: the child may not have been forked yet.
  const auto lines = readLines(paths[0], 2);
  const std::string window = lines.size() == 2 ? lines[0] : "";
  const std::string memoryFile = lines.size() == 2 ? lines[1] : "";

  ExitStatus stranger;
  if (!window.empty() && !memoryFile.empty()) {
    struct stat st {};
    EXPECT_EQ(::stat(window.c_str(), &st), 0) << window;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << window;
    EXPECT_EQ(st.st_uid, uidOf("nobody")) << window << " is not owned by its client's uid";
    // The BO lives in the node's memory file, which admits whom the node admits (its owner, group
    // and mode), as mmap of the node does (docs/emulator.md, "What still tells the difference").
    struct stat node {};
    struct stat memory {};
    ASSERT_EQ(::stat(root().nodePath(0).c_str(), &node), 0);
    EXPECT_EQ(::stat(memoryFile.c_str(), &memory), 0) << memoryFile;
    EXPECT_EQ(memory.st_mode & 0777, node.st_mode & 0666) << memoryFile;
    EXPECT_EQ(memory.st_uid, node.st_uid) << memoryFile;
    stranger = runInChild(
        [&] {
          becomeUser("daemon");
          if (!openIsDenied(window)) return 30;
          return 0;
        },
        30s);
  }
  ASSERT_EQ(::write(release[1], "x", 1), 1);
  ownerThread.join();
  ::close(paths[0]);
  ::close(paths[1]);
  ::close(release[0]);
  ::close(release[1]);

  ASSERT_TRUE(ownerStatus.exited);
  ASSERT_EQ(ownerStatus.code, 0) << "20 open node, 21 activate/BO, 22 pipe, 23 not released, 90 setuid";
  ASSERT_TRUE(stranger.exited);
  EXPECT_EQ(stranger.code, 0) << "30 daemon opened nobody's window";
}

// PRIME across users: nobody exports a BO and holds the descriptor at a known number; daemon
// names that number in PRIME_FD_TO_HANDLE. The device resolves descriptor numbers in the
// caller's own table (pidfd_getfd), so daemon gets EBADF, or, with a memfd of its own at the same
// number, a handle of its own memory: never nobody's buffer. Its files and descriptors stay
// closed to daemon too.
TEST_F(CrossUserTest, AnotherUidCannotImportAUsersBufferByItsDescriptorNumber) {
  constexpr int kExportedFd = 100;
  int ready[2], release[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(release, O_CLOEXEC), 0);
  ExitStatus exporterStatus;
  std::thread exporterThread([&] {
    exporterStatus = runInChild(
        [&] {
          becomeUser("nobody");
          auto node = DeviceNode::open(root(), 0);
          if (!node) return 50;
          auto bo = BufferObject::create(*node, 4096);
          if (!bo) return 51;
          std::memcpy(bo->data(), "nobody's secret", 15);
          const int fd = exportBo(*node, bo->handle());
          if (fd < 0 || ::dup2(fd, kExportedFd) != kExportedFd) return 52;
          const std::string text = std::to_string(::getpid()) + "\n" +
                                   (node->shmDir() / deviceMemoryFileName(0)).string() + "\n";
          if (::write(ready[1], text.data(), text.size()) != static_cast<ssize_t>(text.size())) return 53;
          pollfd p{release[0], POLLIN, 0};
          return ::poll(&p, 1, 30'000) == 1 ? 0 : 54;
        },
        60s);
  });

  const auto lines = readLines(ready[0], 2);
  const std::string exporterPid = lines.size() == 2 ? lines[0] : "";
  const std::string boFile = lines.size() == 2 ? lines[1] : "";

  ExitStatus guesser;
  if (!exporterPid.empty() && !boFile.empty()) {
    guesser = runInChild(
        [&] {
          ::close(kExportedFd);  // nothing inherited may stand at the number
          becomeUser("daemon");
          auto node = DeviceNode::open(root(), 0);
          if (!node) return 60;
          if (importFd(*node, kExportedFd) != -EBADF) return 61;
          // Its own memfd at the very number: the import is daemon's memory.
          UniqueFd own(::memfd_create("daemon", MFD_CLOEXEC));
          if (!own || ::ftruncate(own.get(), 4096) != 0 || ::dup2(own.get(), kExportedFd) != kExportedFd) return 62;
          const int64_t handle = importFd(*node, kExportedFd);
          if (handle <= 0) return 63;
          drm_prime_handle back{static_cast<uint32_t>(handle), DRM_RDWR | DRM_CLOEXEC, own.get()};
          if (!node->rawIoctl(DRM_IOCTL_PRIME_HANDLE_TO_FD, &back, "PRIME_HANDLE_TO_FD")) return 64;
          if (!openIsDenied("/proc/" + exporterPid + "/fd/" + std::to_string(kExportedFd))) return 66;
          return 0;
        },
        30s);
  }
  ASSERT_EQ(::write(release[1], "x", 1), 1);
  exporterThread.join();
  for (int fd : {ready[0], ready[1], release[0], release[1]}) ::close(fd);

  ASSERT_TRUE(exporterStatus.exited);
  ASSERT_EQ(exporterStatus.code, 0) << "50 open, 51 BO, 52 export, 53 pipe, 54 not released, 90 setuid";
  ASSERT_TRUE(guesser.exited);
  EXPECT_EQ(guesser.code, 0) << "60 open, 61 the number resolved outside daemon's table, 62 memfd, "
                                "63 own import failed, 64 the import was not daemon's memory, 66 "
                                "daemon opened nobody's descriptor, 90 setuid";
}

// A node a non-root user owns with 0600: the kernel (FUSE default_permissions) lets that user in
// and keeps another unprivileged user out, without root's DAC override in the way.
class UserOwnedNodeTest : public CrossUserTest {
 protected:
  std::string config() const override {
    return R"({"devices": [{"nsps": 4, "dbcs": 4}],
               "nodes": {"mode": "0600", "owner": "nobody", "group": "root"},
               "semaphore_timeout_ms": 2000, "compute_threads": 1})";
  }
};

TEST_F(UserOwnedNodeTest, OnlyTheOwningUserOpensTheNode) {
  const std::string node = root().nodePath(0).string();
  struct stat st {};
  ASSERT_EQ(::stat(node.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, uidOf("nobody"));

  const ExitStatus owner = runInChild(
      [&] {
        becomeUser("nobody");
        return DeviceNode::open(root(), 0) ? 0 : 40;
      },
      30s);
  ASSERT_TRUE(owner.exited);
  EXPECT_EQ(owner.code, 0) << "40: the owning user could not open its node, 90: setuid";

  const ExitStatus stranger = runInChild(
      [&] {
        becomeUser("daemon");
        if (!openIsDenied(node)) return 41;
        const int fd = ::open(node.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0 || errno != EACCES) return 42;
        return 0;
      },
      30s);
  ASSERT_TRUE(stranger.exited);
  EXPECT_EQ(stranger.code, 0) << "41: daemon opened nobody's node read-write, 42: read-only, 90: setuid";
}

}  // namespace
}  // namespace qaic::emu::test
