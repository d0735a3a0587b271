// SPDX-License-Identifier: Apache-2.0
// qaic-exec's choice of fp16 IO formats (Fp16IoFormats.hpp) on a parsed graph, in-process.
#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <utility>

#include "Fp16IoFormats.hpp"
#include "IrGraphs.hpp"

namespace qaic::compiler {
namespace {

// Seed 003's 1-D data with channels: -convert-to-fp16 follows the importer's reshapes from an input
// to a convolution's src (and from a convolution's dst to an output), so a Conv1d network's
// [N, C, L] buffers get the chunked DWHC / DHWC layout; FC-style [N, features] buffers stay flat,
// and so does [N, L] audio reshaped to one channel (other channels than the buffer's dim 1).
TEST(Fp16IoFormats, RankThreeConvolutionBuffersTakeTheImageLayout) {
  const std::string conv = R"("optype": "conv2d", "params": [{"arg_name": "group", "value": 1},
      {"arg_name": "size", "value": [1, 3]}, {"arg_name": "stride", "value": [1, 1]},
      {"arg_name": "padding", "value": [0, 0, 0, 0]}, {"arg_name": "dilation", "value": [1, 1]},
      {"arg_name": "autopad", "value": "NOTSET"}])";
  const auto create = [](const std::string& tensor, const std::string& dims) {
    return R"({"name": "make_)" + tensor + R"(", "optype": "create", "tensors_in": [],
      "tensors_out": [{"arg_name": "dst", "name": ")" +
           tensor + R"("}],
      "params": [{"arg_name": "dtype", "value": "TL_FLOAT"}, {"arg_name": "dims", "value": )" +
           dims + R"(},
                 {"arg_name": "ran", "value": [0, 0]}, {"arg_name": "data", "value": [0]},
                 {"arg_name": "from_file", "value": false}]},)";
  };
  const auto reshape = [](const std::string& name, const std::string& from, const std::string& to,
                          const std::string& dims) {
    return R"({"name": ")" + name + R"(", "optype": "reshape", "tensors_in": [{"arg_name": "src", "name": ")" + from +
           R"("}], "tensors_out": [{"arg_name": "dst", "name": ")" + to +
           R"("}], "params": [{"arg_name": "dims", "value": )" + dims + R"(}]},)";
  };
  const auto convolution = [&](const std::string& name, const std::string& src, const std::string& weight,
                               const std::string& bias, const std::string& dst) {
    return R"({"name": ")" + name + R"(", "tensors_in": [{"arg_name": "src", "name": ")" + src +
           R"("}, {"arg_name": "weight", "name": ")" + weight + R"("}, {"arg_name": "bias", "name": ")" + bias +
           R"("}], "tensors_out": [{"arg_name": "dst", "name": ")" + dst + R"("}], )" + conv + "},";
  };
  const std::string text = R"({"io": [
      {"name": "signal", "tensor": "x", "direction": "in", "dtype": "TL_FLOAT", "dims": [2, 20, 6]},
      {"name": "audio", "tensor": "a", "direction": "in", "dtype": "TL_FLOAT", "dims": [2, 6]},
      {"name": "features", "tensor": "f", "direction": "in", "dtype": "TL_FLOAT", "dims": [2, 12]},
      {"name": "conv_out", "tensor": "y", "direction": "out", "dtype": "TL_FLOAT", "dims": [2, 4, 4]},
      {"name": "audio_out", "tensor": "ay", "direction": "out", "dtype": "TL_FLOAT", "dims": [2, 4, 4]},
      {"name": "fc_out", "tensor": "fy", "direction": "out", "dtype": "TL_FLOAT", "dims": [2, 4]}],
    "ops": [)" + create("w1", "[4, 20, 1, 3]") +
                           create("b1", "[4]") + create("w2", "[4, 1, 1, 3]") + create("fw", "[12, 4]") +
                           reshape("x_image", "x", "xi", "[2, 20, 1, 6]") +
                           convolution("conv1", "xi", "w1", "b1", "yi") + reshape("y_rows", "yi", "y", "[2, 4, 4]") +
                           reshape("a_image", "a", "ai", "[2, 1, 1, 6]") +
                           convolution("conv2", "ai", "w2", "b1", "ayi") +
                           reshape("ay_rows", "ayi", "ay", "[2, 4, 4]") +
                           R"({"name": "fc", "optype": "matmul", "tensors_in": [{"arg_name": "src1", "name": "f"},
        {"arg_name": "src2", "name": "fw"}], "tensors_out": [{"arg_name": "dst", "name": "fy"}], "params": []}]})";
  for (const auto& [option, image] :
       {std::pair{Fp16IoLayout::DWHC, ir::DeviceLayout::DWHC}, std::pair{Fp16IoLayout::DHWC, ir::DeviceLayout::DHWC}}) {
    ir::Graph graph = ir::parseGraph(text, "conv1d.json");
    ir::inferShapes(graph);
    compiler::chooseFp16IoFormats(graph, option);
    const std::pair<ir::DeviceLayout, ir::DType> expected[] = {{image, ir::DType::Float16},
                                                               {ir::DeviceLayout::Flat, ir::DType::Float16},
                                                               {ir::DeviceLayout::Flat, ir::DType::Float16},
                                                               {image, ir::DType::Float},
                                                               {image, ir::DType::Float},
                                                               {ir::DeviceLayout::Flat, ir::DType::Float}};
    ASSERT_EQ(graph.io.size(), std::size(expected));
    for (std::size_t i = 0; i < graph.io.size(); ++i) {
      EXPECT_EQ(graph.io[i].deviceFormat.layout, expected[i].first) << graph.io[i].bufferName;
      EXPECT_EQ(graph.io[i].deviceFormat.elementType, expected[i].second) << graph.io[i].bufferName;
    }
  }
}

}  // namespace
}  // namespace qaic::compiler
