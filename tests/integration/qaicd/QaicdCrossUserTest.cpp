// SPDX-License-Identifier: Apache-2.0
// The device enforces what qaicd grants: another uid cannot open a user's partition node
// (EACCES) nor release it (EPERM), and an activation inside a partition cannot exceed it.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ClientChild.hpp"
#include "DeviceAttributes.hpp"
#include "QaicdTest.hpp"

namespace qaic::qaicd::test {
namespace {

using namespace std::chrono_literals;

uid_t uidOf(const char* user) {
  const passwd* pw = ::getpwnam(user);
  return pw != nullptr ? pw->pw_uid : 0;
}

class QaicdCrossUserTest : public QaicdTest {
 protected:
  void SetUp() override {
    if (::getuid() != 0) GTEST_FAIL() << "the cross-user tests need root to setuid()";
    if (uidOf("nobody") == 0 || uidOf("daemon") == 0) GTEST_FAIL() << "users nobody and daemon are needed";
    QaicdTest::SetUp();
  }
};

TEST_F(QaicdCrossUserTest, AnotherUidCannotOpenNorReleaseAUsersPartition) {
  ClientChild owner(rootPath(), socketPath(), "nobody");
  ClientChild stranger(rootPath(), socketPath(), "daemon");
  const std::string created = owner.command("create 2 1");
  const unsigned id = okNumber(created);
  ASSERT_GE(id, 100u) << created;
  const std::string node = emu_->root().nodePath(id).string();
  struct stat st {};
  ASSERT_EQ(::stat(node.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, uidOf("nobody"));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(attribute(id, driver::sysfs::kPartitionOwnerUid), uidOf("nobody"));

  EXPECT_EQ(owner.command("open " + node), "ok");
  EXPECT_EQ(errNumber(stranger.command("open " + node)), EACCES);
  const std::string release = stranger.command("release " + std::to_string(id));
  EXPECT_EQ(errNumber(release), EPERM) << release;
  EXPECT_EQ(errNumber(stranger.command("adopt " + std::to_string(id))), EPERM);
  EXPECT_EQ(partitionNodes(), std::vector<unsigned>{id});
  EXPECT_EQ(owner.command("release " + std::to_string(id)), "ok");
  EXPECT_TRUE(partitionNodes().empty());
}

TEST_F(QaicdTest, AnActivationInsideAPartitionCannotExceedIt) {
  ClientChild holder(rootPath(), socketPath());
  const unsigned id = okNumber(holder.command("create 1 2"));
  ASSERT_GE(id, 100u);
  const std::string first = holder.command("activate " + std::to_string(id) + " 1");
  ASSERT_EQ(first.rfind("ok", 0), 0u) << first;
  // The parent still has free NSPs; the partition has none left.
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps - 1);
  EXPECT_EQ(errNumber(holder.command("activate " + std::to_string(id) + " 1")), ENOSPC);
  EXPECT_EQ(errNumber(holder.command("activate " + std::to_string(id) + " 2")), ENOSPC);
  // The whole device still serves activations outside the partition.
  const std::string outside = holder.command("activate 0 2");
  EXPECT_EQ(outside.rfind("ok", 0), 0u) << outside;
}

}  // namespace
}  // namespace qaic::qaicd::test
