// SPDX-License-Identifier: Apache-2.0
// The collectives (all_reduce_sum, all_gather) run by parts on threads through PeerRendezvous:
// the results against sums and concatenations computed here, bit-identical on every part; the
// rendezvous' timeout, cancel and mismatch; a collective built without an exchange; MXINT8 on
// the wire (param wire), against sums of each part's encoded-then-decoded contribution.
#include <gmock/gmock.h>

#include <atomic>
#include <future>

#include "PartRunner.hpp"
#include "kernels/format/Half.hpp"
#include "kernels/mx/Mxint8Format.hpp"

namespace qaic::kernels::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

ir::Graph allReduceGraph(std::size_t parts, const std::string& dtype, ir::Dims dims) {
  GraphBuilder g;
  g.input("x", dtype, dims)
      .op("sum", "all_reduce_sum", {{"src", "x"}}, {{"dst", "y"}},
          {{"collective", 0}, {"parts", static_cast<int>(parts)}})
      .output("y", dtype, dims);
  return g.graph();
}

ir::Graph allGatherGraph(std::size_t parts, ir::Dims dims, int axis) {
  ir::Dims out = dims;
  out[static_cast<std::size_t>(axis)] *= static_cast<int64_t>(parts);
  GraphBuilder g;
  // Two collectives, so the ids advance: a relu between them keeps the first's result live.
  g.input("x", "TL_FLOAT", dims)
      .op("gather", "all_gather", {{"src", "x"}}, {{"dst", "g"}},
          {{"axis", axis}, {"collective", 0}, {"parts", static_cast<int>(parts)}})
      .op("act", "relu", {{"src", "g"}}, {{"dst", "r"}})
      .op("sum", "all_reduce_sum", {{"src", "r"}}, {{"dst", "y"}},
          {{"collective", 1}, {"parts", static_cast<int>(parts)}})
      .output("y", "TL_FLOAT", out);
  return g.graph();
}

TEST(Collectives, AllReduceSumAddsInPartOrderOnEveryPart) {
  for (std::size_t parts : {2u, 3u, 4u}) {
    SCOPED_TRACE(parts);
    const ir::Dims dims{3, 37};
    std::vector<std::vector<HostTensor>> inputs;
    std::vector<float> expected(3 * 37, 0.0f);
    for (std::size_t p = 0; p < parts; ++p) {
      auto x = randomFloats(expected.size(), static_cast<uint32_t>(100 + p), -1000.0f, 1000.0f);
      for (std::size_t i = 0; i < x.size(); ++i) expected[i] = p == 0 ? x[i] : expected[i] + x[i];
      inputs.push_back({HostTensor::of(ir::DType::Float, dims, x)});
    }
    const auto graph = allReduceGraph(parts, "TL_FLOAT", dims);
    auto results = runParts(std::vector<ir::Graph>(parts, graph), inputs, nullptr, 3);
    for (std::size_t p = 0; p < parts; ++p) {
      ASSERT_EQ(results.outputs[p][0].values<float>(), expected) << "part " << p;
      // A chunk in, the other chunks back, each once per peer.
      EXPECT_GT(results.transfers[p].sent, 0u);
      EXPECT_EQ(results.transfers[p].sent, results.transfers[p].received);
    }
    uint64_t total = 0;
    for (const auto& t : results.transfers) total += t.sent;
    // Per run: every part sends its buffer less its chunk, and its chunk to every other part.
    EXPECT_EQ(total, 3u * 2 * (parts - 1) * expected.size() * sizeof(float));
  }
}

TEST(Collectives, AllReduceSumOfFloat16AccumulatesInFloat) {
  constexpr std::size_t kParts = 4;
  const ir::Dims dims{300};
  std::vector<std::vector<HostTensor>> inputs;
  std::vector<float> sum(300, 0.0f);
  for (std::size_t p = 0; p < kParts; ++p) {
    std::vector<uint16_t> x(300);
    auto values = randomFloats(300, static_cast<uint32_t>(7 + p), -4.0f, 4.0f);
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = floatToHalf(values[i]);
      sum[i] += halfToFloat(x[i]);
    }
    inputs.push_back({HostTensor::of(ir::DType::Float16, dims, x)});
  }
  auto results = runParts(std::vector<ir::Graph>(kParts, allReduceGraph(kParts, "TL_FLOAT16", dims)), inputs);
  std::vector<uint16_t> expected(300);
  for (std::size_t i = 0; i < sum.size(); ++i) expected[i] = floatToHalf(sum[i]);
  for (std::size_t p = 0; p < kParts; ++p) EXPECT_EQ(results.outputs[p][0].values<uint16_t>(), expected) << p;
}

TEST(Collectives, AllGatherConcatenatesInPartOrderAlongAnyAxis) {
  constexpr std::size_t kParts = 3;
  const ir::Dims dims{2, 3, 4};
  for (int axis : {0, 1, 2}) {
    SCOPED_TRACE(axis);
    std::vector<std::vector<HostTensor>> inputs;
    std::vector<std::vector<float>> x;
    for (std::size_t p = 0; p < kParts; ++p) {
      x.push_back(randomFloats(24, static_cast<uint32_t>(50 + p)));
      inputs.push_back({HostTensor::of(ir::DType::Float, dims, x.back())});
    }
    // The concatenation, relu'd, summed over the parts: kParts times each relu'd value.
    ir::Dims out = dims;
    out[static_cast<std::size_t>(axis)] *= kParts;
    std::vector<float> expected;
    const int64_t outer = axis == 0 ? 1 : (axis == 1 ? 2 : 6);
    const int64_t row = 24 / outer;
    for (int64_t o = 0; o < outer; ++o) {
      for (std::size_t p = 0; p < kParts; ++p) {
        for (int64_t i = 0; i < row; ++i) {
          const float v = std::max(x[p][static_cast<std::size_t>(o * row + i)], 0.0f);
          expected.push_back(v + v + v);
        }
      }
    }
    auto results = runParts(std::vector<ir::Graph>(kParts, allGatherGraph(kParts, dims, axis)), inputs);
    for (std::size_t p = 0; p < kParts; ++p) {
      EXPECT_EQ(results.outputs[p][0].dims, out);
      EXPECT_EQ(results.outputs[p][0].values<float>(), expected) << "part " << p;
    }
  }
}

ir::Graph mxint8ReduceGraph(std::size_t parts, const std::string& dtype, ir::Dims dims) {
  GraphBuilder g;
  g.input("x", dtype, dims)
      .op("sum", "all_reduce_sum", {{"src", "x"}}, {{"dst", "y"}},
          {{"collective", 0}, {"parts", static_cast<int>(parts)}, {"wire", "mxint8"}})
      .output("y", dtype, dims);
  return g.graph();
}

// What a part's contribution is after the wire: encoded, then decoded.
std::vector<float> throughMxint8(const std::vector<float>& values) {
  std::vector<std::byte> encoded(mx::mxint8EncodedBytes(values.size()));
  mx::encodeMxint8(values.data(), values.size(), encoded.data());
  std::vector<float> decoded(values.size());
  mx::decodeMxint8(encoded.data(), values.size(), 0, values.size(), decoded.data());
  return decoded;
}

TEST(Collectives, Mxint8AllReduceSumAddsTheDecodedContributionsInPartOrder) {
  for (std::size_t parts : {2u, 4u}) {
    SCOPED_TRACE(parts);
    const ir::Dims dims{5, 77};  // 385 elements: a short last block
    const std::size_t count = 385;
    std::vector<std::vector<HostTensor>> inputs;
    std::vector<float> expected(count), exact(count, 0.0f), bound(count, 0.0f);
    for (std::size_t p = 0; p < parts; ++p) {
      auto x = randomFloats(count, static_cast<uint32_t>(300 + p), -50.0f, 50.0f);
      const auto received = throughMxint8(x);
      for (std::size_t i = 0; i < count; ++i) {
        expected[i] = p == 0 ? received[i] : expected[i] + received[i];
        exact[i] += x[i];
      }
      // Each contribution is within 1/64 of its block's scale (at most the block's largest).
      for (std::size_t b = 0; b < count; b += 32) {
        float amax = 0;
        for (std::size_t i = b; i < std::min(count, b + 32); ++i) amax = std::max(amax, std::fabs(x[i]));
        for (std::size_t i = b; i < std::min(count, b + 32); ++i) bound[i] += amax / 64;
      }
      inputs.push_back({HostTensor::of(ir::DType::Float, dims, x)});
    }
    auto results = runParts(std::vector<ir::Graph>(parts, mxint8ReduceGraph(parts, "TL_FLOAT", dims)), inputs, nullptr,
                            2);
    for (std::size_t p = 0; p < parts; ++p) {
      const auto got = results.outputs[p][0].values<float>();
      ASSERT_EQ(got, expected) << "part " << p;
      // Encoded bytes only: every part's encoding to every other part, per run.
      EXPECT_EQ(results.transfers[p].sent, 2 * (parts - 1) * mx::mxint8EncodedBytes(count));
      EXPECT_EQ(results.transfers[p].received, results.transfers[p].sent);
    }
    const auto got = results.outputs[0][0].values<float>();
    bool anyDifferent = false;
    for (std::size_t i = 0; i < count; ++i) {
      EXPECT_LE(std::fabs(got[i] - exact[i]), bound[i] * 1.001f + 1e-4f) << i;
      anyDifferent = anyDifferent || got[i] != exact[i];
    }
    EXPECT_TRUE(anyDifferent) << "the wire changed nothing: not quantized?";
  }
}

TEST(Collectives, Mxint8AllReduceSumOfFloat16RoundsOnce) {
  constexpr std::size_t kParts = 2;
  const ir::Dims dims{70};
  std::vector<std::vector<HostTensor>> inputs;
  std::vector<float> sum(70, 0.0f);
  for (std::size_t p = 0; p < kParts; ++p) {
    auto values = randomFloats(70, static_cast<uint32_t>(17 + p), -3.0f, 3.0f);
    std::vector<uint16_t> x(70);
    std::vector<float> asFloat(70);
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = floatToHalf(values[i]);
      asFloat[i] = halfToFloat(x[i]);
    }
    const auto received = throughMxint8(asFloat);
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = p == 0 ? received[i] : sum[i] + received[i];
    inputs.push_back({HostTensor::of(ir::DType::Float16, dims, x)});
  }
  auto results = runParts(std::vector<ir::Graph>(kParts, mxint8ReduceGraph(kParts, "TL_FLOAT16", dims)), inputs);
  std::vector<uint16_t> expected(70);
  for (std::size_t i = 0; i < sum.size(); ++i) expected[i] = floatToHalf(sum[i]);
  for (std::size_t p = 0; p < kParts; ++p) EXPECT_EQ(results.outputs[p][0].values<uint16_t>(), expected) << p;
}

TEST(Collectives, Mxint8AllGatherPlacesEveryPartsDecodedSlice) {
  for (std::size_t parts : {2u, 4u}) {
    for (int axis : {0, 1}) {
      SCOPED_TRACE(std::to_string(parts) + " parts, axis " + std::to_string(axis));
      const ir::Dims dims{3, 40};
      ir::Dims out = dims;
      out[static_cast<std::size_t>(axis)] *= static_cast<int64_t>(parts);
      GraphBuilder g;
      g.input("x", "TL_FLOAT", dims)
          .op("gather", "all_gather", {{"src", "x"}}, {{"dst", "y"}},
              {{"axis", axis}, {"collective", 0}, {"parts", static_cast<int>(parts)}, {"wire", "mxint8"}})
          .output("y", "TL_FLOAT", out);
      std::vector<std::vector<HostTensor>> inputs;
      std::vector<std::vector<float>> received;
      for (std::size_t p = 0; p < parts; ++p) {
        auto x = randomFloats(120, static_cast<uint32_t>(90 + p), -8.0f, 8.0f);
        received.push_back(throughMxint8(x));
        inputs.push_back({HostTensor::of(ir::DType::Float, dims, x)});
      }
      std::vector<float> expected;
      const std::size_t outer = axis == 0 ? 1 : 3, row = 120 / outer;
      for (std::size_t o = 0; o < outer; ++o) {
        for (std::size_t p = 0; p < parts; ++p) {
          expected.insert(expected.end(), received[p].begin() + static_cast<std::ptrdiff_t>(o * row),
                          received[p].begin() + static_cast<std::ptrdiff_t>((o + 1) * row));
        }
      }
      auto results = runParts(std::vector<ir::Graph>(parts, g.graph()), inputs);
      for (std::size_t p = 0; p < parts; ++p) {
        EXPECT_EQ(results.outputs[p][0].values<float>(), expected) << "part " << p;
        EXPECT_EQ(results.transfers[p].sent, (parts - 1) * mx::mxint8EncodedBytes(120));
      }
    }
  }
}

TEST(Collectives, Mxint8CarriesOnlyFloats) {
  auto rendezvous = std::make_shared<PeerRendezvous>(2, std::chrono::seconds(1));
  BuildOptions options;
  options.peers = rendezvous->exchange(0);
  GraphBuilder g;
  g.input("x", "TL_INT32", {4})
      .op("gather", "all_gather", {{"src", "x"}}, {{"dst", "y"}},
          {{"axis", 0}, {"collective", 0}, {"parts", 2}, {"wire", "mxint8"}})
      .output("y", "TL_INT32", {8});
  EXPECT_THAT([&] { HostProgram::build(g.graph(), nullptr, options); },
              ::testing::ThrowsMessage<ExecutionError>(
                  AllOf(HasSubstr("op 'gather'"), HasSubstr("param 'wire': mxint8 carries TL_FLOAT or TL_FLOAT16"))));
}

TEST(Collectives, OnePartNeedsNoTraffic) {
  const ir::Dims dims{2, 3};
  auto x = randomFloats(6, 3);
  auto results = runParts({allGatherGraph(1, dims, 1)}, {{HostTensor::of(ir::DType::Float, dims, x)}});
  std::vector<float> expected;
  for (float v : x) expected.push_back(std::max(v, 0.0f));
  EXPECT_EQ(results.outputs[0][0].values<float>(), expected);
  EXPECT_EQ(results.transfers[0].sent, 0u);
  EXPECT_EQ(results.transfers[0].received, 0u);
}

TEST(Collectives, BuildWithoutAnExchangeNamesTheOp) {
  try {
    HostProgram::build(allReduceGraph(2, "TL_FLOAT", {4}), nullptr);
    FAIL() << "built";
  } catch (const ExecutionError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("op 'sum' (all_reduce_sum)"), HasSubstr("without a peer exchange")));
  }
  try {
    HostProgram::build(allGatherGraph(2, {4}, 0), nullptr);
    FAIL() << "built";
  } catch (const ExecutionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("op 'gather' (all_gather)"));
  }
}

TEST(Collectives, PartCountMustMatchTheExchange) {
  auto rendezvous = std::make_shared<PeerRendezvous>(3, std::chrono::seconds(1));
  BuildOptions options;
  options.peers = rendezvous->exchange(0);
  EXPECT_THAT([&] { HostProgram::build(allReduceGraph(2, "TL_FLOAT", {4}), nullptr, options); },
              ::testing::ThrowsMessage<ExecutionError>(
                  HasSubstr("param 'parts': the op expects 2 parts, the peer exchange has 3")));
  EXPECT_THROW(rendezvous->exchange(3), ExecutionError);
}

TEST(PeerRendezvous, TimesOutNamingThePartsItWaitedFor) {
  auto rendezvous = std::make_shared<PeerRendezvous>(3, std::chrono::milliseconds(300));
  std::vector<float> data(8, 1.0f);
  auto bytes = std::as_writable_bytes(std::span(data));
  auto part1 = std::async(std::launch::async, [&] {
    std::vector<float> mine(8, 2.0f);
    rendezvous->exchange(1)->allReduceSum(7, ir::DType::Float, std::as_writable_bytes(std::span(mine)));
  });
  EXPECT_THAT([&] { rendezvous->exchange(0)->allReduceSum(7, ir::DType::Float, bytes); },
              ::testing::ThrowsMessage<ExecutionError>(
                  AllOf(HasSubstr("part 0, collective 7"), HasSubstr("timed out after 300 ms"),
                        ::testing::ContainsRegex("waiting for part\\(s\\) [0-9, ]*2$"))));
  EXPECT_THAT([&] { part1.get(); }, ::testing::ThrowsMessage<ExecutionError>(HasSubstr("part 1, collective 7")));
  // Broken for good: the late part fails at once.
  EXPECT_THAT(
      [&] { rendezvous->exchange(2)->allReduceSum(7, ir::DType::Float, bytes); },
      ::testing::ThrowsMessage<ExecutionError>(AllOf(HasSubstr("part 2, collective 7"), HasSubstr("timed out"))));
  EXPECT_TRUE(rendezvous->cancelled());
}

TEST(PeerRendezvous, CancelFailsEveryWaitingAndLaterCall) {
  auto rendezvous = std::make_shared<PeerRendezvous>(3, std::chrono::seconds(60));
  std::atomic<int> started{0};
  auto waiter = [&](std::size_t part) {
    return std::async(std::launch::async, [&, part] {
      std::vector<float> mine(4, 1.0f);
      std::vector<float> all(12);
      auto exchange = rendezvous->exchange(part);
      ++started;
      exchange->allGather(3, std::as_bytes(std::span(mine)), std::as_writable_bytes(std::span(all)));
    });
  };
  auto first = waiter(0);
  auto second = waiter(1);
  while (started < 2) std::this_thread::yield();
  rendezvous->cancel("device 2 removed");
  EXPECT_THAT([&] { first.get(); }, ::testing::ThrowsMessage<ExecutionError>(
                                        AllOf(HasSubstr("part 0, collective 3"), HasSubstr("device 2 removed"))));
  EXPECT_THAT([&] { second.get(); }, ::testing::ThrowsMessage<ExecutionError>(HasSubstr("part 1, collective 3")));
  std::vector<float> data(4);
  EXPECT_THAT(
      [&] { rendezvous->exchange(2)->allReduceSum(4, ir::DType::Float, std::as_writable_bytes(std::span(data))); },
      ::testing::ThrowsMessage<ExecutionError>(
          AllOf(HasSubstr("part 2, collective 4"), HasSubstr("device 2 removed"))));
}

TEST(PeerRendezvous, PartsCallingDifferentCollectivesFail) {
  auto rendezvous = std::make_shared<PeerRendezvous>(2, std::chrono::seconds(60));
  auto other = std::async(std::launch::async, [&] {
    std::vector<float> mine(4, 1.0f);
    rendezvous->exchange(1)->allReduceSum(2, ir::DType::Float, std::as_writable_bytes(std::span(mine)));
  });
  std::vector<float> mine(4, 1.0f);
  EXPECT_THAT(
      [&] { rendezvous->exchange(0)->allReduceSum(1, ir::DType::Float, std::as_writable_bytes(std::span(mine))); },
      ::testing::ThrowsMessage<ExecutionError>(HasSubstr("parts disagree on the collective")));
  EXPECT_THROW(other.get(), ExecutionError);
}

// A part whose program fails (here: it runs a different graph) cancels the others, which then
// fail instead of waiting for the timeout.
TEST(PeerRendezvous, AFailedPartEndsTheOthers) {
  const ir::Dims dims{4};
  std::vector<ir::Graph> graphs{allReduceGraph(2, "TL_FLOAT", dims), allGatherGraph(2, dims, 0)};
  std::vector<std::vector<HostTensor>> inputs(2, {HostTensor::of(ir::DType::Float, dims, randomFloats(4, 1))});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT([&] { runParts(graphs, inputs); },
              ::testing::ThrowsMessage<ExecutionError>(HasSubstr("parts disagree on the collective")));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace qaic::kernels::test
