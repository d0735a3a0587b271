// SPDX-License-Identifier: Apache-2.0
// HostProgram as a whole: registry agreement, partial / specialized input shapes, cached plans,
// buffer and dtype checks, print output, thread bound.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <array>
#include <sstream>

#include "GraphBuilder.hpp"
#include "IrGraphs.hpp"
#include "kernels/TensorPrinter.hpp"
#include "kernels/ops/Kernel.hpp"

namespace qaic::kernels::test {
namespace {

TEST(KernelsHostProgram, EveryRegisteredOptypeHasAKernel) {
  for (const auto& spec : ir::opSpecs()) {
    EXPECT_NE(findKernelFactory(spec.optype), nullptr) << spec.optype;
  }
  EXPECT_EQ(findKernelFactory("no_such_op"), nullptr);
}

ir::Graph partialGraph() {
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {4, 3})
      .create("w", "TL_FLOAT", {3, 2}, {1, 0, 0, 1, 1, 1})
      .op("mm", "matmul", {{"src1", "x"}, {"src2", "w"}}, {{"dst", "y"}})
      .op("r", "relu", {{"src", "y"}}, {{"dst", "z"}})
      .output("z", "TL_FLOAT", {4, 2});
  return g.graph();
}

TEST(KernelsHostProgram, PartialInputsReinferShapesAndReportActualDims) {
  auto program = HostProgram::build(partialGraph(), nullptr);
  std::vector<float> out(8, -7.0f);
  for (int rows : {4, 2, 4, 1, 2}) {  // new shapes and cached ones, interleaved
    std::vector<float> x(static_cast<std::size_t>(rows * 3));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 4.0f;
    TensorView in{ir::DType::Float, {rows, 3}, x.data(), x.size() * sizeof(float)};
    TensorView o{ir::DType::Float, {4, 2}, out.data(), out.size() * sizeof(float)};
    program->run(std::span(&in, 1), std::span(&o, 1));
    ASSERT_EQ(o.dims, (ir::Dims{rows, 2}));
    for (int r = 0; r < rows; ++r) {
      const float a = x[r * 3], b = x[r * 3 + 1], c = x[r * 3 + 2];
      EXPECT_EQ(out[r * 2], std::max(0.0f, a + c));
      EXPECT_EQ(out[r * 2 + 1], std::max(0.0f, b + c));
    }
  }
}

// x -> matmul -> relu -> z; each row r of z is relu(x[r][0] + x[r][2], x[r][1] + x[r][2]).
void expectRows(const float* x, const float* z, int rows) {
  for (int r = 0; r < rows; ++r) {
    const float a = x[r * 3], b = x[r * 3 + 1], c = x[r * 3 + 2];
    EXPECT_EQ(z[r * 2], std::max(0.0f, a + c)) << "row " << r;
    EXPECT_EQ(z[r * 2 + 1], std::max(0.0f, b + c)) << "row " << r;
  }
}

TEST(KernelsHostProgram, BoundIoMemoryIsTheTensorItself) {
  std::vector<float> boundIn(12), boundOut(8, -7.0f);
  BuildOptions options;
  options.inputMemory = {{boundIn.data(), boundIn.size() * sizeof(float)}};
  options.outputMemory = {{boundOut.data(), boundOut.size() * sizeof(float)}};
  auto program = HostProgram::build(partialGraph(), nullptr, options);
  for (std::size_t i = 0; i < boundIn.size(); ++i) boundIn[i] = static_cast<float>(i) - 5.0f;
  TensorView in{ir::DType::Float, {4, 3}, boundIn.data(), boundIn.size() * sizeof(float)};
  TensorView out{ir::DType::Float, {4, 2}, boundOut.data(), boundOut.size() * sizeof(float)};
  program->run(std::span(&in, 1), std::span(&out, 1));
  expectRows(boundIn.data(), boundOut.data(), 4);

  // A partial shape uses the front of the same memory.
  for (std::size_t i = 0; i < 6; ++i) boundIn[i] = 3.0f - static_cast<float>(i);
  in.dims = {2, 3};
  program->run(std::span(&in, 1), std::span(&out, 1));
  EXPECT_EQ(out.dims, (ir::Dims{2, 2}));
  expectRows(boundIn.data(), boundOut.data(), 2);

  // Views of other memory are copied: into the bound input, and out of the bound output, which
  // the kernels wrote in place.
  std::vector<float> otherIn(12), otherOut(8, -7.0f);
  for (std::size_t i = 0; i < otherIn.size(); ++i) otherIn[i] = static_cast<float>(i % 5) - 2.0f;
  TensorView in2{ir::DType::Float, {4, 3}, otherIn.data(), otherIn.size() * sizeof(float)};
  TensorView out2{ir::DType::Float, {4, 2}, otherOut.data(), otherOut.size() * sizeof(float)};
  program->run(std::span(&in2, 1), std::span(&out2, 1));
  expectRows(otherIn.data(), otherOut.data(), 4);
  EXPECT_EQ(boundIn, otherIn);
  EXPECT_EQ(boundOut, otherOut);
}

TEST(KernelsHostProgram, MisalignedOrTooSmallMemoryStaysUnbound) {
  std::vector<float> memory(16, -7.0f);
  BuildOptions options;
  // One byte off the element alignment, and an output too small for the tensor.
  options.inputMemory = {{reinterpret_cast<std::byte*>(memory.data()) + 1, 12 * sizeof(float)}};
  options.outputMemory = {{memory.data() + 13, 3 * sizeof(float)}};
  auto program = HostProgram::build(partialGraph(), nullptr, options);
  std::vector<float> x(12), z(8);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 6.0f;
  TensorView in{ir::DType::Float, {4, 3}, x.data(), x.size() * sizeof(float)};
  TensorView out{ir::DType::Float, {4, 2}, z.data(), z.size() * sizeof(float)};
  program->run(std::span(&in, 1), std::span(&out, 1));
  expectRows(x.data(), z.data(), 4);
  EXPECT_EQ(memory, std::vector<float>(16, -7.0f));
}

TEST(KernelsHostProgram, ConstantOutputKeepsItsOwnMemory) {
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {2}).create("c", "TL_FLOAT", {2}, {4, 5});
  g.op("r", "relu", {{"src", "x"}}, {{"dst", "y"}}).output("y", "TL_FLOAT", {2}).output("c", "TL_FLOAT", {2});
  std::vector<float> x{-1, 2}, boundY(2), boundC(2);
  BuildOptions options;
  options.outputMemory = {{boundY.data(), sizeof(float) * 2}, {boundC.data(), sizeof(float) * 2}};
  auto program = HostProgram::build(g.graph(), nullptr, options);
  TensorView in{ir::DType::Float, {2}, x.data(), sizeof(float) * 2};
  std::array<TensorView, 2> outs{TensorView{ir::DType::Float, {2}, boundY.data(), sizeof(float) * 2},
                                 TensorView{ir::DType::Float, {2}, boundC.data(), sizeof(float) * 2}};
  for (int run = 0; run < 2; ++run) {
    program->run(std::span(&in, 1), outs);
    EXPECT_EQ(boundY, (std::vector<float>{0, 2}));
    EXPECT_EQ(boundC, (std::vector<float>{4, 5})) << "run " << run;
    boundC = {-1, -1};  // the caller reuses its memory; the next run must write the constant again
  }
}

TEST(KernelsHostProgram, RejectsWrongDtypeShapeAndShortBuffers) {
  auto program = HostProgram::build(partialGraph(), nullptr);
  std::vector<float> x(12), out(8);
  TensorView o{ir::DType::Float, {4, 2}, out.data(), out.size() * sizeof(float)};
  TensorView wrongType{ir::DType::Int32, {4, 3}, x.data(), x.size() * sizeof(float)};
  EXPECT_THROW(program->run(std::span(&wrongType, 1), std::span(&o, 1)), ExecutionError);
  TensorView wrongShape{ir::DType::Float, {4, 5}, x.data(), x.size() * sizeof(float)};
  try {
    program->run(std::span(&wrongShape, 1), std::span(&o, 1));
    FAIL() << "[4,5] input accepted";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("[4,5]"), std::string::npos) << e.what();
  }
  TensorView shortInput{ir::DType::Float, {4, 3}, x.data(), 8};
  EXPECT_THROW(program->run(std::span(&shortInput, 1), std::span(&o, 1)), ExecutionError);
  TensorView in{ir::DType::Float, {4, 3}, x.data(), x.size() * sizeof(float)};
  TensorView shortOutput{ir::DType::Float, {4, 2}, out.data(), 16};
  try {
    program->run(std::span(&in, 1), std::span(&shortOutput, 1));
    FAIL() << "short output accepted";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("output 'z'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(program->run({}, std::span(&o, 1)), ExecutionError);
}

TEST(KernelsHostProgram, UnsupportedDtypeNamesOpAndTensor) {
  GraphBuilder g;
  g.create("x", "TL_INT32", {1, 1, 3, 3}, {1})
      .op("pool", "maxpool2d", {{"src", "x"}}, {{"dst", "y"}},
          {{"size", {2, 2}}, {"stride", {1, 1}}, {"padding", {0, 0, 0, 0}}, {"autopad", "NOTSET"}});
  try {
    HostProgram::build(g.graph(), nullptr);
    FAIL() << "int pooling accepted";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("op 'pool' (maxpool2d)"), std::string::npos) << e.what();
  }
}

TEST(KernelsHostProgram, PrintWritesTheDocumentedLayout) {
  GraphBuilder g;
  g.create("t", "TL_FLOAT", {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})
      .op("s", "slice", {{"src", "t"}}, {{"dst", "t2"}}, {{"axis", 1}, {"start", 1}, {"len", 3}})
      .op("p", "print", {{"src", "t2"}}, {}, {{"msg", "tensor2:"}});
  std::ostringstream out;
  BuildOptions options;
  options.printStream = &out;
  options.threads = 1;
  auto program = HostProgram::build(g.graph(), nullptr, options);
  program->run({}, {});
  EXPECT_EQ(out.str(), "tensor2:\n[[2.000 3.000 4.000]\n [6.000 7.000 8.000]]\n");
}

TEST(KernelsTensorPrinter, EveryDtypeFormat) {
  const ir::Dims d3{3};
  const std::vector<double> dv{1.5, -2.25, 0};
  EXPECT_EQ(formatTensor(ir::DType::Double, d3, dv.data()), "[1.500 -2.250 0.000]\n");
  const std::vector<float> fv{1.0f, 2.0005f, -0.0004f};
  EXPECT_EQ(formatTensor(ir::DType::Float, d3, fv.data()), "[1.000 2.000 -0.000]\n");
  const std::vector<uint16_t> hv{0x3C00, 0xC100, 0x3555};
  EXPECT_EQ(formatTensor(ir::DType::Float16, d3, hv.data()), "[1.000 -2.500 0.333]\n");
  const std::vector<int64_t> i64{-9223372036854775807LL - 1, 0, 42};
  EXPECT_EQ(formatTensor(ir::DType::Int64, d3, i64.data()), "[-9223372036854775808 0 42]\n");
  const std::vector<int32_t> i32{1, 2, 3};
  EXPECT_EQ(formatTensor(ir::DType::Int32, d3, i32.data()), "[1 2 3]\n");
  const std::vector<int16_t> i16{-32768, 7, 32767};
  EXPECT_EQ(formatTensor(ir::DType::Int16, d3, i16.data()), "[-32768 7 32767]\n");
  const std::vector<int8_t> i8{-128, 0, 127};
  EXPECT_EQ(formatTensor(ir::DType::Int8, d3, i8.data()), "[-128 0 127]\n");
  const std::vector<uint64_t> u64{18446744073709551615ULL, 0, 1};
  EXPECT_EQ(formatTensor(ir::DType::UInt64, d3, u64.data()), "[18446744073709551615 0 1]\n");
  const std::vector<uint32_t> u32{4294967295u, 0, 1};
  EXPECT_EQ(formatTensor(ir::DType::UInt32, d3, u32.data()), "[4294967295 0 1]\n");
  const std::vector<uint16_t> u16{65535, 0, 1};
  EXPECT_EQ(formatTensor(ir::DType::UInt16, d3, u16.data()), "[65535 0 1]\n");
  const std::vector<uint8_t> u8{255, 0, 1};
  EXPECT_EQ(formatTensor(ir::DType::UInt8, d3, u8.data()), "[255 0 1]\n");
  const std::vector<uint8_t> b{1, 0, 1};
  EXPECT_EQ(formatTensor(ir::DType::Bool, d3, b.data()), "[1 0 1]\n");
}

TEST(KernelsTensorPrinter, EveryRankLayout) {
  const std::vector<int32_t> v{1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(formatTensor(ir::DType::Int32, {}, v.data()), "1\n");
  EXPECT_EQ(formatTensor(ir::DType::Int32, {1}, v.data()), "[1]\n");
  EXPECT_EQ(formatTensor(ir::DType::Int32, {2, 2, 2}, v.data()), "[[[1 2]\n  [3 4]]\n [[5 6]\n  [7 8]]]\n");
  EXPECT_EQ(formatTensor(ir::DType::Int32, {1, 2, 1, 2, 2}, v.data()),
            "[[[[[1 2]\n    [3 4]]]\n  [[[5 6]\n    [7 8]]]]]\n");
  EXPECT_EQ(formatTensor(ir::DType::Int32, {4, 1}, v.data()), "[[1]\n [2]\n [3]\n [4]]\n");
}

TEST(KernelsHostProgram, ThreadBoundKeepsResultsAndRestoresTheCallersSetting) {
  omp_set_num_threads(3);
  GraphBuilder g;
  const auto x = randomFloats(1 * 8 * 16 * 16, 3);
  g.input("x", "TL_FLOAT", {1, 8, 16, 16})
      .create("w", "TL_FLOAT", {8, 8, 3, 3}, {0}, {-1, 1})
      .create("b", "TL_FLOAT", {8}, {0})
      .op("conv", "conv2d", {{"src", "x"}, {"weight", "w"}, {"bias", "b"}}, {{"dst", "y"}}, sameSizeConv3x3())
      .output("y", "TL_FLOAT", {1, 8, 16, 16});
  const ir::Graph graph = g.graph();
  BuildOptions one, two;
  one.threads = 1;
  two.threads = 2;
  const auto a = runGraph(graph, {HostTensor::of(ir::DType::Float, {1, 8, 16, 16}, x)}, nullptr, one);
  const auto b = runGraph(graph, {HostTensor::of(ir::DType::Float, {1, 8, 16, 16}, x)}, nullptr, two);
  EXPECT_EQ(omp_get_max_threads(), 3);
  const auto va = a.at(0).values<float>(), vb = b.at(0).values<float>();
  ASSERT_EQ(va.size(), vb.size());
  for (std::size_t i = 0; i < va.size(); ++i) ASSERT_NEAR(va[i], vb[i], 1e-4);
}

}  // namespace
}  // namespace qaic::kernels::test
