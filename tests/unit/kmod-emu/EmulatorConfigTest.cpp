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

}  // namespace
}  // namespace qaic::emu
