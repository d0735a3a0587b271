// SPDX-License-Identifier: Apache-2.0
// Partitions (derived devices, DeviceProtocol.hpp "Partitions"): a privileged caller carves
// resources off a device; the partition appears as accel<id>, only its owner may open it, its
// activations cannot exceed it, and it ends by removal or a device reset. Devices also come at
// run time through sys/bus/qaic-emu/add_device.
#include <drm.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "DeviceAttributes.hpp"
#include "EmuTest.hpp"
#include "Process.hpp"
#include "ReluProgram.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;
using namespace std::chrono_literals;

PartitionRequest createRequest(uint32_t nsps, uint32_t vcs, uid_t owner, const char* label = "test") {
  PartitionRequest r{};
  r.magic = kPartitionMagic;
  r.version = kPartitionVersion;
  r.op = static_cast<uint32_t>(PartitionOp::Create);
  r.resources.numNsp = nsps;
  r.resources.numVc = vcs;
  r.resources.numSem = kSemaphoresPerDbc * vcs;
  r.resources.ddrSize = 256ull << 20;
  r.ownerUid = owner;
  r.ownerGid = owner;
  r.mode = 0600;
  r.holderPid = ::getpid();
  std::strncpy(r.label, label, sizeof r.label - 1);
  return r;
}

PartitionRequest removeRequest(uint32_t id) {
  PartitionRequest r{};
  r.magic = kPartitionMagic;
  r.version = kPartitionVersion;
  r.op = static_cast<uint32_t>(PartitionOp::Remove);
  r.partitionId = id;
  return r;
}

uid_t nobodyUid() {
  const passwd* p = ::getpwnam("nobody");
  return p ? p->pw_uid : 65534;
}

// In the child: become nobody, then try to open `path`: 0 = EACCES, 1 = opened, 2 = other errno.
int nobodyOpens(const std::string& path) {
  const passwd* nobody = ::getpwnam("nobody");
  if (nobody == nullptr || ::setgroups(0, nullptr) != 0 || ::setgid(nobody->pw_gid) != 0 ||
      ::setuid(nobody->pw_uid) != 0)
    return 90;
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return 1;
  }
  return errno == EACCES ? 0 : 2;
}

class PartitionTest : public EmuTest {
 protected:
  PartitionResponse create(const DeviceNode& node, const PartitionRequest& r) {
    auto answer = partitionCommand(node, r);
    if (!answer) throw std::runtime_error(answer.message());
    return *answer;
  }
  uint64_t partitionAttribute(uint32_t id, const std::string& name) const {
    auto v = SysfsDevice(root(), id).readU64(name);
    if (!v) throw std::runtime_error(name + ": " + v.message());
    return *v;
  }
  bool nodeExists(uint32_t id) const {
    struct stat st {};
    return ::stat(root().nodePath(id).c_str(), &st) == 0;
  }
};

TEST_F(PartitionTest, CreatePublishesANodeWithThePartitionsOwnCounters) {
  auto node = openNode();
  const auto p = create(node, createRequest(2, 1, nobodyUid(), "team-a"));
  ASSERT_EQ(p.status, 0);
  EXPECT_GE(p.partitionId, kFirstPartitionId);
  EXPECT_EQ(p.resources.numNsp, 2u);

  struct stat st {};
  ASSERT_EQ(::stat(root().nodePath(p.partitionId).c_str(), &st), 0) << "no derived node";
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, nobodyUid());
  EXPECT_EQ(partitionAttribute(p.partitionId, driver::sysfs::kEmuNspTotal), 2u);
  EXPECT_EQ(partitionAttribute(p.partitionId, driver::sysfs::kEmuNspFree), 2u);
  EXPECT_EQ(partitionAttribute(p.partitionId, driver::sysfs::kEmuVcTotal), 1u);
  EXPECT_EQ(partitionAttribute(p.partitionId, driver::sysfs::kEmuDramTotal), 256u);
  EXPECT_EQ(partitionAttribute(p.partitionId, driver::sysfs::kPartitionParent), 0u);
  EXPECT_EQ(partitionAttribute(p.partitionId, driver::sysfs::kPartitionOwnerUid), nobodyUid());
  EXPECT_EQ(partitionAttribute(p.partitionId, driver::sysfs::kPartitionHolderPid), static_cast<uint64_t>(::getpid()));
  auto label = SysfsDevice(root(), p.partitionId).read(driver::sysfs::kPartitionLabel);
  ASSERT_TRUE(label) << label.message();
  EXPECT_EQ(*label, "team-a");
  auto mode = SysfsDevice(root(), p.partitionId).read(driver::sysfs::kPartitionMode);
  ASSERT_TRUE(mode);
  EXPECT_EQ(*mode, "0600");
  auto status = SysfsDevice(root(), p.partitionId).read(driver::sysfs::kEmuStatus);
  ASSERT_TRUE(status);
  EXPECT_EQ(*status, "Ready");
  // The parent lends what the partition holds.
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps - 2);
  EXPECT_EQ(attribute(driver::sysfs::kEmuVcFree), kTestDbcs - 1);
  // The listing shows it beside the device.
  const auto listed = root().listDevices();
  EXPECT_NE(std::find(listed.begin(), listed.end(), p.partitionId), listed.end());
}

TEST_F(PartitionTest, ActivationsInsideAPartitionCannotExceedIt) {
  auto parent = openNode();
  const auto p = create(parent, createRequest(2, 1, 0));
  ASSERT_EQ(p.status, 0);
  auto inside = DeviceNode::open(root(), p.partitionId);
  ASSERT_TRUE(inside) << inside.message();

  ASSERT_TRUE(loadProgram(*inside, reluProgram(3), 1));
  EXPECT_TRUE(failsWith(activate(*inside, 1, 0, 16, 0), ENOSPC)) << "a 3-NSP activation ran in a 2-NSP partition";

  ASSERT_TRUE(loadProgram(*inside, relu_, 2));
  auto fits = activate(*inside, 2, 0, 16, 0);
  ASSERT_TRUE(fits) << fits.message();
  EXPECT_EQ(partitionAttribute(p.partitionId, driver::sysfs::kEmuNspFree), 1u);
  EXPECT_EQ(partitionAttribute(p.partitionId, driver::sysfs::kEmuNetworksActive), 1u);
  // The DRM core answers on the partition's node as on its parent's.
  drm_version version{};
  ASSERT_TRUE(inside->rawIoctl(DRM_IOCTL_VERSION, &version, "VERSION"));
  EXPECT_EQ(version.name_len, 4u);
  char unique[16] = {};
  drm_unique u{sizeof unique, unique};
  ASSERT_TRUE(inside->rawIoctl(DRM_IOCTL_GET_UNIQUE, &u, "GET_UNIQUE"));
  EXPECT_EQ(std::string(unique, u.unique_len), "0000:01:00.0") << "the parent's PCI function";
  // The firmware's status query on the partition's node reports the partition.
  auto report = queryDeviceStatus(*inside);
  ASSERT_TRUE(report) << report.message();
  EXPECT_EQ(report->nspTotal, 2u);
  EXPECT_EQ(report->nspFree, 1u);
  EXPECT_EQ(report->vcTotal, 1u);
  EXPECT_EQ(report->networksActive, 1u);
  EXPECT_EQ(report->ddrTotalBytes, 256ull << 20);
  // The partition has one VC, now in use, though the device has more.
  ASSERT_TRUE(loadProgram(*inside, relu_, 3));
  EXPECT_TRUE(failsWith(activate(*inside, 3, 0, 16, 0), ENOSPC));
  // Outside the partition the device's remaining NSPs still serve.
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps - 2);
  EXPECT_LT(activateRelu(parent, 4), kTestDbcs);
}

TEST_F(PartitionTest, OnlyTheOwnerOpensThePartitionNode) {
  if (::getuid() != 0) GTEST_FAIL() << "needs root to setuid() to nobody";
  auto parent = openNode();
  const auto foreign = create(parent, createRequest(1, 1, 4242));
  const auto mine = create(parent, createRequest(1, 1, nobodyUid()));
  ASSERT_EQ(foreign.status, 0);
  ASSERT_EQ(mine.status, 0);
  const std::string foreignPath = root().nodePath(foreign.partitionId).string();
  const std::string minePath = root().nodePath(mine.partitionId).string();
  const ExitStatus refused = runInChild([&] { return nobodyOpens(foreignPath); }, 30s);
  ASSERT_TRUE(refused.exited);
  EXPECT_EQ(refused.code, 0) << "1: nobody opened uid 4242's partition; 2: wrong errno";
  const ExitStatus allowed = runInChild([&] { return nobodyOpens(minePath); }, 30s);
  ASSERT_TRUE(allowed.exited);
  EXPECT_EQ(allowed.code, 1) << "nobody could not open its own partition";
}

// In the device tree a partition is a virtual accel device: its class and sys/dev/char links
// lead to sys/devices/virtual/accel/accel<id>, whose `device` link is its parent's PCI function
// (docs/emulator.md, "The device tree"); all of it goes with the partition.
TEST_F(PartitionTest, APartitionIsAVirtualDeviceLinkedToItsParentsFunction) {
  auto node = openNode();
  const auto p = create(node, createRequest(1, 1, 0));
  ASSERT_EQ(p.status, 0);
  const std::string name = "accel" + std::to_string(p.partitionId);
  const std::filesystem::path sys = root().path() / "sys";
  const std::filesystem::path dir = sys / "devices/virtual/accel" / name;
  const std::filesystem::path byNumbers = sys / "dev/char" / ("261:" + std::to_string(p.partitionId));
  std::error_code ec;
  EXPECT_EQ(std::filesystem::read_symlink(root().sysfsPath(p.partitionId), ec), "../../devices/virtual/accel/" + name);
  EXPECT_EQ(std::filesystem::read_symlink(byNumbers, ec), "../../devices/virtual/accel/" + name);
  EXPECT_TRUE(std::filesystem::equivalent(dir / "device", sys / "devices/pci0000:00/0000:01:00.0", ec)) << ec.message();
  auto dev = SysfsDevice(root(), p.partitionId).read(driver::sysfs::kDev);
  ASSERT_TRUE(dev) << dev.message();
  EXPECT_EQ(*dev, "261:" + std::to_string(p.partitionId));
  // Its PCI attributes are the parent's, through the link.
  auto vendor = SysfsDevice(root(), p.partitionId).read(driver::sysfs::kPciVendor);
  ASSERT_TRUE(vendor) << vendor.message();
  EXPECT_EQ(*vendor, "0x17cb");

  auto removed = partitionCommand(node, removeRequest(p.partitionId));
  ASSERT_TRUE(removed) << removed.message();
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_FALSE(std::filesystem::is_symlink(byNumbers));
  EXPECT_FALSE(std::filesystem::is_symlink(root().sysfsPath(p.partitionId)));
  EXPECT_TRUE(std::filesystem::exists(sys / "dev/char/261:0")) << "the parent's link went too";
}

TEST_F(PartitionTest, RemovalAbortsItsActivationsAndReturnsEverything) {
  auto parent = openNode();
  const auto p = create(parent, createRequest(2, 1, 0));
  auto inside = DeviceNode::open(root(), p.partitionId);
  ASSERT_TRUE(inside) << inside.message();
  const uint32_t dbc = activateRelu(*inside, 1);
  EXPECT_LT(dbc, kTestDbcs);
  EXPECT_EQ(attribute(driver::sysfs::kEmuNetworksActive), 1u);

  auto removed = partitionCommand(parent, removeRequest(p.partitionId));
  ASSERT_TRUE(removed) << removed.message();
  EXPECT_EQ(removed->status, 0);
  EXPECT_FALSE(nodeExists(p.partitionId));
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps);
  EXPECT_EQ(attribute(driver::sysfs::kEmuVcFree), kTestDbcs);
  EXPECT_EQ(attribute(driver::sysfs::kEmuNetworksActive), 0u);
  // The file opened on it stays open but serves nothing.
  EXPECT_TRUE(failsWith(queryStatus(*inside), ENODEV));
  EXPECT_TRUE(failsWith(partitionCommand(parent, removeRequest(p.partitionId)), ENOENT));
}

TEST_F(PartitionTest, APartitionOutlivesItsCreatorsFile) {
  uint32_t id = 0;
  {
    auto parent = openNode();
    id = create(parent, createRequest(1, 1, 0)).partitionId;
  }
  // Release of the creator's file is asynchronous in FUSE; the partition must still be there after.
  for (int i = 0; i < 50; ++i) ::usleep(10000);
  EXPECT_TRUE(nodeExists(id));
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps - 1);
}

TEST_F(PartitionTest, RefusalNamesTheShortResource) {
  auto parent = openNode();
  auto tooManyNsps = create(parent, createRequest(kTestNsps + 1, 1, 0));
  EXPECT_EQ(tooManyNsps.status, -ENOSPC);
  EXPECT_EQ(tooManyNsps.shortResource, static_cast<uint32_t>(PartitionResource::Nsp));
  EXPECT_STREQ(partitionResourceName(PartitionResource::Nsp), "numNsp");
  auto r = createRequest(1, 1, 0);
  r.resources.ddrSize = 1ull << 50;
  auto tooMuchDdr = create(parent, r);
  EXPECT_EQ(tooMuchDdr.status, -ENOSPC);
  EXPECT_EQ(tooMuchDdr.shortResource, static_cast<uint32_t>(PartitionResource::Ddr));
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps);
}

TEST_F(PartitionTest, MalformedCommandsAreEinval) {
  auto parent = openNode();
  auto expectEinval = [&](PartitionRequest r, const char* what) {
    auto answer = partitionCommand(parent, r);
    ASSERT_FALSE(answer) << what;
    EXPECT_EQ(answer.error(), EINVAL) << what;
  };
  auto r = createRequest(1, 1, 0);
  r.mode = 01777;
  expectEinval(r, "mode beyond permission bits");
  r = createRequest(1, 0, 0);
  expectEinval(r, "no VC");
  r = createRequest(1, 1, 0);
  std::memset(r.label, 'x', sizeof r.label);
  expectEinval(r, "label without NUL");
  r = createRequest(1, 1, 0);
  r.label[0] = '\n';
  expectEinval(r, "unprintable label");
  r = createRequest(1, 1, 0);
  r.holderPid = -5;
  expectEinval(r, "negative holder");
  r = createRequest(1, 1, 0);
  r.op = 9;
  expectEinval(r, "unknown op");
  r = createRequest(1, 1, 0);
  r.version = 2;
  expectEinval(r, "unknown version");
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps);
}

TEST_F(PartitionTest, AResetEndsEveryPartition) {
  auto parent = openNode();
  const auto p = create(parent, createRequest(2, 1, 0));
  ASSERT_TRUE(nodeExists(p.partitionId));
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultReset, "1"));
  EXPECT_FALSE(nodeExists(p.partitionId));
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps);
}

class PartitionPermissionTest : public PartitionTest {
 protected:
  std::string config() const override {
    return R"({"devices": [{"nsps": 4, "dbcs": 4}],
               "nodes": {"mode": "0666", "owner": "root", "group": "root"},
               "compute_threads": 1})";
  }
};

TEST_F(PartitionPermissionTest, AnOrdinaryUserCannotCreateOrRemovePartitions) {
  if (::getuid() != 0) GTEST_FAIL() << "needs root to setuid() to nobody";
  auto parent = openNode();
  const auto p = create(parent, createRequest(1, 1, 0));
  const DeviceRoot deviceRoot = root();
  const uint32_t id = p.partitionId;
  const ExitStatus child = runInChild(
      [&] {
        const passwd* nobody = ::getpwnam("nobody");
        if (nobody == nullptr || ::setgroups(0, nullptr) != 0 || ::setgid(nobody->pw_gid) != 0 ||
            ::setuid(nobody->pw_uid) != 0)
          return 90;
        auto node = DeviceNode::open(deviceRoot, 0);
        if (!node) return 91;
        auto created = partitionCommand(*node, createRequest(1, 1, nobody->pw_uid));
        if (created || created.error() != EPERM) return 1;
        auto removed = partitionCommand(*node, removeRequest(id));
        if (removed || removed.error() != EPERM) return 2;
        return 0;
      },
      30s);
  ASSERT_TRUE(child.exited);
  EXPECT_EQ(child.code, 0) << "1: nobody created a partition, 2: nobody removed root's";
  EXPECT_TRUE(nodeExists(id));
}

TEST_F(EmuTest, DevicesAreAddedAtRunTime) {
  EXPECT_EQ(root().listDevices().size(), 1u);
  {
    std::ofstream control(root().path() / "sys/bus/qaic-emu/add_device");
    control << "1\n";
    control.flush();
    ASSERT_TRUE(control.good());
  }
  const auto listed = root().listDevices();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[1], 1u);
  auto status = SysfsDevice(root(), 1).read(driver::sysfs::kEmuStatus);
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(*status, "Ready");
  auto node = DeviceNode::open(root(), 1);
  ASSERT_TRUE(node) << node.message();
  EXPECT_LT(activateRelu(*node, 1), kTestDbcs);
  std::ofstream bad(root().path() / "sys/bus/qaic-emu/add_device");
  bad << "many\n";
  bad.flush();
  EXPECT_FALSE(bad.good()) << "a malformed add_device write was accepted";
}

}  // namespace
}  // namespace qaic::emu::test
