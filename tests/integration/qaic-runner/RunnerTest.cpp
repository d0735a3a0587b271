// SPDX-License-Identifier: Apache-2.0
// qaic-runner end to end: the real binary, a real qaic-emu on a temporary root, networks compiled
// by qaic-exec to the layouts seed 000 describes, and every malformed batch JSON case.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "EmulatorProcess.hpp"
#include "Process.hpp"
#include "RunnerSuite.hpp"
#include "SeedBatchJson.hpp"

namespace fs = std::filesystem;
using qaic::testing::RunResult;
using qaic::testing::runTool;
using ::testing::HasSubstr;

namespace {

std::vector<float> iota(std::size_t n, float start = 0) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

std::set<std::string> filesIn(const fs::path& dir) {
  std::set<std::string> names;
  if (fs::exists(dir))
    for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

class RunnerTest : public RunnerSuite {
 protected:
  static void SetUpTestSuite() { startSuite("qaic-runner-test", {"regular", "partial", "specialized"}); }
  static void TearDownTestSuite() { stopSuite(); }

  void SetUp() override {
    dir_ = suiteDir() / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(dir_);
  }

  fs::path writeJson(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path;
  }

  RunResult runner(const std::string& network, const fs::path& batch, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"-t", (suiteDir() / network).string(), "--aic-batch-json-input", batch.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return runTool("qaic-runner", args, std::chrono::seconds(120));
  }

  fs::path dir_;
};

const std::regex kStatsLine(R"(InferenceCnt (\d+) TotalDuration (\d+)us BatchSize 1 Inf/Sec (\d+\.\d{3}))");

// Seed 000 "Regular Network": in0 int, in1 float, out int (out = in0 + in0); two IO sets whose
// entries come in different orders, data-type and elem-size used interchangeably.
TEST_F(RunnerTest, RegularNetworkTwoInferencesWithIntInputs) {
  writeRaw<int32_t>(dir_ / "input0.raw", {1, -2, 3, 40000});
  writeRaw<float>(dir_ / "input1.raw", {0.5f, 1, 2, 3});
  writeRaw<int32_t>(dir_ / "output.raw", {2, -4, 6, 80000});
  const auto batch = writeJson("batch.json", qaic::testing::kRegularNetworkBatchJson);
  RunResult r = runner("regular", batch, {"-c", "-n", "20"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(" ---- Stats ----\n"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, kStatsLine)) << r.out;
  EXPECT_EQ(m[1], "20");
  const double rate = std::stod(m[3]), count = std::stod(m[1]), duration = std::stod(m[2]);
  EXPECT_NEAR(rate, count * 1e6 / duration, 0.01);

  // An output that differs is named by IO set, buffer, index, expected and actual value.
  writeRaw<int32_t>(dir_ / "output.raw", {2, -4, 7, 80000});
  r = runner("regular", batch, {"-c", "-n", "2", "-S", "1"});
  EXPECT_EQ(r.exitCode, 3);
  EXPECT_THAT(r.err, HasSubstr("IO set 0, buffer 'out' (iteration 0): first difference at index 2: expected 7, got 6"));
}

// Seed 000 "Non-Specialized Network with Partial Buffers": out0 given as dims [60] of [64].
TEST_F(RunnerTest, PartialOutputDims60Of64) {
  writeRaw(dir_ / "input0.raw", iota(32));
  writeRaw(dir_ / "input1.raw", iota(128, 100));
  writeRaw(dir_ / "output1.raw", iota(32, 100));
  const auto batch = writeJson("batch.json", R"({"IO-files": [[
    { "path":"output1.raw", "data-type": "float", "io-direction":"out", "map-to":"out1" },
    { "path":"input0.raw", "data-type": "float", "io-direction":"in", "map-to":"in0" },
    { "path":"input1.raw", "data-type": "float", "io-direction":"in", "map-to":"in1" },
    { "path":"output0.raw", "dims":[60], "data-type": "float", "io-direction":"out", "map-to":"out0", "skip-validation": true }
  ]]})");
  RunResult r = runner("partial", batch, {"-c", "-n", "8", "--write-output-dir", (dir_ / "out").string()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // out0 = in0 twice: the device produced all 64 values.
  std::vector<float> expected = iota(32);
  expected.insert(expected.end(), expected.begin(), expected.end());
  EXPECT_EQ(readRaw<float>(dir_ / "out/out0-inf-0.bin"), expected);

  // 65 is outside [0, 64].
  const auto tooLarge = writeJson("large.json", R"({"IO-files": [[
    { "path":"input0.raw", "data-type": "float", "io-direction":"in", "map-to":"in0" },
    { "path":"input1.raw", "data-type": "float", "io-direction":"in", "map-to":"in1" },
    { "path":"output0.raw", "dims":[65], "data-type": "float", "io-direction":"out", "map-to":"out0" },
    { "path":"output1.raw", "data-type": "float", "io-direction":"out", "map-to":"out1" }
  ]]})");
  r = runner("partial", tooLarge);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_THAT(r.err, HasSubstr("IO set 0, entry 2, field \"dims\""));
}

// Seed 000 "Specialized Network": two allowed shape combinations, one per IO set.
TEST_F(RunnerTest, SpecializedNetworkTwoCombinations) {
  writeRaw(dir_ / "a_in0.raw", iota(32, -16));
  writeRaw(dir_ / "a_in1.raw", iota(128));
  writeRaw<float>(dir_ / "b_in0.raw", {-5});
  writeRaw<float>(dir_ / "b_in1.raw", {7, 8});
  std::vector<float> joined = iota(32, -16);
  const auto in1 = iota(128);
  joined.insert(joined.end(), in1.begin(), in1.end());
  writeRaw(dir_ / "a_out0.raw", joined);
  std::vector<float> rectified = iota(32, -16);
  for (float& v : rectified) v = v < 0 ? 0 : v;
  writeRaw(dir_ / "a_out1.raw", rectified);
  writeRaw<float>(dir_ / "b_out0.raw", {-5, 7, 8});
  writeRaw<float>(dir_ / "b_out1.raw", {0});
  const auto batch = writeJson("batch.json", R"({"IO-files": [
    [ { "path":"a_in1.raw", "dims":[1,128], "data-type": "float", "io-direction":"in", "map-to":"in1" },
      { "path":"a_in0.raw", "dims":[1,32], "data-type": "float", "io-direction":"in", "map-to":"in0" },
      { "path":"a_out1.raw", "dims":[1,32], "data-type": "float", "io-direction":"out", "map-to":"out1" },
      { "path":"a_out0.raw", "dims":[1,160], "data-type": "float", "io-direction":"out", "map-to":"out0" } ],
    [ { "path":"b_in1.raw", "dims":[1,2], "data-type": "float", "io-direction":"in", "map-to":"in1" },
      { "path":"b_in0.raw", "dims":[1,1], "data-type": "float", "io-direction":"in", "map-to":"in0" },
      { "path":"b_out1.raw", "dims":[1,1], "data-type": "float", "io-direction":"out", "map-to":"out1" },
      { "path":"b_out0.raw", "dims":[1,3], "data-type": "float", "io-direction":"out", "map-to":"out0" } ]
  ]})");
  RunResult r = runner("specialized", batch, {"-c", "-n", "10"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Output check passed: 10 inferences"));

  // A shape from neither combination.
  const auto wrong = writeJson("wrong.json", R"({"IO-files": [[
      { "path":"b_in1.raw", "dims":[1,2], "data-type": "float", "io-direction":"in", "map-to":"in1" },
      { "path":"b_in0.raw", "dims":[1,2], "data-type": "float", "io-direction":"in", "map-to":"in0" } ]]})");
  r = runner("specialized", wrong);
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_THAT(r.err, HasSubstr("IO set 0, entry 1, field \"dims\""));
}

// Seed 000 selective IO, specialized network: in0 and out0 dropped; out0 is never written.
TEST_F(RunnerTest, SelectiveIoSpecializedDropsInputAndOutput) {
  writeRaw(dir_ / "input1.raw", iota(128));
  const auto batch = writeJson("batch.json", R"({"IO-files": [[
    { "path":"input1.raw", "dims":[1,128], "data-type": "float", "io-direction":"in", "map-to":"in1" },
    { "path":"output1.raw", "dims":[1,32], "data-type": "float", "io-direction":"out", "map-to":"out1" }
  ]]})");
  RunResult r = runner("specialized", batch,
                       {"-n", "3", "--write-output-dir", (dir_ / "out").string(), "--write-output-num-samples", "3"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(filesIn(dir_ / "out"), (std::set<std::string>{"out1-inf-0.bin", "out1-inf-1.bin", "out1-inf-2.bin"}));
}

// Seed 000 selective IO, partial network, mixed dropping across sets; --write-output-dir writes
// exactly the non-dropped outputs of the requested iterations.
TEST_F(RunnerTest, SelectiveIoMixedDroppingWritesOnlyRequestedOutputs) {
  writeRaw(dir_ / "input0.raw", iota(32));
  writeRaw(dir_ / "input1.raw", iota(128, 1000));
  const auto batch = writeJson("batch.json", R"({"IO-files": [
    [ { "path":"input0.raw", "data-type": "float", "io-direction":"in", "map-to":"in0" },
      { "path":"input1.raw", "data-type": "float", "io-direction":"in", "map-to":"in1" },
      { "path":"output1.raw", "dims":[30], "data-type": "float", "io-direction":"out", "map-to":"out1" } ],
    [ { "path":"input1.raw", "data-type": "float", "io-direction":"in", "map-to":"in1" },
      { "path":"output1.raw", "dims":[0], "data-type": "float", "io-direction":"out", "map-to":"out1" } ]
  ]})");
  RunResult r = runner("partial", batch,
                       {"-n", "6", "-S", "1", "--write-output-dir", (dir_ / "out").string(),
                        "--write-output-start-iter", "2", "--write-output-num-samples", "3"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(filesIn(dir_ / "out"), (std::set<std::string>{"out1-inf-2.bin", "out1-inf-3.bin", "out1-inf-4.bin"}));
  EXPECT_EQ(readRaw<float>(dir_ / "out/out1-inf-3.bin"), iota(32, 1000));
}

// -S 1 keeps the JSON's order: iteration i runs IO set i % sets, so each written output is the
// one its set's input produces.
TEST_F(RunnerTest, SetSizeOneKeepsTheFilesOrder) {
  std::string sets;
  for (int s = 0; s < 3; ++s) {
    writeRaw<int32_t>(dir_ / ("in0_" + std::to_string(s) + ".raw"), {s, s, s, s});
    sets += std::string(s ? "," : "") + R"([{ "path":"in0_)" + std::to_string(s) +
            R"(.raw", "data-type":"int", "io-direction":"in", "map-to":"in0" },
               { "path":"in1.raw", "data-type":"float", "io-direction":"in", "map-to":"in1" },
               { "path":"unused.raw", "data-type":"int", "io-direction":"out", "map-to":"out" }])";
  }
  writeRaw<float>(dir_ / "in1.raw", {0, 0, 0, 0});
  const auto batch = writeJson("batch.json", R"({"IO-files": [)" + sets + "]}");
  RunResult r = runner(
      "regular", batch,
      {"-n", "9", "-S", "1", "--write-output-dir", (dir_ / "out").string(), "--write-output-num-samples", "9"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  for (int i = 0; i < 9; ++i) {
    const int32_t v = 2 * (i % 3);
    EXPECT_EQ(readRaw<int32_t>(dir_ / ("out/out-inf-" + std::to_string(i) + ".bin")),
              (std::vector<int32_t>{v, v, v, v}))
        << "iteration " << i;
  }
}

// Every malformed batch JSON of issue 6 item 5 exits 2 with one line naming set, entry and field.
TEST_F(RunnerTest, EveryMalformedBatchJsonExitsTwoWithOneLine) {
  writeRaw<int32_t>(dir_ / "in0.raw", {1, 2, 3, 4});
  writeRaw<float>(dir_ / "in1.raw", {1, 2, 3, 4});
  writeRaw<float>(dir_ / "short.raw", {1, 2, 3});
  const std::string in1 = R"({ "path":"in1.raw", "data-type":"float", "io-direction":"in", "map-to":"in1" })";
  auto set = [&](const std::string& entry) { return R"({"IO-files": [[)" + in1 + "," + entry + "]]}"; };
  struct Case {
    std::string name, json, expected;
  };
  const std::vector<Case> cases = {
      {"bad JSON", "{\"IO-files\": [", "not valid JSON"},
      {"missing key", R"({"files": []})", "missing top-level key \"IO-files\""},
      {"missing path", set(R"({ "data-type":"int", "io-direction":"in", "map-to":"in0" })"),
       "IO set 0, entry 1, field \"path\": missing"},
      {"unknown data-type", set(R"({ "path":"in0.raw", "data-type":"int32", "io-direction":"in", "map-to":"in0" })"),
       "IO set 0, entry 1, field \"data-type\""},
      {"elem-size disagrees",
       set(R"({ "path":"in0.raw", "data-type":"int", "elem-size":8, "io-direction":"in", "map-to":"in0" })"),
       "IO set 0, entry 1, field \"elem-size\""},
      {"dims out of range",
       set(R"({ "path":"in0.raw", "dims":[5], "data-type":"int", "io-direction":"in", "map-to":"in0" })"),
       "IO set 0, entry 1, field \"dims\""},
      {"nine dims",
       set(R"({ "path":"in0.raw", "dims":[1,1,1,1,1,1,1,1,4], "data-type":"int", "io-direction":"in", "map-to":"in0" })"),
       "IO set 0, entry 1, field \"dims\""},
      {"unknown map-to", set(R"({ "path":"in0.raw", "data-type":"int", "io-direction":"in", "map-to":"in9" })"),
       "IO set 0, entry 1, field \"map-to\""},
      {"duplicate map-to", set(in1), "IO set 0, entry 1, field \"map-to\""},
      {"missing file", set(R"({ "path":"nothere.raw", "data-type":"int", "io-direction":"in", "map-to":"in0" })"),
       "IO set 0, entry 1, field \"path\""},
      {"wrong size", set(R"({ "path":"short.raw", "data-type":"int", "io-direction":"in", "map-to":"in0" })"),
       "IO set 0, entry 1, field \"path\""},
      {"skip-validation on input",
       set(R"({ "path":"in0.raw", "data-type":"int", "io-direction":"in", "map-to":"in0", "skip-validation":true })"),
       "IO set 0, entry 1, field \"skip-validation\""},
      {"drop not allowed", R"({"IO-files": [[)" + in1 + "]]}", "IO set 0, entry (none), field \"map-to\""},
  };
  for (const Case& c : cases) {
    const auto batch = writeJson("bad.json", c.json);
    RunResult r = runner("regular", batch);
    EXPECT_EQ(r.exitCode, 2) << c.name << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.expected)) << c.name;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.name << ": " << r.err;
  }
}

// An -i path that cannot be read exits 2 naming the path and why, in one line.
TEST_F(RunnerTest, UnreadableInputFileExitsTwoWithTheReason) {
  writeRaw<int32_t>(dir_ / "in0.raw", {1, 2, 3, 4});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {(dir_ / "nothere.raw").string(), "No such file or directory"},
      {dir_.string(), "a directory"},
  };
  for (const auto& [path, reason] : cases) {
    RunResult r = runTool("qaic-runner", {"-t", (suiteDir() / "regular").string(), "-n", "1", "-i",
                                          (dir_ / "in0.raw").string(), "-i", path});
    EXPECT_EQ(r.exitCode, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr("'" + path + "': " + reason));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// Random inputs, the latency profile and --time.
TEST_F(RunnerTest, RandomInputsProfilingAndTime) {
  RunResult r = runTool("qaic-runner",
                        {"-t", (suiteDir() / "regular").string(), "-n", "30", "--aic-profiling-type", "latency"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, kStatsLine)) << r.out;
  EXPECT_THAT(r.out, HasSubstr("preProcTime"));
  EXPECT_THAT(r.out, HasSubstr("execToComplete"));

  r = runTool("qaic-runner", {"-t", (suiteDir() / "regular").string(), "--time", "1"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, kStatsLine)) << r.out;
  EXPECT_GT(std::stoull(m[1]), 0u);
  EXPECT_GE(std::stoull(m[2]), 900'000u);  // ran for (about) the second it was given
}

// A device that does not exist exits 4 and says so.
TEST_F(RunnerTest, MissingDeviceExitsFour) {
  RunResult r = runTool("qaic-runner", {"-t", (suiteDir() / "regular").string(), "-d", "7", "-n", "1"});
  EXPECT_EQ(r.exitCode, 4) << r.err;
  EXPECT_THAT(r.err, HasSubstr("QS_NODEV"));
}

// A device removed while the runner is submitting: exit 4, saying the device went away.
TEST_F(RunnerTest, DeviceRemovedMidRunExitsFour) {
  qaic::testing::EmulatorProcess doomed;
  const std::string suiteRoot = std::getenv("QAIC_ROOT");
  ::setenv("QAIC_ROOT", doomed.rootPath().c_str(), 1);
  std::thread remover([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    doomed.removeDevice(0);
  });
  RunResult r = runTool("qaic-runner", {"-t", (suiteDir() / "regular").string(), "--time", "20", "--submit-timeout",
                                        "1000", "--submit-retry-count", "0"});
  remover.join();
  ::setenv("QAIC_ROOT", suiteRoot.c_str(), 1);
  EXPECT_EQ(r.exitCode, 4) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("QS_DEV_REMOVED"));
}

}  // namespace
