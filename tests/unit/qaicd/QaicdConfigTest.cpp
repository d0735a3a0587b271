// SPDX-License-Identifier: Apache-2.0
// The configuration file: static partitions for users and groups, and errors naming the field.
#include <gtest/gtest.h>

#include <set>

#include "Config.hpp"

namespace qaic::qaicd {
namespace {

std::string errorOf(const std::string& text) {
  try {
    parseConfig(text, "qaicd.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return {};
}

// Each configuration is refused with a message that names the file and mentions `mentions`.
struct ErrorCase {
  const char* text;
  const char* mentions;
};
void expectErrors(std::initializer_list<ErrorCase> cases) {
  for (const auto& c : cases) {
    const std::string message = errorOf(c.text);
    EXPECT_NE(message.find(c.mentions), std::string::npos) << c.text << " -> " << message;
    EXPECT_EQ(message.rfind("qaicd.json: ", 0), 0u) << message;
  }
}

TEST(ConfigTest, StaticPartitionsForUsersAndGroups) {
  const Config c = parseConfig(R"({"poll_ms": 100, "static_partitions": [
      {"name": "team-a", "device": 0, "user": "root", "numNsp": 4, "numVc": 2, "ddrSize": 1048576},
      {"name": "team-b", "device": 1, "gid": 50, "numNsp": 2, "numVc": 1, "numSem": 16},
      {"name": "uid-only", "device": 0, "uid": 4321, "numNsp": 1, "numVc": 1}]})",
                               "qaicd.json");
  ASSERT_TRUE(c.pollMs.has_value());
  EXPECT_EQ(*c.pollMs, 100u);
  ASSERT_EQ(c.staticPartitions.size(), 3u);
  const auto& a = c.staticPartitions[0];
  EXPECT_EQ(a.label(), "static:team-a");
  EXPECT_EQ(a.uid, 0u);
  EXPECT_EQ(a.mode, 0600u);
  EXPECT_EQ(a.resources, (Resources{4, 0, 0, 2, 1048576}));
  const auto& b = c.staticPartitions[1];
  EXPECT_EQ(b.device, 1u);
  EXPECT_EQ(b.gid, 50u);
  EXPECT_EQ(b.uid, 0u);
  EXPECT_EQ(b.mode, 0660u);
  EXPECT_EQ(c.staticPartitions[2].uid, 4321u);
  EXPECT_EQ(c.staticPartitions[2].mode, 0600u);
}

TEST(ConfigTest, DeviceTimeout) {
  EXPECT_EQ(parseConfig(R"({"device_timeout_ms": 750})", "x").deviceTimeoutMs, 750u);
  EXPECT_FALSE(parseConfig("{}", "x").deviceTimeoutMs.has_value());
}

TEST(ConfigTest, EmptyObjectIsValid) {
  const Config c = parseConfig("{}", "x");
  EXPECT_FALSE(c.pollMs.has_value());
  EXPECT_TRUE(c.staticPartitions.empty());
}

TEST(ConfigTest, ErrorsNameFileAndField) {
  expectErrors({
      {"{", "qaicd.json: not valid JSON"},
      {"[]", "top level"},
      {R"({"poll": 1})", "poll: unknown field"},
      {R"({"poll_ms": 0})", "poll_ms"},
      {R"({"poll_ms": "fast"})", "poll_ms"},
      {R"({"device_timeout_ms": 99})", "device_timeout_ms: must be an integer in 100..600000"},
      {R"({"device_timeout_ms": -1})", "device_timeout_ms"},
      {R"({"static_partitions": {}})", "static_partitions: must be an array"},
      {R"({"static_partitions": [{"device": 0, "user": "root", "numNsp": 1, "numVc": 1}]})",
       "static_partitions[0].name: missing"},
      {R"({"static_partitions": [{"name": "a", "user": "root", "numNsp": 1, "numVc": 1}]})",
       "static_partitions[0].device: missing"},
      {R"({"static_partitions": [{"name": "a", "device": 0, "numNsp": 1, "numVc": 1}]})",
       "exactly one of user, uid, group, gid"},
      {R"({"static_partitions": [{"name": "a", "device": 0, "user": "root", "gid": 1, "numNsp": 1, "numVc": 1}]})",
       "exactly one of user, uid, group, gid"},
      {R"({"static_partitions": [{"name": "a", "device": 0, "user": "no-such-user-qaicd", "numNsp": 1, "numVc": 1}]})",
       "static_partitions[0].user: no user \"no-such-user-qaicd\""},
      {R"({"static_partitions": [{"name": "a", "device": 0, "group": "no-such-group-qaicd", "numNsp": 1, "numVc": 1}]})",
       "static_partitions[0].group: no group"},
      {R"({"static_partitions": [{"name": "a", "device": 0, "uid": 0, "numNsp": 0, "numVc": 1}]})",
       "static_partitions[0].numNsp: must be at least 1"},
      {R"({"static_partitions": [{"name": "a", "device": 0, "uid": 0, "numNsp": 1, "numVc": -1}]})",
       "static_partitions[0].numVc"},
      {R"({"static_partitions": [{"name": "a", "device": 100, "uid": 0, "numNsp": 1, "numVc": 1}]})",
       "static_partitions[0].device"},
      {R"({"static_partitions": [{"name": "a", "device": 0, "uid": 0, "numNsp": 1, "numVc": 1, "color": "red"}]})",
       "static_partitions[0].color: unknown field"},
      {R"({"static_partitions": [{"name": "a-name-far-too-long-for-a-label", "device": 0, "uid": 0, "numNsp": 1, "numVc": 1}]})",
       "static_partitions[0].name"},
      {R"({"static_partitions": [{"name": "a", "device": 0, "uid": 0, "numNsp": 1, "numVc": 1},
                                 {"name": "a", "device": 0, "uid": 0, "numNsp": 1, "numVc": 1}]})",
       "static_partitions[1].name: \"a\" used twice"},
  });
}

TEST(ConfigTest, MissingFileIsAnError) { EXPECT_THROW(loadConfig("/nonexistent/qaicd.json"), ConfigError); }

TEST(ConfigTest, KubernetesProfiles) {
  const Config c = parseConfig(R"({"k8s_profiles": [
      {"name": "qaic-4nsp", "devices": [1, 2], "numNsp": 4, "numVc": 2, "numSem": 64, "ddrSize": 2147483648},
      {"name": "qaic-1nsp", "numNsp": 1, "numVc": 1, "per_device": 5}]})",
                               "qaicd.json");
  ASSERT_EQ(c.k8sProfiles.size(), 2u);
  const K8sProfile& four = c.k8sProfiles[0];
  EXPECT_EQ(four.name, "qaic-4nsp");
  EXPECT_FALSE(four.allDevices);
  EXPECT_EQ(four.devices, (std::set<uint32_t>{1, 2}));
  EXPECT_EQ(four.resources, (Resources{4, 0, 64, 2, 2147483648ull}));
  EXPECT_FALSE(four.perDevice.has_value());
  const K8sProfile& one = c.k8sProfiles[1];
  EXPECT_TRUE(one.allDevices) << "without devices, a profile takes every device no other names";
  EXPECT_EQ(one.perDevice, 5u);
  EXPECT_EQ(profileForDevice(c.k8sProfiles, 1), &four);
  EXPECT_EQ(profileForDevice(c.k8sProfiles, 0), &one);
  EXPECT_EQ(profileForDevice({four}, 0), nullptr);
}

TEST(ConfigTest, KubernetesProfileErrorsNameTheField) {
  expectErrors({
      {R"({"k8s_profiles": {}})", "k8s_profiles: must be an array"},
      {R"({"k8s_profiles": [{"numNsp": 1, "numVc": 1}]})", "k8s_profiles[0].name: missing"},
      {R"({"k8s_profiles": [{"name": "Big NSP", "numNsp": 1, "numVc": 1}]})",
       "k8s_profiles[0].name: \"Big NSP\" is not a resource name"},
      {R"({"k8s_profiles": [{"name": "a-very-long-profile-name-x", "numNsp": 1, "numVc": 1}]})",
       "k8s_profiles[0].name"},
      {R"({"k8s_profiles": [{"name": "qaic", "numNsp": 1, "numVc": 1}]})", "whole-device resource"},
      {R"({"k8s_profiles": [{"name": "p", "numNsp": 0, "numVc": 1}]})", "k8s_profiles[0].numNsp: must be at least 1"},
      {R"({"k8s_profiles": [{"name": "p", "numNsp": 1}]})", "k8s_profiles[0].numVc: must be at least 1"},
      {R"({"k8s_profiles": [{"name": "p", "numNsp": 1, "numVc": 1, "nsp": 2}]})", "k8s_profiles[0].nsp: unknown field"},
      {R"({"k8s_profiles": [{"name": "p", "numNsp": 1, "numVc": 1, "devices": []}]})",
       "k8s_profiles[0].devices: must be"},
      {R"({"k8s_profiles": [{"name": "p", "numNsp": 1, "numVc": 1, "devices": [100]}]})",
       "k8s_profiles[0].devices[0]: must be a device index below 100"},
      {R"({"k8s_profiles": [{"name": "p", "numNsp": 1, "numVc": 1, "devices": [1, 1]}]})", "device 1 named twice"},
      {R"({"k8s_profiles": [{"name": "p", "numNsp": 1, "numVc": 1, "per_device": 0}]})",
       "k8s_profiles[0].per_device: must be an integer in 1..64"},
      {R"({"k8s_profiles": [{"name": "p", "numNsp": 1, "numVc": 1}, {"name": "p", "numNsp": 2, "numVc": 1, "devices": [0]}]})",
       "k8s_profiles[1].name: \"p\" used twice"},
      {R"({"k8s_profiles": [{"name": "p", "numNsp": 1, "numVc": 1, "devices": [0]}, {"name": "q", "numNsp": 2, "numVc": 1, "devices": [0]}]})",
       "k8s_profiles[1].devices: device 0 is already given to \"p\""},
      {R"({"k8s_profiles": [{"name": "p", "numNsp": 1, "numVc": 1}, {"name": "q", "numNsp": 2, "numVc": 1, "devices": "all"}]})",
       "\"p\" and \"q\" both take every device"},
  });
}

TEST(ConfigTest, ProfileLabelsAndHowManyPartitionsADeviceHolds) {
  EXPECT_EQ(profileLabel("qaic-4nsp", 3), "k8s:qaic-4nsp:3");
  auto parsed = parseProfileLabel("k8s:qaic-4nsp:12");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->profile, "qaic-4nsp");
  EXPECT_EQ(parsed->slot, 12u);
  for (const char* bad : {"static:x", "k8s:", "k8s:p", "k8s:p:", "k8s::1", "k8s:p:x1", "k8s:p:64", "k8s:p:-1"})
    EXPECT_FALSE(parseProfileLabel(bad)) << bad;
  EXPECT_LE(profileLabel(std::string(kMaxProfileNameBytes, 'a'), kMaxPartitionsPerDevice - 1).size(), kMaxLabelBytes);

  K8sProfile p;
  p.resources = Resources{4, 0, 32, 2, 1024};
  const Resources card{16, 24, 512, 16, 16384};
  EXPECT_EQ(partitionsPerDevice(p, 0, card, {}), 4u) << "NSPs limit";
  p.resources.numVc = 8;
  EXPECT_EQ(partitionsPerDevice(p, 0, card, {}), 2u) << "VCs limit";
  StaticPartition held;
  held.device = 0;
  held.resources = Resources{8, 0, 0, 1, 0};
  p.resources.numVc = 1;
  EXPECT_EQ(partitionsPerDevice(p, 0, card, {held}), 2u) << "a static partition's room is not offered";
  EXPECT_EQ(partitionsPerDevice(p, 1, card, {held}), 4u) << "only on its own device";
  p.perDevice = 3;
  EXPECT_EQ(partitionsPerDevice(p, 0, card, {held}), 3u);
  p.perDevice.reset();
  p.resources = Resources{1, 0, 0, 1, 0};
  EXPECT_EQ(partitionsPerDevice(p, 0, Resources{128, 0, 0, 128, 0}, {}), kMaxPartitionsPerDevice);
}

}  // namespace
}  // namespace qaic::qaicd
