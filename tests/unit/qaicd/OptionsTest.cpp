// SPDX-License-Identifier: Apache-2.0
// qaicd's command line: defaults from the environment, values, and usage errors naming the option.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "Options.hpp"

namespace qaic::qaicd {
namespace {

std::string usageErrorOf(const std::vector<std::string>& args) {
  try {
    parseCommandLine(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return {};
}

TEST(OptionsTest, DefaultsComeFromTheEnvironment) {
  ::setenv("QAIC_ROOT", "/tmp/emu-root", 1);
  ::setenv("QAICD_SOCKET", "/tmp/q.sock", 1);
  CommandLine line = parseCommandLine({});
  EXPECT_EQ(line.root, "/tmp/emu-root");
  EXPECT_EQ(line.socket, "/tmp/q.sock");
  EXPECT_FALSE(line.daemon);
  EXPECT_FALSE(line.pollMs.has_value());
  ::unsetenv("QAIC_ROOT");
  ::unsetenv("QAICD_SOCKET");
  line = parseCommandLine({});
  EXPECT_EQ(line.root, "/");
  EXPECT_EQ(line.socket, "/run/qaic/qaicd.sock");
}

TEST(OptionsTest, EveryOption) {
  const CommandLine line = parseCommandLine(
      {"--root", "/r", "--socket", "/s.sock", "--config", "/c.json", "--daemon", "--poll-ms", "75", "-v"});
  EXPECT_EQ(line.root, "/r");
  EXPECT_EQ(line.socket, "/s.sock");
  EXPECT_EQ(line.config, "/c.json");
  EXPECT_TRUE(line.daemon);
  EXPECT_TRUE(line.verbose);
  ASSERT_TRUE(line.pollMs.has_value());
  EXPECT_EQ(*line.pollMs, 75u);
  EXPECT_TRUE(parseCommandLine({"--help"}).help);
  const CommandLine joined = parseCommandLine({"--root=/r", "--kubelet-dir=/k", "--poll-ms=75", "--config=/a=b.json"});
  EXPECT_EQ(joined.root, "/r");
  EXPECT_EQ(joined.kubeletDir, "/k");
  EXPECT_EQ(joined.pollMs, 75u);
  EXPECT_EQ(joined.config, "/a=b.json");
  EXPECT_EQ(parseCommandLine({"--device-timeout-ms", "250"}).deviceTimeoutMs, 250u);
  EXPECT_EQ(parseCommandLine({"--device-timeout-ms=600000"}).deviceTimeoutMs, 600000u);
  EXPECT_FALSE(parseCommandLine({}).deviceTimeoutMs.has_value());
}

TEST(OptionsTest, UsageErrorsNameTheOption) {
  EXPECT_NE(usageErrorOf({"--root"}).find("--root needs a value"), std::string::npos);
  EXPECT_NE(usageErrorOf({"--poll-ms", "5"}).find("--poll-ms"), std::string::npos);
  EXPECT_NE(usageErrorOf({"--poll-ms", "1e3"}).find("--poll-ms"), std::string::npos);
  EXPECT_NE(usageErrorOf({"--poll-ms", "99999999999"}).find("--poll-ms"), std::string::npos);
  EXPECT_NE(
      usageErrorOf({"--device-timeout-ms", "99"}).find("--device-timeout-ms: \"99\" is not an integer in 100..600000"),
      std::string::npos);
  EXPECT_NE(usageErrorOf({"--device-timeout-ms", "600001"}).find("--device-timeout-ms"), std::string::npos);
  EXPECT_NE(usageErrorOf({"--frobnicate"}).find("unknown argument \"--frobnicate\""), std::string::npos);
  EXPECT_NE(usageErrorOf({"--kubelet-dir"}).find("--kubelet-dir needs a value"), std::string::npos);
  EXPECT_NE(usageErrorOf({"--kubelet-dir", ""}).find("--kubelet-dir"), std::string::npos);
  EXPECT_NE(usageErrorOf({"--kubelet-dir", "/k", "--no-kubelet"}).find("contradict"), std::string::npos);
  EXPECT_NE(usageErrorOf({"--kubelet-dir="}).find("--kubelet-dir"), std::string::npos);
  EXPECT_NE(usageErrorOf({"--daemon=yes"}).find("unknown argument \"--daemon=yes\""), std::string::npos);
}

TEST(OptionsTest, KubeletPluginOnlyWhereAsked) {
  // Asked for: the directory, made absolute.
  CommandLine line = parseCommandLine({"--root", "/tmp/emu", "--kubelet-dir", "plugins"});
  EXPECT_EQ(kubeletDirectory(line), (std::filesystem::current_path() / "plugins").string());
  // An emulated root is never offered to a kubelet unless asked for, even on a Kubernetes node.
  EXPECT_EQ(kubeletDirectory(parseCommandLine({"--root", "/tmp/emu"})), "");
  EXPECT_EQ(kubeletDirectory(parseCommandLine({"--root", "/", "--no-kubelet"})), "");
  // The real root: the kubelet's directory when this machine has one.
  const std::string expected = std::filesystem::is_directory(kDefaultKubeletDir) ? kDefaultKubeletDir : "";
  EXPECT_EQ(kubeletDirectory(parseCommandLine({"--root", "/"})), expected);
  EXPECT_NE(std::string(kUsage).find("--kubelet-dir DIR"), std::string::npos);
}

}  // namespace
}  // namespace qaic::qaicd
