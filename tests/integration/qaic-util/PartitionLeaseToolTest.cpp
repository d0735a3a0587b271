// SPDX-License-Identifier: Apache-2.0
// qaic-util create / list / remove / -q through a real qaicd: a command run inside a partition
// sees it and the lease ends with the command; a held lease shows its holder and ends on SIGTERM
// or remove; a refusal names the short resource.
#include <signal.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "CompileProgram.hpp"
#include "DeviceAttributes.hpp"
#include "PartitionToolFixture.hpp"
#include "Process.hpp"
#include "TestModels.hpp"

namespace qaic::testing {
namespace {

using namespace std::chrono_literals;

class PartitionLeaseToolTest : public PartitionToolTest {
 protected:
  void SetUp() override {
    PartitionToolTest::SetUp();
    if (HasFatalFailure()) return;
    startQaicd();
  }
  bool allReturned() const {
    try {
      return partitionNodes().empty() && attribute(0, driver::sysfs::kEmuNspFree) == kDeviceNsps &&
             attribute(0, driver::sysfs::kEmuVcFree) == kDeviceVcs;
    } catch (const std::exception&) {
      return false;
    }
  }
  // qaic-util create <args> held as a running child; returns the partition id it printed.
  // Its stdout and stderr are captured together.
  unsigned startHolder(std::unique_ptr<Process>& holder, const std::vector<std::string>& args) {
    std::vector<std::string> all = {programPath("qaic-util").string(), "create"};
    all.insert(all.end(), args.begin(), args.end());
    ProcessOptions options;
    options.captureStdout = true;
    options.stderrToStdout = true;
    holder = std::make_unique<Process>(all, options);
    if (!holder->waitForOutput("\tResources:", 60s)) throw std::runtime_error("no partition: " + holder->output());
    return static_cast<unsigned>(numberAfter(holder->output(), "Partition "));
  }
};

TEST_F(PartitionLeaseToolTest, CreateRunsTheCommandInsideThePartitionAndReleasesWhenItExits) {
  const auto r = runTool(
      "qaic-util",
      {"create", "--nsp", "2", "--label", "job", "--", "/bin/sh", "-c",
       "echo inside=$QAIC_PARTITION nsps=$(cat \"$QAIC_ROOT/sys/class/accel/accel$QAIC_PARTITION/qaic-emu/nsp_total\"); exit 7"});
  EXPECT_EQ(r.exitCode, 7) << "the command's status is passed through\n" << r.out << r.err;
  const long id = numberAfter(r.out, "Partition ");
  ASSERT_GE(id, 100) << r.out;
  EXPECT_NE(r.out.find("Partition " + std::to_string(id) + " created on QID 0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\tNode:" + (root().path() / "dev/accel/accel").string() + std::to_string(id) + "\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("inside=" + std::to_string(id) + " nsps=2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Partition " + std::to_string(id) + " released\n"), std::string::npos) << r.out;
  EXPECT_TRUE(allReturned()) << "the partition outlived the command";
}

TEST_F(PartitionLeaseToolTest, AHeldLeaseShowsItsHolderAndEndsOnSigterm) {
  std::unique_ptr<Process> holder;
  const unsigned id = startHolder(holder, {"-d", "0", "--nsp", "3", "--vc", "2", "--ddr-mb", "64", "--label", "held"});
  ASSERT_TRUE(nodeExists(id));
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps - 3);
  const std::string holderPid = std::to_string(holder->pid());

  const auto list = runTool("qaic-util", {"list"});
  ASSERT_EQ(list.exitCode, 0) << list.err;
  const std::size_t row = list.out.find("\n" + std::to_string(id) + " ");
  ASSERT_NE(row, std::string::npos) << list.out;
  const std::string line = list.out.substr(row + 1, list.out.find('\n', row + 1) - row - 1);
  for (const std::string& part : std::vector<std::string>{holderPid + " (qaic-util)", "64 MB", "held"})
    EXPECT_NE(line.find(part), std::string::npos) << part << "\n" << line;

  const auto listJson = runTool("qaic-util", {"list", "-j"});
  ASSERT_EQ(listJson.exitCode, 0) << listJson.err;
  const auto listed = nlohmann::json::parse(listJson.out);
  EXPECT_EQ(listed["source"], "qaicd");
  ASSERT_EQ(listed["partitions"].size(), 1u) << listJson.out;
  EXPECT_EQ(listed["partitions"][0]["holder_pid"], holder->pid());
  EXPECT_EQ(listed["partitions"][0]["numVc"], 2u);
  EXPECT_EQ(listed["partitions"][0]["ddr_mb"], 64u);
  EXPECT_EQ(listed["partitions"][0]["ddr_free_mb"], 64u) << "nothing runs in it yet";

  const auto query = runTool("qaic-util", {"-q"});
  ASSERT_EQ(query.exitCode, 0) << query.err;
  const std::string block = queryBlock(query.out, id);
  EXPECT_NE(block.find("\tNsp Total:3\n"), std::string::npos) << block;
  EXPECT_NE(block.find("\tVc Total:2\n"), std::string::npos) << block;
  EXPECT_NE(block.find("\tHolder PID:" + holderPid + "\n"), std::string::npos) << block;
  EXPECT_NE(block.find("\tHolder:pid " + holderPid + " (qaic-util), uid 0, lease from qaicd\n"), std::string::npos)
      << block;

  const auto json = runTool("qaic-util", {"-j"});
  ASSERT_EQ(json.exitCode, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  ASSERT_EQ(doc["partitions"].size(), 1u) << json.out;
  EXPECT_EQ(doc["partitions"][0]["partition"]["holder"]["pid"], holder->pid());
  EXPECT_EQ(doc["partitions"][0]["partition"]["ddr_bytes"], 64u << 20);

  holder->signal(SIGTERM);
  EXPECT_EQ(holder->finish(30s).shellCode(), 0) << holder->output();
  EXPECT_NE(holder->output().find("Partition " + std::to_string(id) + " released"), std::string::npos)
      << holder->output();
  EXPECT_TRUE(allReturned());
}

TEST_F(PartitionLeaseToolTest, AKilledHolderLosesItsPartition) {
  std::unique_ptr<Process> holder;
  const unsigned id = startHolder(holder, {"--nsp", "1"});
  ASSERT_TRUE(nodeExists(id));
  holder->signal(SIGKILL);
  EXPECT_EQ(holder->finish(30s).shellCode(), 128 + SIGKILL);
  EXPECT_TRUE(eventually([&] { return allReturned(); }, 10s)) << "the lease outlived its holder";
}

TEST_F(PartitionLeaseToolTest, ARefusalNamesTheShortResource) {
  const auto nsps = runTool("qaic-util", {"create", "--nsp", "9", "--", "/bin/true"});
  EXPECT_EQ(nsps.exitCode, 1);
  EXPECT_NE(nsps.err.find("numNsp: 9 requested, 8 free"), std::string::npos) << nsps.err;
  EXPECT_EQ(nsps.out.find("created"), std::string::npos) << nsps.out;
  const auto vcs = runTool("qaic-util", {"create", "-d", "0", "--nsp", "1", "--vc", "9"});
  EXPECT_EQ(vcs.exitCode, 1);
  EXPECT_NE(vcs.err.find("numVc"), std::string::npos) << vcs.err;
  const auto noDevice = runTool("qaic-util", {"create", "-d", "5", "--nsp", "1"});
  EXPECT_EQ(noDevice.exitCode, 1);
  EXPECT_NE(noDevice.err.find("device 5"), std::string::npos) << noDevice.err;
  EXPECT_TRUE(allReturned());
}

TEST_F(PartitionLeaseToolTest, RemoveEndsAHeldPartition) {
  std::unique_ptr<Process> holder;
  const unsigned id = startHolder(holder, {"--nsp", "2"});
  const auto removed = runTool("qaic-util", {"remove", std::to_string(id)});
  ASSERT_EQ(removed.exitCode, 0) << removed.err;
  EXPECT_EQ(removed.out, "Partition " + std::to_string(id) + " removed\n");
  EXPECT_TRUE(allReturned());
  const auto again = runTool("qaic-util", {"remove", std::to_string(id)});
  EXPECT_EQ(again.exitCode, 1);
  EXPECT_NE(again.err.find(std::to_string(id) + " does not exist"), std::string::npos) << again.err;
  // The holder notices at release time and still exits cleanly.
  holder->signal(SIGINT);
  EXPECT_EQ(holder->finish(30s).shellCode(), 0) << holder->output();
  EXPECT_NE(holder->output().find("warning: release of partition"), std::string::npos) << holder->output();
}

TEST_F(PartitionLeaseToolTest, SizesComeFromAResourceFileOrAContainer) {
  const std::string file = (work_ / "group.json").string();
  std::ofstream(file)
      << R"({"numNsp": 2, "numMcid": 1, "numSem": 40, "numVc": 1, "ddrSize": 134217728, "l2Region": 0})";
  const auto fromFile = runTool("qaic-util", {"create", "--resources", file, "--", "/bin/true"});
  ASSERT_EQ(fromFile.exitCode, 0) << fromFile.err;
  EXPECT_NE(fromFile.out.find("\tResources:numNsp 2 numMcid 1 numSem 40 numVc 1 ddrSize 134217728\n"),
            std::string::npos)
      << fromFile.out;

  // tiny: 3 cores, 1 semaphore and a 20480-byte IO region per activation, and 16 bytes of
  // constants once for both (the activations of one load share them on the card).
  qaic::testing::TempDir dir{"qaic-util-partition"};
  const std::string out = (dir.path() / "out").string();
  const auto compiled = runCompiler(container::testing::stageModel("tiny", dir.path()), out, {"-aic-num-cores=3"});
  ASSERT_EQ(compiled.exitCode, 0) << compiled.err;
  const auto fromQpc = runTool("qaic-util",
                               {"create", "--qpc", out, "--activations", "2", "--", "/bin/sh", "-c",
                                "cat \"$QAIC_ROOT/sys/class/accel/accel$QAIC_PARTITION/qaic-emu/vc_total\""});
  ASSERT_EQ(fromQpc.exitCode, 0) << fromQpc.err;
  EXPECT_NE(fromQpc.out.find("\tResources:numNsp 6 numMcid 0 numSem 2 numVc 2 ddrSize 40976\n"), std::string::npos)
      << fromQpc.out;
  EXPECT_NE(fromQpc.out.find("\n2\n"), std::string::npos) << fromQpc.out;
  const auto overflow = runTool("qaic-util", {"create", "--qpc", out, "--activations", "4294967295"});
  EXPECT_EQ(overflow.exitCode, 2);
  EXPECT_NE(overflow.err.find("numNsp"), std::string::npos) << overflow.err;
  EXPECT_TRUE(allReturned());
}

}  // namespace
}  // namespace qaic::testing
