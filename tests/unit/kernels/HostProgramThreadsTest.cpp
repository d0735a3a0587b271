// SPDX-License-Identifier: Apache-2.0
// A HostProgram built on one thread and run on others (what the emulator does: it builds on the
// thread that loads a program and runs it on the DBC channel thread). oneDNN primitives that use
// the library's per-thread scratchpad cannot migrate between threads; these tests fail (crash or
// wrong results) if a primitive that needs a scratchpad runs without one handed over by the plan.
#include <gtest/gtest.h>

#include <cstring>
#include <exception>
#include <thread>

#include "GraphBuilder.hpp"

namespace qaic::kernels::test {
namespace {

// A grouped convolution with few channels per group: oneDNN runs it as im2col + GEMM, an
// implementation whose library-mode scratchpad is the creating thread's global one.
constexpr int64_t kIn = 6, kOut = 10, kGroups = 2, kSize = 12, kPooled = 6, kClasses = 10;
constexpr int64_t kInPerGroup = kIn / kGroups, kOutPerGroup = kOut / kGroups;
constexpr int64_t kFlat = kOut * kPooled * kPooled;

struct Net {
  std::vector<float> x = randomFloats(kIn * kSize * kSize, 11);
  std::vector<float> convWeight = randomFloats(kOut * kInPerGroup * 3 * 3, 12);
  std::vector<float> convBias = randomFloats(kOut, 13);
  std::vector<float> fcWeight = randomFloats(kFlat * kClasses, 14);
  std::vector<float> fcBias = randomFloats(kClasses, 15);

  // conv (oneDNN convolution) -> maxpool (oneDNN pooling) -> flatten -> gemm (oneDNN matmul);
  // every one of these primitives reports a non-zero scratchpad on the CPUs we run on.
  ir::Graph graph() const {
    GraphBuilder g;
    g.input("x", "TL_FLOAT", {1, kIn, kSize, kSize})
        .create("cw", "TL_FLOAT", {kOut, kInPerGroup, 3, 3}, toDoubles(convWeight))
        .create("cb", "TL_FLOAT", {kOut}, toDoubles(convBias))
        .op("conv", "conv2d", {{"src", "x"}, {"weight", "cw"}, {"bias", "cb"}}, {{"dst", "c"}},
            sameSizeConv3x3(kGroups))
        .op("pool", "maxpool2d", {{"src", "c"}}, {{"dst", "p"}},
            {{"size", {3, 3}}, {"stride", {2, 2}}, {"padding", {1, 1, 1, 1}}, {"autopad", "NOTSET"}})
        .op("flat", "flatten", {{"src", "p"}}, {{"dst", "f"}}, {{"axis", 1}})
        .create("fw", "TL_FLOAT", {kFlat, kClasses}, toDoubles(fcWeight))
        .create("fb", "TL_FLOAT", {kClasses}, toDoubles(fcBias))
        .op("fc", "gemm", {{"a", "f"}, {"b", "fw"}, {"c", "fb"}}, {{"dst", "z"}},
            {{"alpha", 1.0}, {"beta", 1.0}, {"trans_a", false}, {"trans_b", false}})
        .output("c", "TL_FLOAT", {1, kOut, kSize, kSize})
        .output("z", "TL_FLOAT", {1, kClasses});
    return g.graph();
  }

  // The convolution computed directly, to show the reference run computes the real thing.
  std::vector<float> naiveConv() const {
    std::vector<float> out(static_cast<std::size_t>(kOut * kSize * kSize));
    for (int64_t o = 0; o < kOut; ++o)
      for (int64_t y = 0; y < kSize; ++y)
        for (int64_t xx = 0; xx < kSize; ++xx) {
          float sum = convBias[o];
          for (int64_t i = 0; i < kInPerGroup; ++i)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                const int64_t sy = y + ky - 1, sx = xx + kx - 1;
                if (sy < 0 || sy >= kSize || sx < 0 || sx >= kSize) continue;
                const int64_t channel = o / kOutPerGroup * kInPerGroup + i;
                sum += x[(channel * kSize + sy) * kSize + sx] * convWeight[((o * kInPerGroup + i) * 3 + ky) * 3 + kx];
              }
          out[(o * kSize + y) * kSize + xx] = sum;
        }
    return out;
  }
};

using Outputs = std::vector<std::vector<float>>;

Outputs runOnce(HostProgram& program, const std::vector<float>& x) {
  TensorView in{ir::DType::Float, {1, kIn, kSize, kSize}, const_cast<float*>(x.data()), x.size() * sizeof(float)};
  Outputs out{std::vector<float>(static_cast<std::size_t>(kOut * kSize * kSize), -1.0f),
              std::vector<float>(static_cast<std::size_t>(kClasses), -1.0f)};
  std::vector<TensorView> views;
  for (auto& o : out) views.push_back({ir::DType::Float, {}, o.data(), o.size() * sizeof(float)});
  program.run(std::span(&in, 1), views);
  return out;
}

// Runs f(0) ... f(count - 1) on `count` new threads at once and waits for them all; the first
// exception thrown there is rethrown here.
template <typename F>
void onNewThreads(int count, F&& f) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(count));
  std::vector<std::thread> workers;
  for (int k = 0; k < count; ++k) {
    workers.emplace_back([&f, &errors, k] {
      try {
        f(k);
      } catch (...) {
        errors[static_cast<std::size_t>(k)] = std::current_exception();
      }
    });
  }
  for (auto& worker : workers) worker.join();
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

template <typename F>
void onNewThread(F&& f) {
  onNewThreads(1, [&f](int) { f(); });
}

void expectBitEqual(const Outputs& got, const Outputs& want, const char* where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (std::size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].size(), want[k].size()) << where << ", output " << k;
    EXPECT_EQ(std::memcmp(got[k].data(), want[k].data(), got[k].size() * sizeof(float)), 0)
        << where << ": output " << k << " differs from the run on the building thread";
  }
}

TEST(KernelsHostProgramThreads, BuiltOnOneThreadRunsOnOthersBitForBit) {
  const Net net;
  const ir::Graph graph = net.graph();
  std::unique_ptr<HostProgram> program;
  Outputs reference;
  onNewThread([&] {
    program = HostProgram::build(graph, nullptr);
    reference = runOnce(*program, net.x);
  });
  // Without a scratchpad to hand over, the test below would prove nothing.
  EXPECT_GT(program->scratchpadBytes(), 0u);

  const auto conv = net.naiveConv();
  ASSERT_EQ(reference.at(0).size(), conv.size());
  for (std::size_t i = 0; i < conv.size(); ++i) ASSERT_NEAR(reference[0][i], conv[i], 1e-4) << "conv element " << i;

  for (const char* where : {"second thread", "third thread"}) {
    Outputs got;
    onNewThread([&] { got = runOnce(*program, net.x); });
    expectBitEqual(got, reference, where);
  }
  program.reset();  // destroyed on yet another thread than the one that built it
}

TEST(KernelsHostProgramThreads, ProgramsBuiltOnOneThreadRunConcurrentlyOnTwo) {
  const Net net;
  const ir::Graph graph = net.graph();
  std::unique_ptr<HostProgram> first, second;
  Outputs reference;
  onNewThread([&] {
    first = HostProgram::build(graph, nullptr);
    second = HostProgram::build(graph, nullptr);
    reference = runOnce(*first, net.x);
  });
  constexpr int kRuns = 20;
  HostProgram* programs[2] = {first.get(), second.get()};
  std::vector<Outputs> runs[2];
  onNewThreads(2, [&](int k) {
    for (int i = 0; i < kRuns; ++i) runs[k].push_back(runOnce(*programs[k], net.x));
  });
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(runs[k].size(), static_cast<std::size_t>(kRuns));
    for (const auto& outputs : runs[k]) expectBitEqual(outputs, reference, k == 0 ? "first program" : "second program");
  }
}

// The emulator's activations of one load: programs sharing one ConstantPacking, built on two
// threads at once over the same constant data (each weight is packed once, under the registry's
// lock, in the data's own bytes) and then run at once; each computes what a program with
// private packed copies computes.
TEST(KernelsHostProgramThreads, ProgramsSharingPackedConstantsBuildAndRunConcurrently) {
  const Net net;
  CacheLineVector<float> convWeight(net.convWeight.begin(), net.convWeight.end());
  CacheLineVector<float> fcWeight(net.fcWeight.begin(), net.fcWeight.end());
  std::vector<ir::WeightTensor> weights = {
      {"cw",
       ir::DType::Float,
       {kOut, kInPerGroup, 3, 3},
       std::as_bytes(std::span(convWeight.data(), convWeight.size()))},
      {"fw", ir::DType::Float, {kFlat, kClasses}, std::as_bytes(std::span(fcWeight.data(), fcWeight.size()))}};
  const ConstantLookup lookup = [&weights](std::string_view name) -> const ir::WeightTensor* {
    for (const auto& w : weights) {
      if (w.name == name) return &w;
    }
    return nullptr;
  };
  // The same network with its weights bound by name (as a program container binds them).
  GraphBuilder g;
  g.input("x", "TL_FLOAT", {1, kIn, kSize, kSize})
      .create("cw", "TL_FLOAT", {kOut, kInPerGroup, 3, 3}, {}, {0, 0}, true)
      .create("cb", "TL_FLOAT", {kOut}, toDoubles(net.convBias))
      .op("conv", "conv2d", {{"src", "x"}, {"weight", "cw"}, {"bias", "cb"}}, {{"dst", "c"}}, sameSizeConv3x3(kGroups))
      .op("flat", "flatten", {{"src", "c"}}, {{"dst", "f"}}, {{"axis", 1}})
      .create("fw", "TL_FLOAT", {kOut * kSize * kSize, kClasses}, {}, {0, 0}, true)
      .create("fb", "TL_FLOAT", {kClasses}, toDoubles(net.fcBias))
      .op("fc", "gemm", {{"a", "f"}, {"b", "fw"}, {"c", "fb"}}, {{"dst", "z"}},
          {{"alpha", 1.0}, {"beta", 1.0}, {"trans_a", false}, {"trans_b", false}})
      .output("c", "TL_FLOAT", {1, kOut, kSize, kSize})
      .output("z", "TL_FLOAT", {1, kClasses});
  fcWeight.assign(static_cast<std::size_t>(kOut * kSize * kSize * kClasses), 0.0f);
  for (std::size_t i = 0; i < fcWeight.size(); ++i) fcWeight[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
  weights[1] = {"fw",
                ir::DType::Float,
                {kOut * kSize * kSize, kClasses},
                std::as_bytes(std::span(fcWeight.data(), fcWeight.size()))};
  const ir::Graph graph = g.graph();

  // The reference: private packed copies, the data left alone.
  const std::vector<float> convCopy(convWeight.begin(), convWeight.end()), fcCopy(fcWeight.begin(), fcWeight.end());
  std::vector<ir::WeightTensor> copies = {{"cw", ir::DType::Float, weights[0].dims, std::as_bytes(std::span(convCopy))},
                                          {"fw", ir::DType::Float, weights[1].dims, std::as_bytes(std::span(fcCopy))}};
  const auto reference = runOnce(
      *HostProgram::build(graph,
                          [&copies](std::string_view name) -> const ir::WeightTensor* {
                            return name == "cw" ? &copies[0] : name == "fw" ? &copies[1] : nullptr;
                          }),
      net.x);

  BuildOptions options;
  options.packing = makeConstantPacking();
  std::unique_ptr<HostProgram> programs[2];
  std::vector<Outputs> runs[2];
  onNewThreads(2, [&](int k) { programs[k] = HostProgram::build(graph, lookup, options); });
  onNewThreads(2, [&](int k) {
    for (int i = 0; i < 10; ++i) runs[k].push_back(runOnce(*programs[k], net.x));
  });
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(runs[k].size(), 10u);
    for (const auto& outputs : runs[k]) expectBitEqual(outputs, reference, k == 0 ? "first program" : "second program");
  }
}

}  // namespace
}  // namespace qaic::kernels::test
