// SPDX-License-Identifier: Apache-2.0
// qaic-util and partitions without qaicd: -q, -d, -j, -t and list read a partition from its node's
// status query and the sys tree (it is created here with the driver's partition command, as qaicd
// would), and the commands that need qaicd say clearly that it is not running.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "DeviceAttributes.hpp"
#include "DeviceClient.hpp"
#include "PartitionToolFixture.hpp"
#include "Process.hpp"

namespace qaic::testing {
namespace {

using namespace driver;

class PartitionQueryTest : public PartitionToolTest {
 protected:
  // A partition of 3 NSPs, 2 VCs, 64 semaphores, 1 MCID and 512 MB for uid 0, held by this process.
  unsigned createDirectly(const char* label) {
    auto node = DeviceNode::open(root(), 0);
    if (!node) throw std::runtime_error(node.message());
    PartitionRequest r{};
    r.magic = kPartitionMagic;
    r.version = kPartitionVersion;
    r.op = static_cast<uint32_t>(PartitionOp::Create);
    r.resources.numNsp = 3;
    r.resources.numMcid = 1;
    r.resources.numSem = 64;
    r.resources.numVc = 2;
    r.resources.ddrSize = 512ull << 20;
    r.ownerUid = 0;
    r.ownerGid = 0;
    r.mode = 0600;
    r.holderPid = ::getpid();
    std::strncpy(r.label, label, sizeof r.label - 1);
    auto answer = partitionCommand(*node, r);
    if (!answer || answer->status != 0) throw std::runtime_error("partition create failed");
    return answer->partitionId;
  }
};

TEST_F(PartitionQueryTest, QueryPrintsAPartitionBlockWithItsOwnNumbers) {
  const unsigned id = createDirectly("team-a");
  const auto r = runTool("qaic-util", {"-q"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string block = queryBlock(r.out, id);
  ASSERT_FALSE(block.empty()) << r.out;
  for (const std::string line :
       {"\tStatus:Ready", "\tNsp Total:3", "\tNsp Free:3", "\tVc Total:2", "\tVc Free:2", "\tMCID Total:1",
        "\tSemaphore Total:64", "\tDram Total:512 MB", "\tDram Free:512 MB", "\tNetworks Active:0", "\tParent QID:0",
        "\tOwner UID:0", "\tMode:0600", "\tLabel:team-a"})
    EXPECT_NE(block.find(line + "\n"), std::string::npos) << line << "\n" << block;
  EXPECT_NE(block.find("\tHolder PID:" + std::to_string(::getpid()) + "\n"), std::string::npos) << block;
  EXPECT_EQ(block.find("\tHolder:"), std::string::npos) << "holder details need qaicd\n" << block;
  // The parent lends what the partition holds, and its block has no partition lines.
  const std::string parent = queryBlock(r.out, 0);
  EXPECT_NE(parent.find("\tNsp Free:" + std::to_string(kDeviceNsps - 3) + "\n"), std::string::npos) << parent;
  EXPECT_EQ(parent.find("Parent QID"), std::string::npos) << parent;

  const auto only = runTool("qaic-util", {"-d", std::to_string(id)});
  ASSERT_EQ(only.exitCode, 0) << only.err;
  EXPECT_EQ(only.out.rfind("QID " + std::to_string(id) + "\n", 0), 0u) << only.out;
  EXPECT_EQ(only.out.find("QID 0\n"), std::string::npos) << only.out;
}

// qaic-util takes the figures from the STATUS query over MANAGE, as the vendor's tools do; its
// lines are the ones it printed when it read them from files, and the emulator's qaic-emu/
// figure files (rendered from the same report), its identity files and the PCI function's
// attributes agree with every one, in order.
TEST_F(PartitionQueryTest, QueryOfADeviceIsTheStatusReportLineForLine) {
  createDirectly("lends-from-0");  // so that free differs from total on device 0
  const auto r = runTool("qaic-util", {"-q", "-d", "0"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const driver::SysfsDevice sysfs(root(), 0);
  auto file = [&](const std::string& name) {
    auto v = sysfs.read(name);
    if (!v) throw std::runtime_error(v.message());
    return *v;
  };
  namespace names = driver::sysfs;
  const std::string hwmon = std::string(names::kHwmonDir) + "/hwmon0/";
  auto scaled = [&](const std::string& name, double scale) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", static_cast<double>(std::stoull(file(name))) / scale);
    return std::string(text);
  };
  const char* const stateNames[] = {"idle",           "assigned",        "before shutdown",
                                    "after shutdown", "before power up", "after power up"};
  std::vector<std::pair<std::string, std::string>> lines = {
      {"Status", file(names::kEmuStatus)},
      {"PCI Address", file(names::kEmuPciAddress)},
      {"PCI Info", "Vendor " + file(names::kPciVendor) + " Device " + file(names::kPciDevice)},
      {"HW Version", file(names::kEmuHwVersion)},
      {"HW Serial", file(names::kEmuSerial)},
      {"FW Version", file(names::kEmuFwVersion)},
      {"FW QC_IMAGE_VERSION", file(names::kEmuFwQcImageVersion)},
      {"FW OEM_IMAGE_VERSION", file(names::kEmuFwOemImageVersion)},
      {"FW IMAGE_VARIANT", file(names::kEmuFwImageVariant)},
      {"NSP Version", file(names::kEmuNspVersion)},
      {"NSP QC_IMAGE_VERSION", file(names::kEmuNspQcImageVersion)},
      {"NSP IMAGE_VARIANT", file(names::kEmuNspImageVariant)},
      {"Dram Total", file(names::kEmuDramTotal) + " MB"},
      {"Dram Free", file(names::kEmuDramFree) + " MB"},
      {"Vc Total", file(names::kEmuVcTotal)},
      {"Vc Free", file(names::kEmuVcFree)},
      {"Nsp Total", file(names::kEmuNspTotal)},
      {"Nsp Free", file(names::kEmuNspFree)},
      {"MCID Total", file(names::kEmuMcidTotal)},
      {"MCID Free", file(names::kEmuMcidFree)},
      {"Semaphore Total", file(names::kEmuSemTotal)},
      {"Semaphore Free", file(names::kEmuSemFree)},
      {"Constants Loaded", file(names::kEmuConstantsLoaded)},
      {"Constants In-Use", file(names::kEmuConstantsInUse)},
      {"Networks Loaded", file(names::kEmuNetworksLoaded)},
      {"Networks Active", file(names::kEmuNetworksActive)},
      {"NSP Frequency(Mhz)", file(names::kEmuNspFrequencyMhz)},
      {"DDR Frequency(Mhz)", file(names::kEmuDdrFrequencyMhz)},
      {"Sku Type", file(names::kEmuSku)},
      {"Device Capabilities", file(names::kEmuDeviceCapabilities)},
      // One card: no peer (the emulator's p2p_peers is an empty line).
      {"P2P Peers", file(names::kEmuP2pPeers).empty() ? "none" : file(names::kEmuP2pPeers)},
      {"Max Link Speed", file(names::kMaxLinkSpeed)},
      {"Max Link Width", "x" + file(names::kMaxLinkWidth)},
      {"Current Link Speed", file(names::kCurrentLinkSpeed)},
      {"Current Link Width", "x" + file(names::kCurrentLinkWidth)}};
  for (uint32_t i = 0; i < kDeviceVcs; ++i)
    lines.emplace_back("DBC" + std::to_string(i) + " State", stateNames[std::stoul(file(names::dbcState(i)))]);
  lines.insert(lines.end(), {{"Board serial", file(names::kEmuBoardSerial)},
                             {"SoC temperature(degree C)", scaled(hwmon + names::kHwmonTemperature, 1e3)},
                             {"Board power(Watts)", scaled(hwmon + names::kHwmonPower, 1e6)},
                             {"TDP Cap(Watts)", scaled(hwmon + names::kHwmonPowerCap, 1e6)}});
  std::string expected = "QID 0\n";
  for (const auto& [label, value] : lines) expected += "\t" + label + ":" + value + "\n";
  EXPECT_EQ(r.out, expected);
  EXPECT_NE(r.out.find("\tNsp Free:" + std::to_string(kDeviceNsps - 3) + "\n"), std::string::npos) << r.out;
}

TEST_F(PartitionQueryTest, JsonListsPartitionsApartFromDevices) {
  const unsigned id = createDirectly("json");
  const auto r = runTool("qaic-util", {"-j"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["devices"].size(), 1u) << r.out;
  EXPECT_EQ(doc["devices"][0]["nsp_free"], kDeviceNsps - 3);
  ASSERT_EQ(doc["partitions"].size(), 1u) << r.out;
  const auto& p = doc["partitions"][0];
  EXPECT_EQ(p["qid"], id);
  EXPECT_EQ(p["nsp_total"], 3u);
  EXPECT_EQ(p["vc_total"], 2u);
  EXPECT_EQ(p["semaphore_total"], 64u);
  EXPECT_EQ(p["dram_total_mb"], 512u);
  EXPECT_EQ(p["partition"]["parent"], 0u);
  EXPECT_EQ(p["partition"]["label"], "json");
  EXPECT_EQ(p["partition"]["holder_pid"], ::getpid());
  EXPECT_FALSE(p["partition"].contains("holder")) << "holder details need qaicd";
}

TEST_F(PartitionQueryTest, TableHasARowPerPartition) {
  const unsigned id = createDirectly("table");
  const auto r = runTool("qaic-util", {"-t", "1", "--count", "1"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("Partition of"), std::string::npos) << r.out;
  const std::size_t row = r.out.find("\n" + std::to_string(id) + " ");
  ASSERT_NE(row, std::string::npos) << r.out;
  const std::string line = r.out.substr(row + 1, r.out.find('\n', row + 1) - row - 1);
  EXPECT_NE(line.find("0 / 3"), std::string::npos) << line;
  EXPECT_NE(line.find("0 / 512 MB"), std::string::npos) << line;
  EXPECT_NE(line.find("QID 0"), std::string::npos) << line;
}

TEST_F(PartitionQueryTest, ListWithoutQaicdReadsTheSysTree) {
  const unsigned id = createDirectly("from-sys");
  const auto r = runTool("qaic-util", {"list"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("qaicd is not running (socket " + socketPath() + ")"), std::string::npos) << r.err;
  const std::size_t row = r.out.find("\n" + std::to_string(id) + " ");
  ASSERT_NE(row, std::string::npos) << r.out;
  const std::string line = r.out.substr(row + 1);
  EXPECT_NE(line.find("512 MB"), std::string::npos) << line;
  EXPECT_NE(line.find("from-sys"), std::string::npos) << line;

  const auto j = runTool("qaic-util", {"list", "-j"});
  ASSERT_EQ(j.exitCode, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["source"], "sysfs");
  ASSERT_EQ(doc["partitions"].size(), 1u) << j.out;
  EXPECT_EQ(doc["partitions"][0]["id"], id);
  EXPECT_EQ(doc["partitions"][0]["numNsp"], 3u);
  EXPECT_EQ(doc["partitions"][0]["numVc"], 2u);
  EXPECT_EQ(doc["partitions"][0]["ddr_mb"], 512u);
  EXPECT_EQ(doc["partitions"][0]["ddr_free_mb"], 512u);
  EXPECT_EQ(doc["partitions"][0]["holder_pid"], ::getpid());
}

TEST_F(PartitionQueryTest, CreateAndRemoveSayQaicdIsNotRunning) {
  const std::string expected = "qaicd is not running (socket " + socketPath() + ")";
  const auto created = runTool("qaic-util", {"create", "--nsp", "1"});
  EXPECT_EQ(created.exitCode, 1);
  EXPECT_NE(created.err.find(expected), std::string::npos) << created.err;
  EXPECT_TRUE(partitionNodes().empty());
  const auto removed = runTool("qaic-util", {"remove", "100"});
  EXPECT_EQ(removed.exitCode, 1);
  EXPECT_NE(removed.err.find(expected), std::string::npos) << removed.err;
}

TEST_F(PartitionQueryTest, BadCreateArgumentsAndResourceFilesExitTwoNamingTheField) {
  auto expectUsage = [](const std::vector<std::string>& args, const std::string& needle) {
    const auto r = runTool("qaic-util", args);
    EXPECT_EQ(r.exitCode, 2) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << needle << "\n" << r.err;
  };
  expectUsage({"create"}, "exactly one of");
  expectUsage({"create", "--nsp", "1", "--qpc", "x"}, "exactly one of");
  expectUsage({"create", "--nsp", "0"}, "--nsp");
  expectUsage({"create", "--nsp", "two"}, "--nsp");
  expectUsage({"create", "--nsp", "1", "--"}, "needs a command");
  expectUsage({"create", "--nsp", "1", "--label", std::string(40, 'x')}, "--label");
  expectUsage({"remove", "12"}, "not a partition id");
  expectUsage({"list", "--bogus"}, "--bogus");

  const std::string file = (work_ / "resources.json").string();
  std::ofstream(file) << R"({"numNsp": 2, "numVc": 1, "numCats": 3})";
  expectUsage({"create", "--resources", file}, "numCats: unknown field");
  std::ofstream(file, std::ios::trunc) << R"({"numNsp": -2, "numVc": 1})";
  expectUsage({"create", "--resources", file}, "numNsp");
  std::ofstream(file, std::ios::trunc) << R"({"numNsp": 2)";
  expectUsage({"create", "--resources", file}, "not valid JSON");
  expectUsage({"create", "--resources", (work_ / "missing.json").string()}, "missing.json");
  expectUsage({"create", "--qpc", work_.str()}, "programqpc.bin");
  EXPECT_TRUE(partitionNodes().empty());
}

}  // namespace
}  // namespace qaic::testing
