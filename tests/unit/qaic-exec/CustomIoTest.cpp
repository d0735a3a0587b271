// SPDX-License-Identifier: Apache-2.0
// qaic-exec -custom-IO-list-file: the vendor's YAML list as efficient-transformers writes it, every
// bad file named with its line, and the casts that give a float network's buffers float16.
#include <gtest/gtest.h>

#include <fstream>

#include "CompileError.hpp"
#include "CustomIo.hpp"
#include "IrGraphs.hpp"
#include "TempDir.hpp"

namespace qaic::compiler {
namespace {

std::string written(const qaic::testing::TempDir& dir, const std::string& text) {
  const std::string path = (dir.path() / "custom_io.yaml").string();
  std::ofstream(path) << text;
  return path;
}

TEST(CustomIo, ReadsTheListAsEfficientTransformersWritesIt) {
  qaic::testing::TempDir dir("qaic-custom-io");
  const std::string path = written(dir,
                                   "# Model Inputs\n\n"
                                   " - IOName: past_key.0\n   Precision: float16\n\n"
                                   "- Precision: 'fp16'   # either order\n  IOName: \"past_key.0_RetainedState\"\n"
                                   "-\n  IOName: logits\n  Precision: float\n");
  const auto entries = readCustomIoList(path);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, "past_key.0");
  EXPECT_EQ(entries[0].precision, ir::DType::Float16);
  EXPECT_EQ(entries[0].line, 3);
  EXPECT_EQ(entries[1].name, "past_key.0_RetainedState");
  EXPECT_EQ(entries[1].precision, ir::DType::Float16);
  EXPECT_EQ(entries[2].name, "logits");
  EXPECT_EQ(entries[2].precision, ir::DType::Float);
}

TEST(CustomIo, BadFilesNameTheLine) {
  qaic::testing::TempDir dir("qaic-custom-io");
  const std::pair<const char*, const char*> cases[] = {
      {"IOName: x\n", ":1: expected a list item"},
      {"- IOName: x\n  Precision: mxint8\n", ":1: IOName 'x': Precision 'mxint8' is not supported"},
      {"- IOName: x\n", ":1: IOName 'x' has no Precision"},
      {"- Precision: float16\n", ":1: the list item has no IOName"},
      {"- IOName: x\n  Precision: float16\n  Layout: NCHW\n", ":3: unknown key 'Layout'"},
      {"- IOName: x\n  IOName: y\n", ":2: a second IOName"},
      {"- IOName: x\n  Precision: float16\n- IOName: x\n  Precision: float16\n", ":3: IOName 'x' is listed again"},
      {"- IOName x\n", ":1: expected 'key: value'"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string path = written(dir, text);
    try {
      readCustomIoList(path);
      ADD_FAILURE() << "accepted " << text;
    } catch (const CompileError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + expected, 0), 0u) << text << " -> " << e.what();
    }
  }
}

// in (float) -> relu -> out (float), and an int64 input passed through.
ir::Graph reluGraph() {
  ir::Graph graph = ir::parseGraph(R"({"ops": [
      {"name": "r", "optype": "relu", "tensors_in": [{"arg_name": "src", "name": "x"}],
       "tensors_out": [{"arg_name": "dst", "name": "y"}], "params": []},
      {"name": "c", "optype": "cast", "tensors_in": [{"arg_name": "src", "name": "i"}],
       "tensors_out": [{"arg_name": "dst", "name": "j"}], "params": [{"arg_name": "dtype", "value": "TL_INT64"}]}],
    "io": [{"name": "x", "tensor": "x", "direction": "in", "dtype": "TL_FLOAT", "dims": [2, 3]},
           {"name": "i", "tensor": "i", "direction": "in", "dtype": "TL_INT64", "dims": [2]},
           {"name": "y", "tensor": "y", "direction": "out", "dtype": "TL_FLOAT", "dims": [2, 3]},
           {"name": "j", "tensor": "j", "direction": "out", "dtype": "TL_INT64", "dims": [2]}]})",
                                   "relu.json");
  ir::inferShapes(graph);
  return graph;
}

TEST(CustomIo, ListedFloatBuffersAreCastAtTheBoundary) {
  ir::Graph graph = reluGraph();
  applyCustomIo(graph, {{"x", ir::DType::Float16, 1}, {"y", ir::DType::Float16, 3}}, "io.yaml");
  ASSERT_EQ(graph.ops.size(), 4u);
  EXPECT_EQ(graph.ops.front().optype, "cast");  // float16 x -> the float x relu reads
  EXPECT_EQ(graph.ops.front().outputs[0].name, "x");
  EXPECT_EQ(graph.ops.back().optype, "cast");  // relu's float y -> the float16 buffer
  EXPECT_EQ(graph.ops.back().inputs[0].name, "y");
  for (const std::size_t b : {std::size_t{0}, std::size_t{2}}) {
    const ir::IoBuffer& io = graph.io[b];
    EXPECT_EQ(io.dtype, ir::DType::Float16) << io.bufferName;
    EXPECT_EQ(io.deviceFormat.elementType, ir::DType::Float16) << io.bufferName;
    EXPECT_EQ(graph.tensors.at(io.tensor).dtype, ir::DType::Float16) << io.bufferName;
    EXPECT_EQ(graph.tensors.at(io.tensor).dims, (ir::Dims{2, 3})) << io.bufferName;
  }
}

TEST(CustomIo, UnknownAndNonFloatBuffersAreNamed) {
  ir::Graph graph = reluGraph();
  try {
    applyCustomIo(graph, {{"z", ir::DType::Float16, 4}}, "io.yaml");
    ADD_FAILURE() << "accepted an unknown buffer";
  } catch (const CompileError& e) {
    EXPECT_STREQ(e.what(), "io.yaml:4: IOName 'z': the network has no io buffer of that name (it has x, i, y, j)");
  }
  try {
    applyCustomIo(graph, {{"i", ir::DType::Float16, 2}}, "io.yaml");
    ADD_FAILURE() << "accepted an int64 buffer";
  } catch (const CompileError& e) {
    EXPECT_STREQ(e.what(), "io.yaml:2: IOName 'i': the buffer is TL_INT64; only float buffers take another precision");
  }
}

}  // namespace
}  // namespace qaic::compiler
