// SPDX-License-Identifier: Apache-2.0
// Device-node and memory-file permissions, checked from a forked child that drops to `nobody`.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "DeviceClient.hpp"
#include "EmuTest.hpp"
#include "Process.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;
using namespace std::chrono_literals;

// In the child: become nobody (groups, gid, then uid), or exit 90.
void becomeNobody() {
  const passwd* nobody = ::getpwnam("nobody");
  if (nobody == nullptr || ::setgroups(0, nullptr) != 0 || ::setgid(nobody->pw_gid) != 0 ||
      ::setuid(nobody->pw_uid) != 0 || ::getuid() == 0)
    ::_exit(90);
}

// Exit 0 when open(path) fails with EACCES, 1 when it succeeds, 2 for another errno.
int openIsDenied(const std::string& path, int flags) {
  becomeNobody();
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd >= 0) return 1;
  return errno == EACCES ? 0 : 2;
}

class PermissionTest : public EmuTest {
 protected:
  void SetUp() override {
    if (::getuid() != 0) GTEST_FAIL() << "the permission tests need root to setuid() to nobody";
    EmuTest::SetUp();
  }
};

TEST_F(PermissionTest, NobodyCannotOpenARootOnlyNode) {
  struct stat st {};
  const std::string node = root().nodePath(0).string();
  ASSERT_EQ(::stat(node.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_TRUE(S_ISCHR(st.st_mode) || S_ISREG(st.st_mode));

  const ExitStatus child = runInChild([&] { return openIsDenied(node, O_RDWR); }, 30s);
  ASSERT_TRUE(child.exited);
  EXPECT_EQ(child.code, 0) << "1: nobody opened the node, 2: wrong errno, 90: setuid failed";

  const ExitStatus readOnly = runInChild([&] { return openIsDenied(node, O_RDONLY); }, 30s);
  ASSERT_TRUE(readOnly.exited);
  EXPECT_EQ(readOnly.code, 0);
}

TEST_F(PermissionTest, NobodyCannotOpenOrMapAnotherUsersBo) {
  auto node = openNode();
  auto bo = BufferObject::create(node, 4096);
  ASSERT_TRUE(bo) << bo.message();
  // The BO lives in the node's memory file, with the node's owner and mode (root's, 0600).
  const std::string file = (node.shmDir() / deviceMemoryFileName(0)).string();
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, ::getuid());

  const ExitStatus child = runInChild([&] { return openIsDenied(file, O_RDWR); }, 30s);
  ASSERT_TRUE(child.exited);
  EXPECT_EQ(child.code, 0) << "1: nobody opened root's memory file, 2: wrong errno, 90: setuid failed";
  const ExitStatus readOnly = runInChild([&] { return openIsDenied(file, O_RDONLY); }, 30s);
  ASSERT_TRUE(readOnly.exited);
  EXPECT_EQ(readOnly.code, 0);

  // The directory lets others traverse but not list it.
  struct stat dir {};
  ASSERT_EQ(::stat(node.shmDir().c_str(), &dir), 0);
  EXPECT_EQ(dir.st_mode & 0777, kShmDirMode);
}

}  // namespace
}  // namespace qaic::emu::test
