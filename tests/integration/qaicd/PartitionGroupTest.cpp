// SPDX-License-Identifier: Apache-2.0
// qaicd's partition groups (docs/qaicd.md, "Groups"): one partition on each of several devices,
// made together or not at all, held by one connection, through qaicd and qaic-util.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "DeviceAttributes.hpp"
#include "MultiDeviceProgram.hpp"
#include "Paths.hpp"
#include "Process.hpp"
#include "QaicdTest.hpp"

namespace qaic::qaicd::test {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::Process;
using testing::ProcessOptions;

class PartitionGroupTest : public QaicdTest {
 protected:
  std::string emulatorConfig() const override {
    // Cards 0 and 2 behind one switch, card 1 alone (docs/emulator.md, "Peer-to-peer topology").
    return R"({"devices": [{"nsps": 8, "dbcs": 8}, {"nsps": 8, "dbcs": 8}, {"nsps": 8, "dbcs": 8}],
               "p2p_groups": [[0, 2], [1]], "semaphore_timeout_ms": 2000, "compute_threads": 1})";
  }
  uint64_t nspFree(unsigned device) const { return attribute(device, driver::sysfs::kEmuNspFree); }
  bool everyDeviceWhole() const { return deviceWhole(0) && deviceWhole(1) && deviceWhole(2); }
};

TEST_F(PartitionGroupTest, ListedDevicesEachTakeOnePartitionAndTheConnectionHoldsThemAll) {
  {
    auto client = connect();
    auto group = client.createGroup(Resources{3, 0, 0, 1, 0}, {2, 0}, 0, "tp");
    ASSERT_TRUE(group) << group.message();
    ASSERT_EQ(group->size(), 2u);
    EXPECT_EQ((*group)[0].device, 2u);  // in the order listed
    EXPECT_EQ((*group)[1].device, 0u);
    for (const auto& p : *group) {
      EXPECT_EQ(p.label, "tp");
      EXPECT_EQ(p.holderPid, ::getpid());
      EXPECT_EQ(attribute(p.id, driver::sysfs::kEmuNspTotal), 3u);
    }
    EXPECT_EQ(nspFree(0), kDeviceNsps - 3);
    EXPECT_EQ(nspFree(1), kDeviceNsps);
    EXPECT_EQ(nspFree(2), kDeviceNsps - 3);
    auto listed = client.list();
    ASSERT_TRUE(listed) << listed.message();
    EXPECT_EQ(listed->size(), 2u);
  }
  // The connection was the lease of both.
  EXPECT_TRUE(eventually([&] { return everyDeviceWhole(); }, 10s));
}

TEST_F(PartitionGroupTest, ACountTakesTheFirstDevicesWithRoomAndPassesOverFullOnes) {
  auto client = connect();
  auto filler = client.createPartition(Resources{kDeviceNsps - 1, 0, 0, 1, 0}, 0u);
  ASSERT_TRUE(filler) << filler.message();
  auto group = client.createGroup(Resources{4, 0, 0, 1, 0}, {}, 2);
  ASSERT_TRUE(group) << group.message();
  ASSERT_EQ(group->size(), 2u);
  EXPECT_EQ((*group)[0].device, 1u);
  EXPECT_EQ((*group)[1].device, 2u);
}

TEST_F(PartitionGroupTest, AGroupThatCannotBeCompletedTakesNothing) {
  auto client = connect();
  auto filler = client.createPartition(Resources{kDeviceNsps - 1, 0, 0, 1, 0}, 1u);
  ASSERT_TRUE(filler) << filler.message();

  // Listed: device 0 takes its part, device 1 has no room; device 0's part is undone.
  auto listed = client.createGroup(Resources{4, 0, 0, 1, 0}, {0, 1, 2}, 0);
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error(), ENOSPC);
  EXPECT_NE(listed.message().find("devices[1]: device 1: numNsp: 4 requested, 1 free"), std::string::npos)
      << listed.message();
  EXPECT_TRUE(eventually([&] { return nspFree(0) == kDeviceNsps && nspFree(2) == kDeviceNsps; }, 10s));

  // Counted: two of the three devices have room, three are asked for.
  auto counted = client.createGroup(Resources{4, 0, 0, 1, 0}, {}, 3);
  ASSERT_FALSE(counted);
  EXPECT_EQ(counted.error(), ENOSPC);
  EXPECT_NE(counted.message().find("a group of 3 devices cannot be completed: device 1: numNsp: 4 requested, 1 free"),
            std::string::npos)
      << counted.message();
  EXPECT_TRUE(eventually([&] { return nspFree(0) == kDeviceNsps && nspFree(2) == kDeviceNsps; }, 10s));
  auto left = client.list();
  ASSERT_TRUE(left) << left.message();
  EXPECT_EQ(left->size(), 1u);  // only the filler

  // More devices than there are, and an unknown one.
  auto tooMany = client.createGroup(Resources{1, 0, 0, 1, 0}, {}, 4);
  EXPECT_EQ(tooMany.error(), ENOSPC) << tooMany.message();
  EXPECT_NE(tooMany.message().find("deviceCount: 4 devices requested, 3 present"), std::string::npos)
      << tooMany.message();
  auto unknown = client.createGroup(Resources{1, 0, 0, 1, 0}, {0, 9}, 0);
  EXPECT_EQ(unknown.error(), ENODEV) << unknown.message();
  EXPECT_NE(unknown.message().find("devices[1]: device 9: no such device"), std::string::npos) << unknown.message();
  EXPECT_TRUE(eventually([&] { return nspFree(0) == kDeviceNsps; }, 10s));
}

TEST_F(PartitionGroupTest, MalformedGroupsAreRefusedNamingTheField) {
  auto client = connect();
  const std::pair<std::string, std::string> cases[] = {
      {R"({"id":1,"op":"create","numNsp":1,"numVc":1,"devices":[0,0]})", "devices[1]: device 0 is listed twice"},
      {R"({"id":2,"op":"create","numNsp":1,"numVc":1,"devices":[]})", "devices: must be an array of 1 to 64"},
      {R"({"id":3,"op":"create","numNsp":1,"numVc":1,"devices":["0"]})", "devices[0]"},
      {R"({"id":4,"op":"create","numNsp":1,"numVc":1,"deviceCount":0})", "deviceCount: must be at least 1"},
      {R"({"id":5,"op":"create","numNsp":1,"numVc":1,"deviceCount":65})", "deviceCount"},
      {R"({"id":6,"op":"create","numNsp":1,"numVc":1,"device":0,"deviceCount":2})",
       "device: a single device cannot be combined"},
      {R"({"id":7,"op":"create","numNsp":1,"numVc":1,"devices":[0,1],"deviceCount":3})",
       "deviceCount: 3 but devices lists 2"},
  };
  for (const auto& [line, expected] : cases) {
    auto answer = client.exchange(line);
    ASSERT_TRUE(answer) << answer.message();
    const auto j = nlohmann::json::parse(*answer);
    EXPECT_FALSE(j.value("ok", true)) << *answer;
    ASSERT_TRUE(j.contains("error")) << *answer;
    EXPECT_EQ(j["error"].value("code", ""), "EINVAL") << *answer;
    EXPECT_NE(j["error"].value("message", "").find(expected), std::string::npos) << line << " -> " << *answer;
  }
  EXPECT_TRUE(everyDeviceWhole());
}

TEST_F(PartitionGroupTest, QaicUtilCreateHoldsAGroupForItsCommand) {
  const std::string script =
      "echo first=$QAIC_PARTITION all=$QAIC_PARTITIONS; for p in $(echo $QAIC_PARTITIONS | tr , ' '); do "
      "echo nsps=$(cat \"$QAIC_ROOT/sys/class/accel/accel$p/qaic-emu/nsp_total\"); done";
  ProcessOptions options;
  options.captureStdout = true;
  options.environment = {"QAIC_ROOT=" + rootPath(), "QAICD_SOCKET=" + socketPath()};
  Process tool(
      {testing::programPath("qaic-util").string(), "create", "--nsp", "2", "-d", "1,2", "--", "/bin/sh", "-c", script},
      options);
  const int status = tool.finish(60s).shellCode();
  const std::string out = tool.output();
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("created on QID 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("created on QID 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find(" all="), std::string::npos) << out;
  const auto all = out.substr(out.find(" all=") + 5, out.find('\n', out.find(" all=")) - out.find(" all=") - 5);
  EXPECT_NE(all.find(','), std::string::npos) << out;
  EXPECT_NE(out.find("first=" + all.substr(0, all.find(','))), std::string::npos) << out;
  std::size_t twos = 0;
  for (std::size_t at = out.find("nsps=2\n"); at != std::string::npos; at = out.find("nsps=2\n", at + 1)) ++twos;
  EXPECT_EQ(twos, 2u) << out;
  EXPECT_NE(out.find(" released\n"), std::string::npos) << out;
  EXPECT_TRUE(eventually([&] { return everyDeviceWhole(); }, 10s));

  // Usage errors exit 2 naming the option.
  ProcessOptions quiet;
  quiet.captureStdout = true;
  quiet.stderrToStdout = true;
  quiet.environment = options.environment;
  Process twice({testing::programPath("qaic-util").string(), "create", "--nsp", "1", "-d", "1,1"}, quiet);
  EXPECT_EQ(twice.finish(30s).shellCode(), 2);
  EXPECT_NE(twice.output().find("-d: device 1 is listed twice"), std::string::npos) << twice.output();
}

// qaic-util create --qpc of a multi-device program: one partition per part, made together, each
// sized for the largest part; a device count or list that does not match the parts is refused.
TEST_F(PartitionGroupTest, QaicUtilCreateSizesAGroupFromAMultiDeviceProgram) {
  const auto dir = std::filesystem::path(rootPath()).parent_path() / ("mdp-qpc-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto bytes = testing::multiDeviceReluProgram({0, 1}, 3);
  std::ofstream(dir / "programqpc.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ProcessOptions options;
  options.captureStdout = true;
  options.stderrToStdout = true;
  options.environment = {"QAIC_ROOT=" + rootPath(), "QAICD_SOCKET=" + socketPath()};
  const std::string script =
      "for p in $(echo $QAIC_PARTITIONS | tr , ' '); do "
      "echo nsps=$(cat \"$QAIC_ROOT/sys/class/accel/accel$p/qaic-emu/nsp_total\"); done";
  Process tool({testing::programPath("qaic-util").string(), "create", "--qpc", dir.string(), "-d", "0,2", "--",
                "/bin/sh", "-c", script},
               options);
  EXPECT_EQ(tool.finish(60s).shellCode(), 0) << tool.output();
  const std::string out = tool.output();
  EXPECT_NE(out.find("created on QID 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("created on QID 2\n"), std::string::npos) << out;
  std::size_t threes = 0;
  for (std::size_t at = out.find("nsps=3\n"); at != std::string::npos; at = out.find("nsps=3\n", at + 1)) ++threes;
  EXPECT_EQ(threes, 2u) << out;
  EXPECT_TRUE(eventually([&] { return everyDeviceWhole(); }, 10s));

  for (const std::vector<std::string>& devices :
       {std::vector<std::string>{"-d", "0"}, {"--device-count", "3"}, {"-d", "0,1,2"}}) {
    std::vector<std::string> args = {testing::programPath("qaic-util").string(), "create", "--qpc", dir.string()};
    args.insert(args.end(), devices.begin(), devices.end());
    Process refused(args, options);
    EXPECT_EQ(refused.finish(30s).shellCode(), 2) << devices[1] << "\n" << refused.output();
    EXPECT_NE(refused.output().find("a program of 2 device parts needs a group of 2 partitions"), std::string::npos)
        << refused.output();
  }
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(everyDeviceWhole());
}

// The devices answer lists each card's peers, and qaic-util -q and -j show them.
TEST_F(PartitionGroupTest, DevicesListTheirP2pPeers) {
  auto client = connect();
  auto devices = client.devices();
  ASSERT_TRUE(devices) << devices.message();
  ASSERT_EQ(devices->size(), 3u);
  std::map<uint32_t, std::optional<std::vector<uint32_t>>> peers;
  for (const auto& d : *devices) peers[d.id] = d.p2pPeers;
  EXPECT_EQ(peers[0], (std::vector<uint32_t>{2}));
  EXPECT_EQ(peers[1], std::vector<uint32_t>{});
  EXPECT_EQ(peers[2], (std::vector<uint32_t>{0}));

  ProcessOptions options;
  options.captureStdout = true;
  options.environment = {"QAIC_ROOT=" + rootPath(), "QAICD_SOCKET=" + socketPath()};
  Process query({testing::programPath("qaic-util").string(), "-q"}, options);
  ASSERT_EQ(query.finish(30s).shellCode(), 0) << query.output();
  const std::string out = query.output();
  const auto block = [&](const std::string& qid) {
    const auto at = out.find("QID " + qid + "\n");
    return at == std::string::npos ? std::string() : out.substr(at, out.find("QID ", at + 4) - at);
  };
  EXPECT_NE(block("0").find("\tP2P Peers:2\n"), std::string::npos) << out;
  EXPECT_NE(block("1").find("\tP2P Peers:none\n"), std::string::npos) << out;
  EXPECT_NE(block("2").find("\tDevice Capabilities:HybridBoot- MDP+ ECC+\n"), std::string::npos) << out;
  EXPECT_NE(block("1").find("\tDevice Capabilities:HybridBoot- MDP- ECC+\n"), std::string::npos) << out;
  // A filter on the line picks the card without peers.
  Process filtered({testing::programPath("qaic-util").string(), "-q", "-f", "P2P Peers==none"}, options);
  ASSERT_EQ(filtered.finish(30s).shellCode(), 0) << filtered.output();
  EXPECT_NE(filtered.output().find("QID 1\n"), std::string::npos) << filtered.output();
  EXPECT_EQ(filtered.output().find("QID 0\n"), std::string::npos) << filtered.output();
  Process json({testing::programPath("qaic-util").string(), "-j"}, options);
  ASSERT_EQ(json.finish(30s).shellCode(), 0) << json.output();
  const auto listed = nlohmann::json::parse(json.output());
  ASSERT_EQ(listed["devices"].size(), 3u) << json.output();
  EXPECT_EQ(listed["devices"][2]["p2p_peers"], nlohmann::json::array({0})) << json.output();
  EXPECT_EQ(listed["devices"][1]["p2p_peers"], nlohmann::json::array()) << json.output();
}

}  // namespace
}  // namespace qaic::qaicd::test
