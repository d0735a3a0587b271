// SPDX-License-Identifier: Apache-2.0
// Seed 000's batch JSON: every example of the seed parses against a network with the layout it
// describes, and every malformed case is refused with one line naming set, entry and field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "BatchJson.hpp"
#include "RunnerNetworkBuffers.hpp"
#include "SeedBatchJson.hpp"
#include "TempDir.hpp"

namespace fs = std::filesystem;
using namespace qaic::runner;

namespace {

using qaic::runner::testing::networkBuffer;

class BatchJsonTest : public ::testing::Test {
 protected:
  void writeFile(const std::string& name, std::size_t bytes) {
    std::ofstream out(dir_ / name, std::ios::binary);
    std::string data(bytes, '\x5a');
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
  }

  BatchSpec load(const std::string& json, const std::vector<NetworkBuffer>& network, bool check = false) {
    const fs::path path = dir_ / "batch.json";
    std::ofstream(path) << json;
    return loadBatchJson(path.string(), network, BatchJsonOptions{check});
  }

  std::string errorOf(const std::string& json, const std::vector<NetworkBuffer>& network, bool check = false) {
    try {
      load(json, network, check);
    } catch (const BatchJsonError& e) {
      return e.what();
    }
    return "(no error)";
  }

  // Seed 000 "Regular Network": in0 int, in1 float, out int.
  static std::vector<NetworkBuffer> regularNetwork() {
    return {networkBuffer("in0", true, {4}), networkBuffer("in1", true, {4}), networkBuffer("out", false, {4})};
  }
  // Seed 000 "Non-Specialized Network with Partial Buffers".
  static std::vector<NetworkBuffer> partialNetwork() {
    return {networkBuffer("in0", true, {32}, true, true), networkBuffer("in1", true, {128}),
            networkBuffer("out0", false, {64}, true, true), networkBuffer("out1", false, {32}, true, true)};
  }
  // Seed 000 "Specialized Network".
  static std::vector<NetworkBuffer> specializedNetwork() {
    return {networkBuffer("in0", true, {1, 32}, true, true, {{1, 32}, {1, 1}}),
            networkBuffer("in1", true, {1, 128}, false, false, {{1, 128}, {1, 2}}),
            networkBuffer("out0", false, {1, 64}, true, true, {{1, 64}, {1, 3}}),
            networkBuffer("out1", false, {1, 32}, false, false, {{1, 32}, {1, 4}})};
  }

  qaic::testing::TempDir dir_{"qaic-batchjson"};
};

TEST_F(BatchJsonTest, RegularNetworkTwoInferencesInAnyOrder) {
  writeFile("input0.raw", 16);
  writeFile("input1.raw", 16);
  writeFile("output.raw", 16);
  auto spec = load(qaic::testing::kRegularNetworkBatchJson, regularNetwork(), true);
  ASSERT_EQ(spec.sets.size(), 2u);
  for (const IoSet& set : spec.sets) {
    ASSERT_EQ(set.buffers.size(), 3u);
    EXPECT_EQ(set.buffers[0]->path, (dir_ / "input0.raw").string());
    EXPECT_EQ(set.buffers[1]->path, (dir_ / "input1.raw").string());
    EXPECT_FALSE(set.buffers[2]->isInput);
    EXPECT_EQ(set.buffers[2]->dims, Dims{4});
  }
}

TEST_F(BatchJsonTest, PartialOutputDimsWithinMaximum) {
  writeFile("input0.raw", 128);
  writeFile("input1.raw", 512);
  writeFile("output0.raw", 240);
  writeFile("output1.raw", 128);
  auto spec = load(R"({"IO-files": [[
    { "path":"output1.raw", "data-type": "float", "io-direction":"out", "map-to":"out1" },
    { "path":"input0.raw", "data-type": "float", "io-direction":"in", "map-to":"in0" },
    { "path":"input1.raw", "data-type": "float", "io-direction":"in", "map-to":"in1" },
    { "path":"output0.raw", "dims":[60], "data-type": "float", "io-direction":"out", "map-to":"out0" }
  ]]})",
                   partialNetwork(), true);
  EXPECT_EQ(spec.sets[0].buffers[2]->dims, Dims{60});
  EXPECT_EQ(spec.sets[0].buffers[2]->bytes(), 240u);
  EXPECT_NE(errorOf(R"({"IO-files": [[
    { "path":"input0.raw", "data-type": "float", "io-direction":"in", "map-to":"in0" },
    { "path":"input1.raw", "data-type": "float", "io-direction":"in", "map-to":"in1" },
    { "path":"output0.raw", "dims":[65], "data-type": "float", "io-direction":"out", "map-to":"out0" }
  ]]})",
                    partialNetwork())
                .find("IO set 0, entry 2, field \"dims\""),
            std::string::npos);
}

TEST_F(BatchJsonTest, SpecializedSetsUseDifferentShapes) {
  writeFile("a_in1.raw", 512);
  writeFile("a_in0.raw", 128);
  writeFile("b_in1.raw", 8);
  writeFile("b_in0.raw", 4);
  auto spec = load(R"({"IO-files": [
    [ { "path":"a_in1.raw", "dims":[1,128], "data-type": "float", "io-direction":"in", "map-to":"in1" },
      { "path":"a_in0.raw", "dims":[1,32], "data-type": "float", "io-direction":"in", "map-to":"in0" },
      { "path":"output1.raw", "dims":[1,32], "data-type": "float", "io-direction":"out", "map-to":"out1" },
      { "path":"output0.raw", "dims":[1,64], "data-type": "float", "io-direction":"out", "map-to":"out0" } ],
    [ { "path":"b_in1.raw", "dims":[1,2], "data-type": "float", "io-direction":"in", "map-to":"in1" },
      { "path":"b_in0.raw", "dims":[1,1], "data-type": "float", "io-direction":"in", "map-to":"in0" },
      { "path":"output1.raw", "dims":[1,4], "data-type": "float", "io-direction":"out", "map-to":"out1" },
      { "path":"output0.raw", "dims":[1,3], "data-type": "float", "io-direction":"out", "map-to":"out0" } ]
  ]})",
                   specializedNetwork());
  EXPECT_EQ(spec.sets[1].buffers[0]->dims, (Dims{1, 1}));
  EXPECT_EQ(spec.sets[1].buffers[3]->dims, (Dims{1, 4}));
  EXPECT_NE(errorOf(R"({"IO-files": [[
      { "path":"b_in1.raw", "dims":[1,3], "data-type": "float", "io-direction":"in", "map-to":"in1" },
      { "path":"b_in0.raw", "dims":[1,1], "data-type": "float", "io-direction":"in", "map-to":"in0" },
      { "path":"output1.raw", "dims":[1,4], "data-type": "float", "io-direction":"out", "map-to":"out1" },
      { "path":"output0.raw", "dims":[1,3], "data-type": "float", "io-direction":"out", "map-to":"out0" } ]]})",
                    specializedNetwork())
                .find("entry 0, field \"dims\""),
            std::string::npos);
}

TEST_F(BatchJsonTest, SelectiveIoDropsOnlyWhatTheDescriptorAllows) {
  writeFile("input1.raw", 512);
  auto spec = load(R"({"IO-files": [[
    { "path":"input1.raw", "dims":[1,128], "data-type": "float", "io-direction":"in", "map-to":"in1" },
    { "path":"output1.raw", "dims":[1,32], "data-type": "float", "io-direction":"out", "map-to":"out1" }
  ]]})",
                   specializedNetwork());
  EXPECT_FALSE(spec.sets[0].buffers[0].has_value());
  EXPECT_FALSE(spec.sets[0].buffers[2].has_value());

  writeFile("input0.raw", 128);
  writeFile("in1_full.raw", 512);
  auto mixed = load(R"({"IO-files": [
    [ { "path":"input0.raw", "data-type": "float", "io-direction":"in", "map-to":"in0" },
      { "path":"in1_full.raw", "data-type": "float", "io-direction":"in", "map-to":"in1" },
      { "path":"output1.raw", "dims":[30], "data-type": "float", "io-direction":"out", "map-to":"out1" } ],
    [ { "path":"in1_full.raw", "data-type": "float", "io-direction":"in", "map-to":"in1" },
      { "path":"output1.raw", "dims":[0], "data-type": "float", "io-direction":"out", "map-to":"out1" } ]
  ]})",
                    partialNetwork());
  EXPECT_TRUE(mixed.sets[0].buffers[0].has_value());
  EXPECT_FALSE(mixed.sets[1].buffers[0].has_value());
  EXPECT_EQ(mixed.sets[1].buffers[3]->bytes(), 0u);

  // in1 is regular: it can never be dropped.
  EXPECT_NE(errorOf(R"({"IO-files": [[
    { "path":"input0.raw", "data-type": "float", "io-direction":"in", "map-to":"in0" }
  ]]})",
                    partialNetwork())
                .find("IO set 0, entry (none), field \"map-to\": network buffer 'in1'"),
            std::string::npos);
}

TEST_F(BatchJsonTest, EveryMalformedCaseNamesSetEntryAndField) {
  writeFile("input0.raw", 16);
  writeFile("input1.raw", 16);
  writeFile("short.raw", 12);
  const auto net = regularNetwork();
  const std::string ok1 = R"({ "path":"input1.raw", "data-type": "int", "io-direction":"in", "map-to":"in1" })";
  auto bad = [&](const std::string& entry) { return R"({"IO-files": [[)" + ok1 + "," + entry + "]]}"; };

  EXPECT_NE(errorOf("{not json", net).find("not valid JSON"), std::string::npos);
  // Found by fuzz_batch_json: a number too large for a double escaped as nlohmann's out_of_range.
  EXPECT_NE(errorOf("5e0555000500#", net).find("not valid JSON"), std::string::npos);
  EXPECT_NE(errorOf(R"({"files": []})", net).find("\"IO-files\""), std::string::npos);
  // A second entry after a valid one, and what the refusal must say about it.
  const std::pair<std::string, std::string> malformed[] = {
      {R"({ "data-type": "float", "io-direction":"in", "map-to":"in0" })",
       "IO set 0, entry 1, field \"path\": missing"},
      {R"({ "path":"input0.raw", "data-type": "double", "io-direction":"in", "map-to":"in0" })",
       "entry 1, field \"data-type\": unknown data type"},
      {R"({ "path":"input0.raw", "io-direction":"in", "map-to":"in0" })", "field \"data-type\": missing"},
      {R"({ "path":"input0.raw", "data-type":"float", "elem-size": 2, "io-direction":"in", "map-to":"in0" })",
       "field \"elem-size\": 2 disagrees with data-type"},
      {R"({ "path":"input0.raw", "data-type":"int64_t", "io-direction":"in", "map-to":"in0" })",
       "field \"data-type\": element size 8 but network buffer 'in0' has 4"},
      {R"({ "path":"input0.raw", "dims":[1,1,1,1,1,1,1,1,4], "data-type":"float", "io-direction":"in", "map-to":"in0" })",
       "field \"dims\": 9 entries (1 to 8 allowed)"},
      {R"({ "path":"input0.raw", "dims":[], "data-type":"float", "io-direction":"in", "map-to":"in0" })",
       "field \"dims\": empty array"},
      {R"({ "path":"input0.raw", "dims":[5], "data-type":"float", "io-direction":"in", "map-to":"in0" })",
       "field \"dims\""},
      {R"({ "path":"input0.raw", "data-type":"float", "io-direction":"in", "map-to":"inX" })",
       "field \"map-to\": no network buffer named 'inX'"},
      {ok1, "entry 1, field \"map-to\": 'in1' appears twice"},
      {R"({ "path":"missing.raw", "data-type":"float", "io-direction":"in", "map-to":"in0" })",
       "field \"path\": cannot read file"},
      {R"({ "path":"short.raw", "data-type":"float", "io-direction":"in", "map-to":"in0" })",
       "field \"path\": '" + (dir_ / "short.raw").string() + "' has 12 bytes, expected 16"},
      {R"({ "path":"input0.raw", "data-type":"float", "io-direction":"in", "map-to":"in0", "skip-validation": true })",
       "field \"skip-validation\": valid only on output entries"},
      {R"({ "path":"input0.raw", "data-type":"float", "io-direction":"up", "map-to":"in0" })",
       "field \"io-direction\""},
      {R"({ "path":"input0.raw", "data-type":"float", "io-direction":"out", "map-to":"in0" })",
       "field \"io-direction\": 'in0' is an input"},
  };
  for (const auto& [entry, mention] : malformed) {
    const std::string error = errorOf(bad(entry), net);
    EXPECT_NE(error.find(mention), std::string::npos) << entry << "\n" << error;
  }
  // Output files matter only when -c compares them.
  const std::string withOutput = R"({"IO-files": [[)" + ok1 +
                                 R"(, { "path":"input0.raw", "data-type":"float", "io-direction":"in", "map-to":"in0" },
           { "path":"nothere.raw", "elem-size": 4, "io-direction":"out", "map-to":"out" }]]})";
  EXPECT_EQ(errorOf(withOutput, net), "(no error)");
  EXPECT_NE(errorOf(withOutput, net, true).find("entry 2, field \"path\": cannot read file"), std::string::npos);
}

TEST_F(BatchJsonTest, DataTypeSizesAreTheSeedsTable) {
  EXPECT_EQ(batchDataTypeSize("int8_t"), 1u);
  EXPECT_EQ(batchDataTypeSize("uint8_t"), 1u);
  EXPECT_EQ(batchDataTypeSize("int16_t"), 2u);
  EXPECT_EQ(batchDataTypeSize("uint16_t"), 2u);
  EXPECT_EQ(batchDataTypeSize("float16"), 2u);
  EXPECT_EQ(batchDataTypeSize("int"), 4u);
  EXPECT_EQ(batchDataTypeSize("uint"), 4u);
  EXPECT_EQ(batchDataTypeSize("float"), 4u);
  EXPECT_EQ(batchDataTypeSize("int64_t"), 8u);
  EXPECT_EQ(batchDataTypeSize("uint64_t"), 8u);
  EXPECT_EQ(batchDataTypeSize("double"), std::nullopt);
}

}  // namespace
