// SPDX-License-Identifier: Apache-2.0
// qaicd against a real qaic-emu: reservations appear on the device and in sysfs, refusals name
// the resource, devices come and go at run time, static partitions come from the config file.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>

#include "DeviceAttributes.hpp"
#include "QaicdTest.hpp"

namespace qaic::qaicd::test {
namespace {

using namespace std::chrono_literals;

TEST_F(QaicdTest, HelloNamesTheRootAndThePeer) {
  auto client = connect();
  auto hello = client.hello();
  ASSERT_TRUE(hello) << hello.message();
  EXPECT_EQ(hello->version, kProtocolVersion);
  EXPECT_EQ(hello->root, std::filesystem::canonical(rootPath()).string());
  EXPECT_EQ(hello->serverPid, qaicd_->pid());
  EXPECT_EQ(hello->peer.pid, ::getpid());
  EXPECT_EQ(hello->peer.uid, ::getuid());
}

TEST_F(QaicdTest, CreateReservesOnTheDeviceAndReleaseReturnsIt) {
  auto client = connect();
  auto p = client.createPartition(Resources{3, 1, 4, 2, 0}, 0u, "unit");
  ASSERT_TRUE(p) << p.message();
  EXPECT_GE(p->id, 100u);
  EXPECT_EQ(p->device, 0u);
  EXPECT_EQ(p->holderPid, ::getpid());
  EXPECT_FALSE(p->isStatic);
  EXPECT_EQ(p->resources.numNsp, 3u);
  EXPECT_EQ(p->resources.numVc, 2u);
  EXPECT_EQ(p->node, std::filesystem::canonical(rootPath()).string() + "/dev/accel/accel" + std::to_string(p->id));

  // The device: the parent's free counts exclude it, the partition has its own class directory.
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps - 3);
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuVcFree), kDeviceVcs - 2);
  EXPECT_EQ(attribute(p->id, driver::sysfs::kEmuNspTotal), 3u);
  EXPECT_EQ(attribute(p->id, driver::sysfs::kEmuVcTotal), 2u);
  EXPECT_EQ(attribute(p->id, driver::sysfs::kPartitionHolderPid), static_cast<uint64_t>(::getpid()));
  EXPECT_EQ(attribute(p->id, driver::sysfs::kPartitionParent), 0u);
  struct stat st {};
  ASSERT_EQ(::stat(p->node.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, ::getuid());

  auto devices = client.devices();
  ASSERT_TRUE(devices) << devices.message();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].free.numNsp, kDeviceNsps - 3);
  EXPECT_EQ((*devices)[0].total.numNsp, kDeviceNsps);
  EXPECT_EQ((*devices)[0].partitions, std::vector<uint32_t>{p->id});
  auto listed = client.list();
  ASSERT_TRUE(listed) << listed.message();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].label, "unit");
  EXPECT_EQ((*listed)[0].holderPid, ::getpid());

  ASSERT_TRUE(client.release(p->id));
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps);
  EXPECT_TRUE(partitionNodes().empty());
  auto again = client.release(p->id);
  EXPECT_EQ(again.error(), ENOENT) << again.message();
}

TEST_F(QaicdTest, RefusalsNameTheDeviceAndTheResource) {
  auto client = connect();
  auto nsp = client.createPartition(Resources{kDeviceNsps + 1, 0, 0, 1, 0}, 0u);
  ASSERT_FALSE(nsp);
  EXPECT_EQ(nsp.error(), ENOSPC);
  EXPECT_NE(nsp.message().find("device 0: numNsp: 9 requested, 8 free"), std::string::npos) << nsp.message();

  auto holding = client.createPartition(Resources{1, 0, 0, 6, 0}, 0u);
  ASSERT_TRUE(holding) << holding.message();
  auto vc = client.createPartition(Resources{1, 0, 0, 3, 0});
  ASSERT_FALSE(vc);
  EXPECT_EQ(vc.error(), ENOSPC);
  EXPECT_NE(vc.message().find("numVc: 3 requested, 2 free"), std::string::npos) << vc.message();

  auto ddr = client.createPartition(Resources{1, 0, 0, 1, uint64_t{1} << 50}, 0u);
  ASSERT_FALSE(ddr);
  EXPECT_EQ(ddr.error(), ENOSPC);
  EXPECT_NE(ddr.message().find("ddrSize: 1125899906842624 requested"), std::string::npos) << ddr.message();

  auto missing = client.createPartition(Resources{1, 0, 0, 1, 0}, 7u);
  EXPECT_EQ(missing.error(), ENODEV) << missing.message();
  EXPECT_NE(missing.message().find("device 7"), std::string::npos);
  // Nothing was taken by the refusals.
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps - 1);
  EXPECT_EQ(partitionNodes().size(), 1u);
}

TEST_F(QaicdTest, DevicesAddedAtRunTimeShowUpAndTakePartitions) {
  auto client = connect();
  ASSERT_TRUE(addDevice(client, 2)) << "device 1 never showed up in devices";
  auto p = client.createPartition(Resources{2, 0, 0, 1, 0}, 1u);
  ASSERT_TRUE(p) << p.message();
  EXPECT_EQ(p->device, 1u);
  EXPECT_EQ(attribute(1, driver::sysfs::kEmuNspFree), kDeviceNsps - 2);
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps);
  // Without a device: the first with room.
  auto big = client.createPartition(Resources{kDeviceNsps - 1, 0, 0, 1, 0});
  ASSERT_TRUE(big) << big.message();
  EXPECT_EQ(big->device, 0u);
  auto second = client.createPartition(Resources{kDeviceNsps - 2, 0, 0, 1, 0});
  ASSERT_TRUE(second) << second.message();
  EXPECT_EQ(second->device, 1u);
  auto none = client.createPartition(Resources{2, 0, 0, 1, 0});
  EXPECT_EQ(none.error(), ENOSPC);
  EXPECT_NE(none.message().find("device 0: numNsp: 2 requested, 1 free"), std::string::npos) << none.message();
  EXPECT_NE(none.message().find("device 1: numNsp: 2 requested, 0 free"), std::string::npos) << none.message();
}

TEST_F(QaicdTest, DeviceRemovedWhilePartitionedIsDroppedAndTheDaemonServesOn) {
  auto client = connect();
  ASSERT_TRUE(addDevice(client, 2)) << "device 1 never showed up in devices";
  auto p = client.createPartition(Resources{2, 0, 0, 1, 0}, 0u);
  ASSERT_TRUE(p) << p.message();
  std::ofstream(emu_->root().path() / "sys/class/accel/accel0/qaic-emu/fault/remove") << "1";
  ASSERT_TRUE(testing::eventually(
      [&] {
        auto d = client.devices();
        auto l = client.list();
        return d && l && d->size() == 1 && (*d)[0].id == 1 && l->empty();
      },
      10s))
      << "device 0 and its partition are still listed";
  EXPECT_EQ(::kill(qaicd_->pid(), 0), 0) << "qaicd died";
  auto release = client.release(p->id);
  EXPECT_EQ(release.error(), ENOENT) << release.message();
  auto next = client.createPartition(Resources{1, 0, 0, 1, 0});
  ASSERT_TRUE(next) << next.message();
  EXPECT_EQ(next->device, 1u);
  EXPECT_NE(qaicd_->log().find("device 0 went away: dropping partition " + std::to_string(p->id)), std::string::npos);
}

TEST_F(QaicdTest, ASecondDaemonOnTheSameSocketIsRefused) {
  const auto r = testing::runCapturing(
      {testing::QaicdProcess::binary().string(), "--root", rootPath(), "--socket", socketPath(), "--daemon"}, 60s);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("another qaicd"), std::string::npos) << r.err;
  auto client = connect();
  EXPECT_TRUE(client.hello());
}

TEST_F(QaicdTest, BadConfigurationAndArgumentsExit2NamingTheField) {
  const auto config = work_.writeFile(
      "bad.json", R"({"static_partitions": [{"name": "a", "device": 0, "uid": 0, "numNsp": 1, "numVc": 0}]})");
  const std::string qaicd = testing::QaicdProcess::binary().string();
  const auto r = testing::runCapturing(
      {qaicd, "--root", rootPath(), "--socket", (work() / "other.sock").string(), "--config", config.string()}, 60s);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("bad.json: static_partitions[0].numVc: must be at least 1"), std::string::npos) << r.err;
  const auto bad = testing::runCapturing({qaicd, "--poll-ms", "zero"}, 60s);
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_NE(bad.err.find("--poll-ms"), std::string::npos) << bad.err;
}

class StaticPartitionTest : public QaicdTest {
 protected:
  std::vector<std::string> qaicdArgs() const override {
    const std::string config = (work() / "qaicd.json").string();
    std::ofstream(config) << R"({"poll_ms": 50, "static_partitions": [
        {"name": "team-a", "device": 0, "user": "nobody", "numNsp": 2, "numVc": 1},
        {"name": "team-b", "device": 0, "gid": 0, "numNsp": 1, "numVc": 1, "numSem": 8}]})";
    return {"--config", config};
  }
};

TEST_F(StaticPartitionTest, CreatedAtStartForUsersAndGroupsAndKeptAcrossRestart) {
  auto client = connect();
  auto listed = client.list();
  ASSERT_TRUE(listed) << listed.message();
  ASSERT_EQ(listed->size(), 2u);
  std::map<std::string, PartitionInfo> byLabel;
  for (const auto& p : *listed) byLabel[p.label] = p;
  ASSERT_EQ(byLabel.count("static:team-a"), 1u);
  ASSERT_EQ(byLabel.count("static:team-b"), 1u);
  const auto a = byLabel["static:team-a"];
  const auto b = byLabel["static:team-b"];
  EXPECT_TRUE(a.isStatic);
  EXPECT_EQ(a.holderPid, 0);
  EXPECT_EQ(a.resources.numNsp, 2u);
  struct stat st {};
  ASSERT_EQ(::stat(a.node.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, a.ownerUid);
  EXPECT_NE(a.ownerUid, 0u);
  ASSERT_EQ(::stat(b.node.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(st.st_gid, 0u);
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps - 3);
  // A static partition has no lease to adopt.
  EXPECT_EQ(client.adopt(a.id).error(), EPERM);

  ASSERT_TRUE(stopQaicd());
  EXPECT_EQ(partitionNodes().size(), 2u) << "SIGTERM must leave partitions on the device";
  startQaicd(qaicdArgs());
  auto again = connect().list();
  ASSERT_TRUE(again) << again.message();
  ASSERT_EQ(again->size(), 2u) << "restart re-creates instead of re-adopting";
  std::set<uint32_t> ids{(*again)[0].id, (*again)[1].id};
  EXPECT_EQ(ids, (std::set<uint32_t>{a.id, b.id}));
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps - 3);
}

TEST_F(StaticPartitionTest, OneDroppedFromTheConfigurationIsRemovedAtTheNextStart) {
  auto listed = connect().list();
  ASSERT_TRUE(listed) << listed.message();
  ASSERT_EQ(listed->size(), 2u);
  uint32_t kept = 0;
  for (const auto& p : *listed)
    if (p.label == "static:team-a") kept = p.id;
  ASSERT_NE(kept, 0u);
  // A lease is not the configuration's to drop: it stays.
  auto client = connect();
  auto leased = client.createPartition(Resources{1, 0, 0, 1, 0}, 0u);
  ASSERT_TRUE(leased) << leased.message();

  ASSERT_TRUE(stopQaicd());
  const std::string config = (work() / "qaicd-smaller.json").string();
  std::ofstream(config) << R"({"poll_ms": 50, "static_partitions": [
      {"name": "team-a", "device": 0, "user": "nobody", "numNsp": 2, "numVc": 1}]})";
  startQaicd({"--config", config});
  auto again = connect().list();
  ASSERT_TRUE(again) << again.message();
  std::set<std::string> labels;
  for (const auto& p : *again) labels.insert(p.label);
  EXPECT_EQ(labels.count("static:team-a"), 1u);
  EXPECT_EQ(labels.count("static:team-b"), 0u) << "team-b left the configuration";
  for (const auto& p : *again) {
    if (p.label == "static:team-a") {
      EXPECT_EQ(p.id, kept) << "team-a is kept, not re-created";
    }
  }
  EXPECT_EQ(partitionNodes().size(), 2u) << "team-a and the lease";
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps - 3) << "team-b's NSP is back";
}

TEST_F(StaticPartitionTest, ADeviceResetEndsLeasesAndStaticPartitionsComeBack) {
  auto client = connect();
  auto leased = client.createPartition(Resources{1, 0, 0, 1, 0}, 0u);
  ASSERT_TRUE(leased) << leased.message();
  auto before = client.list();
  ASSERT_TRUE(before);
  ASSERT_EQ(before->size(), 3u);
  std::ofstream(emu_->root().path() / "sys/class/accel/accel0/qaic-emu/fault/reset") << "1";
  // The reset ends every partition; qaicd forgets the lease and creates the static ones again.
  ASSERT_TRUE(testing::eventually(
      [&] {
        auto now = client.list();
        if (!now || now->size() != 2) return false;
        for (const auto& p : *now)
          if (!p.isStatic || p.id == leased->id) return false;
        return true;
      },
      10s))
      << "static partitions were not re-created after the reset";
  EXPECT_EQ(client.release(leased->id).error(), ENOENT);
  EXPECT_TRUE(testing::eventually([&] { return attribute(0, driver::sysfs::kEmuNspFree) == kDeviceNsps - 3; }, 10s));
}

}  // namespace
}  // namespace qaic::qaicd::test
