// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "Config.hpp"

namespace qaic::emu {
namespace {

TEST(Config, EmptyObjectIsOneAic100) {
  EmuConfig c = parseConfig("{}", "cfg.json");
  ASSERT_EQ(c.devices.size(), 1u);
  EXPECT_EQ(c.devices[0].nsps, 16u);
  EXPECT_EQ(c.devices[0].dbcs, 16u);
  EXPECT_FALSE(c.nodes.mode.has_value());
}

TEST(Config, DevicesAndFaultsAreRead) {
  EmuConfig c = parseConfig(R"({"devices": [{"nsps": 2, "ddr_mb": 8},
      {"dbcs": 4, "faults": {"nsp_hang": true, "dma_fail_code": 3, "dma_fail_count": 5}}],
      "semaphore_timeout_ms": 250, "nodes": {"mode": "0640", "owner": 0, "group": 0}})",
                            "cfg.json");
  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.devices[0].nsps, 2u);
  EXPECT_EQ(c.devices[0].ddrMb, 8u);
  EXPECT_EQ(c.devices[1].dbcs, 4u);
  EXPECT_TRUE(c.devices[1].faults.nspHang);
  EXPECT_EQ(c.devices[1].faults.dmaFailCode, 3);
  EXPECT_EQ(c.devices[1].faults.dmaFailCount, 5u);
  EXPECT_EQ(c.semaphoreTimeoutMs, 250u);
  EXPECT_EQ(*c.nodes.mode, 0640u);
  auto p = resolveNodePolicy(c.nodes);
  EXPECT_EQ(p.mode, 0640u);
  EXPECT_EQ(p.gid, 0u);
}

TEST(Config, ModuleParametersAreSetAsModprobeWould) {
  EmuConfig c = parseConfig(R"({"module_parameters": {"datapath_polling": true,
      "wait_exec_default_timeout_ms": 40, "control_resp_timeout_s": 2}})",
                            "cfg.json");
  EXPECT_TRUE(c.moduleParameters.datapathPolling);
  EXPECT_EQ(c.moduleParameters.waitExecDefaultTimeoutMs, 40u);
  EXPECT_EQ(c.moduleParameters.controlRespTimeoutS, 2u);
  EXPECT_EQ(c.moduleParameters.mhiTimeoutMs, 2000u) << "unset ones keep mainline's default";
  auto fails = [](const char* text) {
    try {
      parseConfig(text, "cfg.json");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(fails(R"({"module_parameters": {"verbose": 1}})").find("module_parameters.verbose: unknown"),
            std::string::npos);
  EXPECT_NE(fails(R"({"module_parameters": {"datapath_polling": 1}})").find("true or false"), std::string::npos);
  EXPECT_NE(fails(R"({"module_parameters": {"mhi_timeout_ms": 99999999999}})").find("out of range"), std::string::npos);
}

// compute_threads sizes the compute pool every NSP shares; 0 (the default) means the host's cores.
TEST(Config, ComputeThreadsSizesTheComputePool) {
  EmuConfig c = parseConfig(R"({"compute_threads": 4, "semaphore_timeout_ms": 300})", "cfg.json");
  EXPECT_EQ(c.computeThreads, 4u);
  EXPECT_EQ(c.semaphoreTimeoutMs, 300u);
  ASSERT_EQ(c.devices.size(), 1u);
  EXPECT_EQ(parseConfig("{}", "cfg.json").computeThreads, 0u);
}

void expectError(const char* text, const char* fragment) {
  try {
    parseConfig(text, "cfg.json");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cfg.json"), std::string::npos) << e.what();
  }
}

TEST(Config, ErrorsNameTheFileAndField) {
  expectError("{", "not valid JSON");
  expectError("[]", "expected an object");
  expectError(R"({"devices": []})", "devices");
  expectError(R"({"devices": [{"nsps": 0}]})", "devices[0].nsps");
  expectError(R"({"devices": [{"nsps": "x"}]})", "devices[0].nsps");
  expectError(R"({"devices": [{"colour": 1}]})", "devices[0].colour");
  expectError(R"({"devices": [{"faults": {"dma_fail_code": 99}}]})", "dma_fail_code");
  expectError(R"({"nodes": {"mode": "999"}})", "nodes.mode");
  expectError(R"({"nodes": {"group": "no-such-group-here"}})", "nodes.group");
  expectError(R"({"semaphore_timeout_ms": -1})", "semaphore_timeout_ms");
  expectError(R"({"compute_threads": "many"})", "compute_threads");
  expectError(R"({"compute_threads": 257})", "compute_threads");
}

// The message parseConfig throws for `text`, or "" when it accepts it.
std::string configError(const std::string& text) {
  try {
    parseConfig(text, "cfg.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string capabilitiesOf(const DeviceConfig& device) {
  std::string text;
  for (const auto& [name, supported] : device.capabilities) text += name + (supported ? "+ " : "- ");
  return text;
}

TEST(Config, EveryDeviceIsInOneP2pGroupByDefault) {
  EmuConfig c = parseConfig(R"({"devices": [{}, {}, {}]})", "cfg.json");
  EXPECT_FALSE(c.p2pGroups.has_value());
  EXPECT_EQ(c.devices[0].p2pPeers, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(c.devices[2].p2pPeers, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(capabilitiesOf(c.devices[1]), "HybridBoot- MDP+ ECC+ ");
  // One card has no peer: MDP stays off.
  EmuConfig one = parseConfig("{}", "cfg.json");
  resolveP2pGroups(one, "cfg.json");
  EXPECT_TRUE(one.devices[0].p2pPeers.empty());
  EXPECT_EQ(capabilitiesOf(one.devices[0]), "HybridBoot- MDP- ECC+ ");
}

TEST(Config, P2pGroupsGiveEachDeviceItsPeers) {
  EmuConfig c = parseConfig(R"({"devices": [{}, {}, {}, {"capabilities": {"MDP": false}}, {}],
                                "p2p_groups": [[2, 0], [1], [3, 4]]})",
                            "cfg.json");
  EXPECT_EQ(c.devices[0].p2pPeers, (std::vector<uint32_t>{2}));
  EXPECT_EQ(c.devices[2].p2pPeers, (std::vector<uint32_t>{0}));
  EXPECT_TRUE(c.devices[1].p2pPeers.empty());
  EXPECT_EQ(capabilitiesOf(c.devices[0]), "HybridBoot- MDP+ ECC+ ");
  EXPECT_EQ(capabilitiesOf(c.devices[1]), "HybridBoot- MDP- ECC+ ");
  // A configuration that names MDP keeps it as written.
  EXPECT_EQ(c.devices[3].p2pPeers, (std::vector<uint32_t>{4}));
  EXPECT_EQ(capabilitiesOf(c.devices[3]), "MDP- ");
  // --devices changes the count after the file was read: resolving again follows it.
  c.devices.assign(2, c.devices.front());
  c.p2pGroups = P2pGroups{{0, 1}};
  resolveP2pGroups(c, "qaic-emu", "--p2p-groups");
  EXPECT_EQ(c.devices[1].p2pPeers, (std::vector<uint32_t>{0}));
  // No groups: every device alone.
  c.p2pGroups = P2pGroups{};
  resolveP2pGroups(c, "qaic-emu", "--p2p-groups");
  EXPECT_TRUE(c.devices[0].p2pPeers.empty());
  EXPECT_EQ(capabilitiesOf(c.devices[0]), "HybridBoot- MDP- ECC+ ");
}

TEST(Config, P2pGroupErrorsNameTheField) {
  EXPECT_EQ(configError(R"({"devices": [{}, {}], "p2p_groups": [[0, 2]]})"),
            "cfg.json: p2p_groups[0][1]: device 2 is out of range (the emulator has 2 devices, 0 to 1)");
  EXPECT_EQ(configError(R"({"devices": [{}, {}, {}], "p2p_groups": [[0, 1], [2, 1]]})"),
            "cfg.json: p2p_groups[1][1]: device 1 is already in group 0");
  EXPECT_EQ(configError(R"({"devices": [{}, {}], "p2p_groups": [[0, 0]]})"),
            "cfg.json: p2p_groups[0][1]: device 0 is listed twice in the group");
  EXPECT_EQ(configError(R"({"p2p_groups": {"a": 1}})"),
            "cfg.json: p2p_groups: expected an array of arrays of device indices");
  EXPECT_EQ(configError(R"({"p2p_groups": [[]]})"),
            "cfg.json: p2p_groups[0]: expected a non-empty array of device indices");
  EXPECT_EQ(configError(R"({"p2p_groups": [[0, "1"]]})"),
            "cfg.json: p2p_groups[0][1]: expected a device index, 0 to 63");
  // Without "devices" the count is decided later (--devices): checked when the emulator starts.
  EmuConfig later = parseConfig(R"({"p2p_groups": [[0, 3]]})", "cfg.json");
  try {
    resolveP2pGroups(later, "cfg.json");
    ADD_FAILURE() << "accepted device 3 of 1";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cfg.json: p2p_groups[0][1]: device 3 is out of range (the emulator has 1 device, 0)");
  }
}

TEST(Config, P2pGroupsOptionText) {
  EXPECT_EQ(parseP2pGroupsOption("0,1:2,3"), (P2pGroups{{0, 1}, {2, 3}}));
  EXPECT_EQ(parseP2pGroupsOption("5"), (P2pGroups{{5}}));
  EXPECT_EQ(parseP2pGroupsOption("none"), P2pGroups{});
  for (const char* bad : {"", "0,,1", "0:", "a", "64", "-1"}) {
    try {
      parseP2pGroupsOption(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string("--p2p-groups '") + bad + "': ", 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace qaic::emu
