// SPDX-License-Identifier: Apache-2.0
// The DRM core's ioctls on the node, as the mainline kernel answers an accel file: VERSION and
// GET_UNIQUE with the kernel's copy and truncation rules, GET_CAP / GET_CLIENT / GET_STATS, the
// permission rules (root-only, authenticated and master-only ioctls), the features the driver
// lacks (modesetting, syncobjs, dumb buffers, DRI1), and the argument sizing of drm_ioctl().
#include <drm.h>
#include <grp.h>
#include <pwd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "EmuTest.hpp"
#include "Process.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;
using namespace std::chrono_literals;

constexpr const char* kDescription = "Qualcomm Cloud AI Accelerators";

int ioctlErrno(const DeviceNode& node, unsigned long request, void* arg) {
  auto r = node.rawIoctl(request, arg, "ioctl");
  return r ? 0 : r.error();
}

TEST_F(EmuTest, VersionNamesTheQaicDriverAndReportsEveryLength) {
  auto node = openNode();
  drm_version v{};
  ASSERT_EQ(ioctlErrno(node, DRM_IOCTL_VERSION, &v), 0);
  EXPECT_EQ(v.version_major, 0);
  EXPECT_EQ(v.version_minor, 0);
  EXPECT_EQ(v.version_patchlevel, 0);
  EXPECT_EQ(v.name_len, 4u);
  EXPECT_EQ(v.date_len, 1u);
  EXPECT_EQ(v.desc_len, std::strlen(kDescription));

  char name[8], date[8], desc[64];
  std::memset(name, '#', sizeof name);
  std::memset(date, '#', sizeof date);
  std::memset(desc, '#', sizeof desc);
  v.name = name;
  v.name_len = sizeof name;
  v.date = date;
  v.date_len = sizeof date;
  v.desc = desc;
  v.desc_len = sizeof desc;
  ASSERT_EQ(ioctlErrno(node, DRM_IOCTL_VERSION, &v), 0);
  EXPECT_EQ(std::string(name, 4), "qaic");
  EXPECT_EQ(name[4], '#') << "the kernel copies no NUL";
  EXPECT_EQ(std::string(date, 1), "0");
  EXPECT_EQ(std::string(desc, v.desc_len), kDescription);
}

TEST_F(EmuTest, VersionTruncatesToTheCallersBufferAndFaultsOnABadOne) {
  auto node = openNode();
  char name[2] = {'#', '#'};
  char desc[5];
  std::memset(desc, '#', sizeof desc);
  drm_version v{};
  v.name = name;
  v.name_len = sizeof name;
  v.desc = desc;
  v.desc_len = 3;
  ASSERT_EQ(ioctlErrno(node, DRM_IOCTL_VERSION, &v), 0);
  EXPECT_EQ(std::string(name, 2), "qa");
  EXPECT_EQ(v.name_len, 4u) << "the full length comes back so the caller can ask again";
  EXPECT_EQ(std::string(desc, 3), "Qua");
  EXPECT_EQ(desc[3], '#');
  EXPECT_EQ(v.desc_len, std::strlen(kDescription));

  UnreadablePage page;
  drm_version bad{};
  bad.name = reinterpret_cast<char*>(page.address());
  bad.name_len = 4;
  EXPECT_EQ(ioctlErrno(node, DRM_IOCTL_VERSION, &bad), EFAULT);
}

TEST_F(EmuTest, GetUniqueIsThePciAddressWholeOrNothing) {
  auto node = openNode();
  drm_unique u{};
  ASSERT_EQ(ioctlErrno(node, DRM_IOCTL_GET_UNIQUE, &u), 0);
  EXPECT_EQ(u.unique_len, 12u);
  char buffer[16];
  std::memset(buffer, '#', sizeof buffer);
  u.unique = buffer;
  u.unique_len = 5;
  ASSERT_EQ(ioctlErrno(node, DRM_IOCTL_GET_UNIQUE, &u), 0);
  EXPECT_EQ(buffer[0], '#') << "a short buffer only learns the length";
  EXPECT_EQ(u.unique_len, 12u);
  ASSERT_EQ(ioctlErrno(node, DRM_IOCTL_GET_UNIQUE, &u), 0);
  EXPECT_EQ(std::string(buffer, u.unique_len), "0000:01:00.0");
}

TEST_F(EmuTest, CapabilitiesAreImportAndExportWithoutModesetting) {
  auto node = openNode();
  drm_get_cap cap{DRM_CAP_PRIME, 99};
  ASSERT_EQ(ioctlErrno(node, DRM_IOCTL_GET_CAP, &cap), 0);
  EXPECT_EQ(cap.value, static_cast<uint64_t>(DRM_PRIME_CAP_IMPORT | DRM_PRIME_CAP_EXPORT));
  cap = {DRM_CAP_TIMESTAMP_MONOTONIC, 0};
  ASSERT_EQ(ioctlErrno(node, DRM_IOCTL_GET_CAP, &cap), 0);
  EXPECT_EQ(cap.value, 1u);
  cap = {DRM_CAP_SYNCOBJ, 99};
  ASSERT_EQ(ioctlErrno(node, DRM_IOCTL_GET_CAP, &cap), 0);
  EXPECT_EQ(cap.value, 0u);
  cap = {DRM_CAP_DUMB_BUFFER, 0};
  EXPECT_EQ(ioctlErrno(node, DRM_IOCTL_GET_CAP, &cap), EOPNOTSUPP);
}

TEST_F(EmuTest, GetClientDescribesOnlyTheCaller) {
  auto node = openNode();
  drm_client client{};
  ASSERT_EQ(ioctlErrno(node, DRM_IOCTL_GET_CLIENT, &client), 0);
  EXPECT_EQ(client.pid, static_cast<unsigned long>(::getpid()));
  EXPECT_EQ(client.uid, 65534u);
  EXPECT_EQ(client.auth, ::getuid() == 0 ? 1 : 0);
  client.idx = 1;
  EXPECT_EQ(ioctlErrno(node, DRM_IOCTL_GET_CLIENT, &client), EINVAL);
  drm_stats stats;
  std::memset(&stats, 0xab, sizeof stats);
  ASSERT_EQ(ioctlErrno(node, DRM_IOCTL_GET_STATS, &stats), 0);
  EXPECT_EQ(stats.count, 0u);
}

// Root here: root-only and authenticated ioctls pass the permission check and then find nothing
// to do on an accel device; master-only ones never pass it.
TEST_F(EmuTest, OtherCoreIoctlsAnswerAsForAnAccelFile) {
  if (::getuid() != 0) GTEST_FAIL() << "the root half of the permission table needs root";
  auto node = openNode();
  std::vector<std::byte> arg(256);
  struct Case {
    unsigned long request;
    int expected;
    const char* what;
  };
  const Case cases[] = {
      {DRM_IOCTL_SET_MASTER, EINVAL, "SET_MASTER: an accel file has no master to become"},
      {DRM_IOCTL_DROP_MASTER, EINVAL, "DROP_MASTER"},
      {DRM_IOCTL_GET_MAGIC, EINVAL, "GET_MAGIC"},
      {DRM_IOCTL_AUTH_MAGIC, EACCES, "AUTH_MAGIC: master only"},
      {DRM_IOCTL_SET_VERSION, EACCES, "SET_VERSION: master only"},
      {DRM_IOCTL_FINISH, 0, "FINISH: a no-op once authenticated"},
      {DRM_IOCTL_SET_CLIENT_CAP, EOPNOTSUPP, "SET_CLIENT_CAP: no modesetting"},
      {DRM_IOCTL_MODE_GETRESOURCES, EOPNOTSUPP, "MODE_GETRESOURCES"},
      {DRM_IOCTL_MODE_SETCRTC, EACCES, "MODE_SETCRTC: master only"},
      // The kernel answers ENOSYS (no dumb_create); FUSE turns an ENOSYS reply into ENOTTY.
      {DRM_IOCTL_MODE_CREATE_DUMB, ENOTTY, "MODE_CREATE_DUMB: no dumb buffers"},
      {DRM_IOCTL_SYNCOBJ_CREATE, EOPNOTSUPP, "SYNCOBJ_CREATE: no syncobjs"},
      {DRM_IOCTL_MODE_CREATE_LEASE, EACCES, "MODE_CREATE_LEASE: master only"},
      {DRM_IOCTL_WAIT_VBLANK, EOPNOTSUPP, "WAIT_VBLANK"},
      {DRM_IOCTL_ADD_MAP, EINVAL, "ADD_MAP: the DRI1 interface is gone"},
      {DRM_IO(0x3e), EINVAL, "an unused core number"},
      {DRM_IO(0xf0), EINVAL, "a number past the core table"},
      {DRM_IO(0x50), EINVAL, "a driver number qaic does not define"},
      {_IOWR('q', 0x00, drm_version), ENOTTY, "another ioctl type"},
  };
  for (const Case& c : cases) EXPECT_EQ(ioctlErrno(node, c.request, arg.data()), c.expected) << c.what;
}

// drm_ioctl() hands the handler the argument at its own size: a caller whose struct is shorter
// (here GEM_CLOSE without its pad) gets zeros for the rest, and the call works.
TEST_F(EmuTest, ArgumentsOfAnotherSizeAreZeroExtendedLikeTheKernelDoes) {
  auto node = openNode();
  auto handle = node.createBo(4096);
  ASSERT_TRUE(handle) << handle.message();
  uint32_t shortClose = *handle;
  ASSERT_EQ(ioctlErrno(node, _IOW('d', 0x09, uint32_t), &shortClose), 0);
  EXPECT_EQ(node.mmapBo(*handle).error(), ENOENT);
}

class DrmCoreUnprivilegedTest : public EmuTest {
 protected:
  std::string config() const override {
    return R"({"devices": [{"nsps": 4, "dbcs": 4}],
               "nodes": {"mode": "0666", "owner": "root", "group": "root"},
               "semaphore_timeout_ms": 2000})";
  }
  void SetUp() override {
    if (::getuid() != 0) GTEST_FAIL() << "dropping to another user needs root";
    if (::getpwnam("nobody") == nullptr) GTEST_FAIL() << "user nobody is needed";
    EmuTest::SetUp();
    ASSERT_EQ(::chmod(root().path().parent_path().c_str(), 0711), 0);
  }
};

TEST_F(DrmCoreUnprivilegedTest, RootOnlyAndAuthenticatedIoctlsAreEaccesForOthers) {
  const ExitStatus child = runInChild(
      [&] {
        becomeUser("nobody");
        auto node = DeviceNode::open(root(), 0);
        if (!node) return 10;
        std::vector<std::byte> arg(256);
        if (ioctlErrno(*node, DRM_IOCTL_FINISH, arg.data()) != EACCES) return 11;
        if (ioctlErrno(*node, DRM_IOCTL_SET_MASTER, arg.data()) != EACCES) return 12;
        if (ioctlErrno(*node, DRM_IOCTL_GEM_FLINK, arg.data()) != EACCES) return 13;
        if (ioctlErrno(*node, DRM_IOCTL_GEM_OPEN, arg.data()) != EACCES) return 14;
        drm_client client{};
        if (ioctlErrno(*node, DRM_IOCTL_GET_CLIENT, &client) != 0 || client.auth != 0) return 15;
        drm_version v{};
        if (ioctlErrno(*node, DRM_IOCTL_VERSION, &v) != 0 || v.name_len != 4) return 16;
        return 0;
      },
      30s);
  ASSERT_TRUE(child.exited);
  EXPECT_EQ(child.code, 0) << "10 open, 11 FINISH, 12 SET_MASTER, 13 GEM_FLINK, 14 GEM_OPEN not "
                              "EACCES, 15 GET_CLIENT, 16 VERSION, 90 setuid";
}

TEST_F(EmuTest, FlinkNamesLiveAsLongAsAHandleDoes) {
  if (::getuid() != 0) GTEST_FAIL() << "GEM_FLINK needs an authenticated (root) file";
  auto owner = openNode();
  auto other = openNode();
  auto handle = owner.createBo(8192);
  ASSERT_TRUE(handle) << handle.message();
  drm_gem_flink flink{*handle, 0};
  ASSERT_EQ(ioctlErrno(owner, DRM_IOCTL_GEM_FLINK, &flink), 0);
  EXPECT_NE(flink.name, 0u);
  drm_gem_flink again{*handle, 0};
  ASSERT_EQ(ioctlErrno(owner, DRM_IOCTL_GEM_FLINK, &again), 0);
  EXPECT_EQ(again.name, flink.name) << "one name per object";
  drm_gem_open open{flink.name, 0, 0};
  ASSERT_EQ(ioctlErrno(other, DRM_IOCTL_GEM_OPEN, &open), 0);
  EXPECT_EQ(open.size, 8192u);
  auto offset = other.mmapBo(open.handle);
  ASSERT_TRUE(offset) << offset.message();
  EXPECT_EQ(*offset, *owner.mmapBo(*handle)) << "the same object, not an import";
  drm_gem_close close{*handle, 0};
  ASSERT_EQ(ioctlErrno(owner, DRM_IOCTL_GEM_CLOSE, &close), 0);
  close.handle = open.handle;
  ASSERT_EQ(ioctlErrno(other, DRM_IOCTL_GEM_CLOSE, &close), 0);
  drm_gem_open stale{flink.name, 0, 0};
  EXPECT_EQ(ioctlErrno(other, DRM_IOCTL_GEM_OPEN, &stale), ENOENT) << "the name went with the last handle";
  drm_gem_flink unknown{12345, 0};
  EXPECT_EQ(ioctlErrno(owner, DRM_IOCTL_GEM_FLINK, &unknown), ENOENT);
}

}  // namespace
}  // namespace qaic::emu::test
