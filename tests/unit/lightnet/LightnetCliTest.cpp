// SPDX-License-Identifier: Apache-2.0
// The lightnet executable end to end: the seed 004 example, print layouts, options, data files
// and error reporting. Runs the real binary from the build tree in a scratch directory.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "GraphBuilder.hpp"
#include "Paths.hpp"
#include "TempDir.hpp"

namespace qaic::kernels::test {
namespace {

namespace fs = std::filesystem;

struct Result {
  int status = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class LightnetCli : public ::testing::Test {
 protected:
  void SetUp() override {
    binary_ = qaic::testing::programPath("lightnet");
    ASSERT_TRUE(fs::exists(binary_)) << binary_;
  }

  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }

  // Runs lightnet with `args`, expecting a failure whose stderr contains `message`.
  void expectFailure(const std::string& args, const std::string& message) {
    const Result r = run(args);
    EXPECT_NE(r.status, 0) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
  }

  Result run(const std::string& args, const std::string& stdinText = "") {
    write("stdin.txt", stdinText);
    const std::string cmd = "cd '" + dir_.str() + "' && '" + binary_.string() + "' " + args +
                            " < stdin.txt > stdout.txt 2> stderr.txt";
    const int rc = std::system(cmd.c_str());
    Result r;
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.out = slurp(dir_ / "stdout.txt");
    r.err = slurp(dir_ / "stderr.txt");
    return r;
  }

  fs::path binary_;
  qaic::testing::TempDir dir_{"lightnet-test"};
};

const char* kSeedExample = R"({
  "ops": [
    {"name": "create1", "optype": "create", "tensors_in": [],
     "tensors_out": [{"arg_name": "dst", "name": "tensor1"}],
     "params": [{"arg_name": "dtype", "value": "TL_FLOAT"}, {"arg_name": "dims", "value": [2, 4]},
                {"arg_name": "data", "value": [1, 2, 3, 4, 5, 6, 7, 8]}, {"arg_name": "ran", "value": [0, 0]},
                {"arg_name": "from_file", "value": false}]},
    {"name": "slice1", "optype": "slice", "tensors_in": [{"arg_name": "src", "name": "tensor1"}],
     "tensors_out": [{"arg_name": "dst", "name": "tensor2"}],
     "params": [{"arg_name": "axis", "value": 1}, {"arg_name": "start", "value": 1}, {"arg_name": "len", "value": 3}]},
    {"name": "print1", "optype": "print", "tensors_in": [{"arg_name": "src", "name": "tensor2"}], "tensors_out": [],
     "params": [{"arg_name": "msg", "value": "tensor2:"}]}
  ]
})";

const std::regex kSeedOutput(
    "tensor2:\n\\[\\[2\\.000 3\\.000 4\\.000\\]\n \\[6\\.000 7\\.000 8\\.000\\]\\]\ninfo: run time: [0-9]+\\.[0-9]{6}s\n");

TEST_F(LightnetCli, SeedExamplePrintsExactly) {
  write("example.json", kSeedExample);
  const Result r = run("example.json");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::regex_match(r.out, kSeedOutput)) << r.out;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(fs::exists(dir_ / "out.json"));  // the default compiled model
  const ir::Graph compiled = ir::loadGraph((dir_ / "out.json").string());
  EXPECT_EQ(compiled.ops.size(), 3u);
}

TEST_F(LightnetCli, StdinSourceAndOutfileChoices) {
  Result r = run("-o ! -", kSeedExample);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::regex_match(r.out, kSeedOutput)) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "out.json"));
  write("example.json", kSeedExample);
  r = run("--outfile=model.json example.json");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "model.json"));
  r = run("-c -o - example.json");  // compile only, model to stdout, nothing runs
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ir::parseGraph(r.out).ops.size(), 3u);
  EXPECT_EQ(r.out.find("info:"), std::string::npos);
  fs::remove(dir_ / "out.json");
  r = run("-r example.json");  // run only: no compiled model written
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::regex_match(r.out, kSeedOutput)) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "out.json"));
  r = run("-outfile=! -target=cpu -run example.json");  // long options with one dash
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::regex_match(r.out, kSeedOutput)) << r.out;
}

TEST_F(LightnetCli, PrintsEveryDtypeAndRank) {
  GraphBuilder g;
  const std::vector<std::pair<std::string, std::string>> cases = {{"TL_DOUBLE", "[[1.500 -2.000]\n [0.000 3.125]]\n"},
                                                                  {"TL_FLOAT", "[[1.500 -2.000]\n [0.000 3.125]]\n"},
                                                                  {"TL_INT64", "[[1 -2]\n [0 3]]\n"},
                                                                  {"TL_INT32", "[[1 -2]\n [0 3]]\n"},
                                                                  {"TL_INT16", "[[1 -2]\n [0 3]]\n"},
                                                                  {"TL_INT8", "[[1 -2]\n [0 3]]\n"},
                                                                  {"TL_UINT64", "[[1 0]\n [0 3]]\n"},
                                                                  {"TL_UINT32", "[[1 0]\n [0 3]]\n"},
                                                                  {"TL_UINT16", "[[1 0]\n [0 3]]\n"},
                                                                  {"TL_UINT8", "[[1 0]\n [0 3]]\n"},
                                                                  {"TL_BOOL", "[[1 1]\n [0 1]]\n"}};
  std::string expected;
  for (const auto& [dtype, text] : cases) {
    g.create(dtype, dtype, {2, 2}, {1.5, -2, 0, 3.125})
        .op("p_" + dtype, "print", {{"src", dtype}}, {}, {{"msg", dtype}});
    expected += dtype + "\n" + text;
  }
  g.create("r1", "TL_INT32", {3}, {1, 2, 3}).op("p1", "print", {{"src", "r1"}}, {}, {{"msg", "rank1"}});
  expected += "rank1\n[1 2 3]\n";
  g.create("r3", "TL_INT32", {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})
      .op("p3", "print", {{"src", "r3"}}, {}, {{"msg", "rank3"}});
  expected += "rank3\n[[[1 2]\n  [3 4]]\n [[5 6]\n  [7 8]]]\n";
  g.create("r4", "TL_UINT8", {1, 2, 1, 2}, {1, 2, 3, 4}).op("p4", "print", {{"src", "r4"}}, {}, {{"msg", "rank4"}});
  expected += "rank4\n[[[[1 2]]\n  [[3 4]]]]\n";
  write("dtypes.json", g.json());
  const Result r = run("-o ! dtypes.json");
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_GE(r.out.size(), expected.size());
  EXPECT_EQ(r.out.substr(0, expected.size()), expected);
  EXPECT_TRUE(std::regex_match(r.out.substr(expected.size()), std::regex("info: run time: [0-9.]+s\n")));
}

TEST_F(LightnetCli, DataFileFillsFromFileTensors) {
  GraphBuilder g;
  g.create("w", "TL_FLOAT", {2}, {0}, {0, 0}, true)
      .create("q", "TL_INT8", {3}, {0}, {0, 0}, true)
      .op("pw", "print", {{"src", "w"}}, {}, {{"msg", "w"}})
      .op("pq", "print", {{"src", "q"}}, {}, {{"msg", "q"}});
  write("net.json", g.json());
  write("data.txt", "3\nw 0 2\n3fc00000 c0200000\nq 2 3\nff 7f 0x05\nstray 0 1 0\n");
  Result r = run("-o ! -f data.txt net.json");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find("info:")), "w\n[1.500 -2.500]\nq\n[-1 127 5]\n");
  EXPECT_NE(r.err.find("warning: data.txt: unknown tensor 'stray'; skipped"), std::string::npos) << r.err;
  r = run("-w -o ! --datafile=data.txt net.json");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.err, "");
  write("short.txt", "1\nw 0 2\n3fc00000\n");
  expectFailure("-o ! -f short.txt net.json", "error: short.txt: expected word 1 of tensor 'w'");
  write("type.txt", "1\nw 2 2\n1 2\n");
  expectFailure("-o ! -f type.txt net.json", "error: type.txt: tensor 'w' is TL_INT8");
  write("len.txt", "1\nw 0 3\n1 2 3\n");
  expectFailure("-o ! -f len.txt net.json", "has 3 elements, the network needs 2");
}

TEST_F(LightnetCli, HelpVersionAndWarnings) {
  Result r = run("-h");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("Usage: lightnet"), std::string::npos);
  r = run("--version");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("lightnet"), std::string::npos);
  GraphBuilder g;
  g.create("unused", "TL_FLOAT", {1}, {1});
  write("unused.json", g.json());
  r = run("-Winter -o ! unused.json");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.err.find("warning: op 'create_unused': tensor 'unused' is never read"), std::string::npos) << r.err;
  r = run("-Winter -Wno-inter -o ! unused.json");
  EXPECT_EQ(r.err, "");
}

TEST_F(LightnetCli, ErrorsGoToStderrWithFailure) {
  Result r = run("");
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.err, "error: no input file\n");
  write("example.json", kSeedExample);
  expectFailure("-t gpu example.json", "error: unsupported target 'gpu'");
  r = run("missing.json");
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.err, "error: cannot open 'missing.json'\n");
  write("bad.json", "{\"ops\": [");
  r = run("bad.json");
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("bad.json"), std::string::npos) << r.err;
  expectFailure("--frobnicate example.json", "error: unknown option '--frobnicate'");
  expectFailure("-o", "needs a value");
  GraphBuilder g;  // integer division by zero at run time names the op
  g.create("a", "TL_INT32", {1}, {1})
      .create("b", "TL_INT32", {1}, {0})
      .op("div", "elew", {{"src1", "a"}, {"src2", "b"}}, {{"dst", "c"}}, {{"elew_op", "TL_DIV"}});
  write("div.json", g.json());
  expectFailure("-o ! div.json", "error: op 'div' (elew)");
}

}  // namespace
}  // namespace qaic::kernels::test
