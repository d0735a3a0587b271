// SPDX-License-Identifier: Apache-2.0
// The multi-device partition config: the vendor's file as efficient-transformers writes it, every
// refusal naming the file and the field's JSON path, and the written form read back unchanged.
#include <gtest/gtest.h>

#include <fstream>

#include "CompileError.hpp"
#include "PartitionConfig.hpp"
#include "TempDir.hpp"

namespace qaic::compiler {
namespace {

constexpr const char* kTwoCards = R"({"connections":[{"devices":[0,1],"type":"p2p"}],
  "partitions":[{"name":"Partition0",
                 "devices":[{"deviceId":0,"numCores":16},{"deviceId":1,"numCores":16}]}]})";

// The message parsePartitionConfig throws for `text`, or "" when it accepts it.
std::string refusal(const std::string& text) {
  try {
    parsePartitionConfig(text, "mdp.json");
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

// kTwoCards with its partition's device list replaced.
std::string withDevices(const std::string& devices, const std::string& connections = R"([0,1])") {
  return R"({"connections":[{"devices":)" + connections + R"(,"type":"p2p"}],
             "partitions":[{"name":"Partition0","devices":)" +
         devices + "}]}";
}

TEST(PartitionConfigTest, ReadsEfficientTransformersConfig) {
  const PartitionConfig config = parsePartitionConfig(kTwoCards, "mdp.json");
  ASSERT_EQ(config.connections.size(), 1u);
  EXPECT_EQ(config.connections[0].devices, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(config.connections[0].type, "p2p");
  ASSERT_EQ(config.partitions.size(), 1u);
  EXPECT_EQ(config.partitions[0].name, "Partition0");
  EXPECT_EQ(config.partitions[0].devices, (std::vector<PartitionDevice>{{0, 16}, {1, 16}}));
  EXPECT_EQ(config.deviceCount(), 2u);
  EXPECT_EQ(config, uniformPartitionConfig(2, 16));
}

TEST(PartitionConfigTest, OneDeviceNeedsNoConnection) {
  const PartitionConfig config = parsePartitionConfig(
      R"({"partitions":[{"name":"P","devices":[{"deviceId":3,"numCores":4}]}]})", "one.json");
  EXPECT_TRUE(config.connections.empty());
  EXPECT_EQ(config.partitions[0].devices, (std::vector<PartitionDevice>{{3, 4}}));
}

TEST(PartitionConfigTest, RefusesMalformedJson) {
  EXPECT_EQ(refusal("{\"partitions\": [").rfind("mdp.json: json: not valid JSON: ", 0), 0u) << refusal("{");
  EXPECT_EQ(refusal("[]"), "mdp.json: (top level): expected an object with \"connections\" and \"partitions\"");
}

TEST(PartitionConfigTest, RefusesMissingAndMistypedFields) {
  EXPECT_EQ(refusal(R"({"connections":[]})"), "mdp.json: partitions: missing");
  EXPECT_EQ(refusal(R"({"partitions":{}})"), "mdp.json: partitions: expected an array, got object");
  EXPECT_EQ(refusal(R"({"partitions":[{"devices":[{"deviceId":0,"numCores":1}]}]})"),
            "mdp.json: partitions[0].name: missing");
  EXPECT_EQ(refusal(R"({"partitions":[{"name":7,"devices":[{"deviceId":0,"numCores":1}]}]})"),
            "mdp.json: partitions[0].name: expected a non-empty string");
  EXPECT_EQ(refusal(R"({"partitions":[{"name":"P"}]})"), "mdp.json: partitions[0].devices: missing");
  EXPECT_EQ(refusal(R"({"partitions":[{"name":"P","devices":[]}]})"),
            "mdp.json: partitions[0].devices: expected at least one device");
  EXPECT_EQ(refusal(withDevices(R"([{"deviceId":0,"numCores":16},{"deviceId":1}])")),
            "mdp.json: partitions[0].devices[1].numCores: missing");
  EXPECT_EQ(refusal(withDevices(R"([{"deviceId":0,"numCores":16},{"deviceId":"1","numCores":16}])")),
            "mdp.json: partitions[0].devices[1].deviceId: expected an integer, got string");
  EXPECT_EQ(refusal(withDevices(R"([{"deviceId":0,"numCores":16},{"deviceId":1,"numCores":1.5}])")),
            "mdp.json: partitions[0].devices[1].numCores: expected an integer, got 1.5");
  EXPECT_EQ(refusal(withDevices(R"([{"deviceId":-1,"numCores":16}])")),
            "mdp.json: partitions[0].devices[0].deviceId: -1 is less than 0");
  EXPECT_EQ(refusal(R"({"connections":{},"partitions":[]})"), "mdp.json: connections: expected an array, got object");
  EXPECT_EQ(refusal(R"({"connections":[{"devices":[0,1]}],"partitions":[]})"),
            "mdp.json: connections[0].type: missing");
  EXPECT_EQ(refusal(R"({"connections":[{"type":"p2p","devices":[]}],"partitions":[]})"),
            "mdp.json: connections[0].devices: expected at least one device ID");
  EXPECT_EQ(refusal(R"({"connections":[{"type":"p2p","devices":[0,0]}],"partitions":[]})"),
            "mdp.json: connections[0].devices[1]: device 0 is listed twice");
}

TEST(PartitionConfigTest, RefusesUnknownFields) {
  EXPECT_EQ(refusal(R"({"partitions":[],"devices":[]})"), "mdp.json: devices: unknown field");
  EXPECT_EQ(refusal(withDevices(R"([{"deviceId":0,"numCores":16,"cores":2}])")),
            "mdp.json: partitions[0].devices[0].cores: unknown field");
}

TEST(PartitionConfigTest, RefusesADeviceListedTwice) {
  EXPECT_EQ(refusal(withDevices(R"([{"deviceId":0,"numCores":16},{"deviceId":0,"numCores":8}])")),
            "mdp.json: partitions[0].devices[1].deviceId: device 0 is listed twice (also partitions[0].devices[0])");
}

TEST(PartitionConfigTest, RefusesCoreCountsACardCannotHold) {
  EXPECT_EQ(refusal(withDevices(R"([{"deviceId":0,"numCores":16},{"deviceId":1,"numCores":17}])")),
            "mdp.json: partitions[0].devices[1].numCores: 17 is more than a card's 16 NSPs");
  EXPECT_EQ(refusal(withDevices(R"([{"deviceId":0,"numCores":0},{"deviceId":1,"numCores":16}])")),
            "mdp.json: partitions[0].devices[0].numCores: 0 is less than 1");
  EXPECT_EQ(refusal(withDevices(R"([{"deviceId":1024,"numCores":16}])")),
            "mdp.json: partitions[0].devices[0].deviceId: 1024 is more than 1023");
}

TEST(PartitionConfigTest, RefusesADeviceInNoConnection) {
  EXPECT_EQ(refusal(withDevices(R"([{"deviceId":0,"numCores":16},{"deviceId":2,"numCores":16}])")),
            "mdp.json: partitions[0].devices[1].deviceId: device 2 is in no connection; the 2 devices of a "
            "multi-device program must be listed in \"connections\"");
  EXPECT_EQ(refusal(R"({"partitions":[{"name":"P","devices":[{"deviceId":0,"numCores":1},
                                                              {"deviceId":1,"numCores":1}]}]})"),
            "mdp.json: partitions[0].devices[0].deviceId: device 0 is in no connection; the 2 devices of a "
            "multi-device program must be listed in \"connections\"");
}

TEST(PartitionConfigTest, RefusesAnUnknownConnectionType) {
  EXPECT_EQ(refusal(R"({"connections":[{"devices":[0,1],"type":"nvlink"}],"partitions":[]})"),
            "mdp.json: connections[0].type: 'nvlink' is not a connection type (the only one is \"p2p\")");
}

TEST(PartitionConfigTest, TakesOnePartitionOrPipelineStagesOfOneDeviceEach) {
  EXPECT_EQ(refusal(R"({"connections":[],"partitions":[]})"),
            "mdp.json: partitions: expected at least one partition, got none");
  const std::string link = R"("connections":[{"devices":[0,1,2],"type":"p2p"}],)";
  EXPECT_EQ(refusal("{" + link + R"("partitions":[{"name":"A","devices":[{"deviceId":0,"numCores":16}]},
                                      {"name":"B","devices":[{"deviceId":1,"numCores":16},
                                                             {"deviceId":2,"numCores":16}]}]})"),
            "mdp.json: partitions[1].devices: 2 devices: a pipeline stage (one of several partitions) runs on one "
            "device; tensor slicing within a stage is not supported");
  EXPECT_EQ(refusal("{" + link + R"("partitions":[{"name":"A","devices":[{"deviceId":0,"numCores":1}]},
                                      {"name":"B","devices":[{"deviceId":0,"numCores":1}]}]})"),
            "mdp.json: partitions[1].devices[0].deviceId: device 0 is also partitions[0]'s; each stage has a "
            "device of its own");
  EXPECT_EQ(refusal("{" + link + R"("partitions":[{"name":"A","nodeList":["a"],"devices":[{"deviceId":0,"numCores":1}]},
                                      {"name":"B","devices":[{"deviceId":1,"numCores":1}]}]})"),
            "mdp.json: partitions[1].nodeList: missing; partitions[0] lists its nodes, so every partition must");
  EXPECT_EQ(refusal("{" + link + R"("partitions":[{"name":"A","nodeList":["a"],"devices":[{"deviceId":0,"numCores":1}]},
                                      {"name":"B","nodeList":["a"],"devices":[{"deviceId":1,"numCores":1}]}]})"),
            "mdp.json: partitions[1].nodeList[0]: node 'a' is also in partitions[0]");
  EXPECT_EQ(refusal(R"({"partitions":[{"name":"A","devices":[{"deviceId":0,"numCores":1}]},
                                      {"name":"B","devices":[{"deviceId":1,"numCores":1}]}]})"),
            "mdp.json: partitions[0].devices[0].deviceId: device 0 is in no connection; the 2 devices of a "
            "multi-device program must be listed in \"connections\"");
  // A good pipeline: stages in order, part 0 the last stage; it writes back as it was read.
  const PartitionConfig config = parsePartitionConfig(
      "{" + link + R"("partitions":[{"name":"A","nodeList":["a","b"],"devices":[{"deviceId":2,"numCores":1}]},
                                    {"name":"B","nodeList":["c"],"devices":[{"deviceId":0,"numCores":4}]}]})",
      "mdp.json");
  ASSERT_TRUE(config.pipelined());
  EXPECT_EQ(config.deviceCount(), 2u);
  const auto parts = config.partDevices();
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0], (PartitionDevice{0, 4}));
  EXPECT_EQ(parts[1], (PartitionDevice{2, 1}));
  EXPECT_EQ(parsePartitionConfig(partitionConfigJson(config), "again.json"), config);
  EXPECT_EQ(pipelinePartitionConfig(3, 2).partitions.size(), 3u);
  EXPECT_EQ(pipelinePartitionConfig(3, 2).partDevices()[0], (PartitionDevice{2, 2}));
}

TEST(PartitionConfigTest, WrittenConfigReadsBackTheSame) {
  qaic::testing::TempDir dir("qaic-partition-config");
  const std::string path = (dir.path() / "mdp_ts_4.json").string();
  PartitionConfig config = uniformPartitionConfig(4, 8);
  config.partitions[0].name = "Stage";
  config.partitions[0].devices[2].numCores = 3;
  writePartitionConfig(path, config);
  EXPECT_EQ(readPartitionConfig(path), config);
  // The same form as efficient-transformers' (keys sorted), so either tool reads the other's.
  const std::string text = partitionConfigJson(uniformPartitionConfig(1, 16));
  EXPECT_EQ(text.find("\"connections\""), text.find('"'));
  EXPECT_LT(text.find("\"deviceId\": 0"), text.find("\"numCores\": 16"));
  EXPECT_EQ(parsePartitionConfig(text, "x"), uniformPartitionConfig(1, 16));
}

TEST(PartitionConfigTest, FileErrorsNameTheFile) {
  qaic::testing::TempDir dir("qaic-partition-config");
  const std::string missing = (dir.path() / "absent.json").string();
  try {
    readPartitionConfig(missing);
    ADD_FAILURE() << "read a missing file";
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot read the partition config");
  }
  const std::string bad = (dir.path() / "bad.json").string();
  std::ofstream(bad) << withDevices(R"([{"deviceId":0,"numCores":17}])");
  try {
    readPartitionConfig(bad);
    ADD_FAILURE() << "accepted 17 cores";
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()), bad + ": partitions[0].devices[0].numCores: 17 is more than a card's 16 NSPs");
  }
  try {
    writePartitionConfig((dir.path() / "no-dir" / "out.json").string(), uniformPartitionConfig(1, 1));
    ADD_FAILURE() << "wrote into a missing directory";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("no-dir/out.json: cannot write the partition config: "), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace qaic::compiler
