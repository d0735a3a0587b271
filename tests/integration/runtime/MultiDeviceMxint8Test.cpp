// SPDX-License-Identifier: Apache-2.0
// -allow-mxint8-mdp-io through the runtime on the real qaic-emu: an MLP compiled by the real
// qaic-exec for two cards with and without the flag. Its one collective (the sum of the second
// matmul's row-split products) carries MXINT8, so the cards' p2p counters move about a quarter
// of the bytes (33 of every 128), and the outputs stay within the bound the format implies: each
// card's contribution to an output element e is off by less than 2^-6 of its block's scale, which
// is at most the block's largest magnitude, itself at most max over the block of sum_k |a[k]|
// |down[k][c]| (a the relu'd hidden row); with 2 cards, |y - y_native| < 2/64 of that, plus
// float rounding. Both programs run on the same cards in turn, so their counters compare.
#include <gmock/gmock.h>

#include <cmath>
#include <fstream>
#include <span>

#include "DeviceAttributes.hpp"
#include "IrGraphs.hpp"
#include "RuntimeFixture.hpp"

namespace qaic::rt::test {
namespace {

constexpr int kRows = 8, kWidth = 64, kHidden = 256;
constexpr int kRuns = 4;

std::vector<float> upWeights() {
  std::vector<float> up(kWidth * kHidden);
  for (std::size_t i = 0; i < up.size(); ++i) up[i] = static_cast<float>(static_cast<int>(i * 7 % 23) - 11) / 64;
  return up;
}
std::vector<float> downWeights() {
  std::vector<float> down(kHidden * kWidth);
  for (std::size_t i = 0; i < down.size(); ++i) down[i] = static_cast<float>(static_cast<int>(i * 5 % 19) - 9) / 32;
  return down;
}
std::vector<float> input(int round) {
  std::vector<float> x(kRows * kWidth);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(static_cast<float>(i) * 0.37f + static_cast<float>(round)) * 3.0f;
  }
  return x;
}

// x [8, 64] -> matmul [64, 256] -> relu -> matmul [256, 64] -> y, weights in a side file.
std::filesystem::path writeMlp(const std::filesystem::path& dir) {
  const auto up = upWeights(), down = downWeights();
  const ir::WeightTensor weights[] = {{"up", ir::DType::Float, {kWidth, kHidden}, std::as_bytes(std::span(up))},
                                      {"down", ir::DType::Float, {kHidden, kWidth}, std::as_bytes(std::span(down))}};
  ir::writeWeightsFile((dir / "mlp.weights").string(), weights);
  auto weight = [](const std::string& name, int rows, int cols) {
    return R"({"name": ")" + name + R"(_w", "optype": "create", "tensors_in": [], "tensors_out": [{"arg_name":
      "dst", "name": ")" +
           name + R"("}], "params": [{"arg_name": "dtype", "value": "TL_FLOAT"}, {"arg_name": "dims",
      "value": [)" +
           std::to_string(rows) + ", " + std::to_string(cols) + R"(]}, {"arg_name": "data", "value": [0]},
      {"arg_name": "ran", "value": [0, 0]}, {"arg_name": "from_file", "value": true}]})";
  };
  auto matmul = [](const std::string& name, const std::string& a, const std::string& b, const std::string& out) {
    return R"({"name": ")" + name + R"(", "optype": "matmul", "tensors_in": [{"arg_name": "src1", "name": ")" + a +
           R"("}, {"arg_name": "src2", "name": ")" + b + R"("}], "tensors_out": [{"arg_name": "dst", "name": ")" + out +
           R"("}], "params": []})";
  };
  const auto path = dir / "mlp.json";
  std::ofstream(path) << R"({"weights": "mlp.weights", "io": [
    {"name": "x", "tensor": "x", "direction": "in", "dtype": "TL_FLOAT", "dims": [8, 64]},
    {"name": "y", "tensor": "y", "direction": "out", "dtype": "TL_FLOAT", "dims": [8, 64]}], "ops": [)" +
                             weight("up", kWidth, kHidden) + ", " + weight("down", kHidden, kWidth) + ", " +
                             matmul("up_mm", "x", "up", "h") +
                             R"(, {"name": "act", "optype": "relu", "tensors_in": [{"arg_name": "src", "name": "h"}],
       "tensors_out": [{"arg_name": "dst", "name": "a"}], "params": []}, )" +
                             matmul("down_mm", "a", "down", "y") + "]}";
  return path;
}

// For each output element, the largest sum_k |a[k]| |down[k][c]| over its block of 32 (a
// row-major [8, 64] output: a block is half a row).
std::vector<double> blockMagnitudeBounds(const std::vector<float>& x) {
  const auto up = upWeights(), down = downWeights();
  std::vector<double> magnitude(kRows * kWidth, 0.0);
  for (int r = 0; r < kRows; ++r) {
    for (int k = 0; k < kHidden; ++k) {
      double h = 0;
      for (int i = 0; i < kWidth; ++i) h += double{x[r * kWidth + i]} * up[i * kHidden + k];
      const double a = std::max(h, 0.0);
      for (int c = 0; c < kWidth; ++c) magnitude[r * kWidth + c] += a * std::fabs(down[k * kWidth + c]);
    }
  }
  std::vector<double> bound(magnitude.size());
  for (std::size_t b = 0; b < magnitude.size(); b += 32) {
    const double largest = *std::max_element(magnitude.begin() + static_cast<std::ptrdiff_t>(b),
                                             magnitude.begin() + static_cast<std::ptrdiff_t>(b + 32));
    std::fill(bound.begin() + static_cast<std::ptrdiff_t>(b), bound.begin() + static_cast<std::ptrdiff_t>(b + 32),
              largest);
  }
  return bound;
}

class MultiDeviceMxint8Test : public RuntimeTest {
 protected:
  std::string emulatorConfig() const override {
    return R"({"devices": [{"nsps": 2, "dbcs": 4}, {"nsps": 2, "dbcs": 4}]})";
  }
  void SetUp() override {
    RuntimeTest::SetUp();
    if (HasFatalFailure()) return;
    const auto ir = writeMlp(work());
    const auto config = work() / "mdp2.json";
    std::ofstream(config) << R"({"connections":[{"devices":[0,1],"type":"p2p"}],"partitions":[{"name":)"
                             R"("Partition0","devices":[{"deviceId":0,"numCores":1},{"deviceId":1,"numCores":1}]}]})";
    native_ = compileFile("native", ir, {"-mdp-load-partition-config=" + config.string()});
    mxint8_ = compileFile("mxint8", ir, {"-mdp-load-partition-config=" + config.string(), "-allow-mxint8-mdp-io"});
    context_ = makeContext();
  }

  struct Outcome {
    std::vector<std::vector<float>> outputs;  // by round
    uint64_t sent[2] = {0, 0}, received[2] = {0, 0};
  };
  Outcome runAll(const Network& network) {
    Outcome outcome;
    uint64_t txBefore[2], rxBefore[2];
    for (unsigned d = 0; d < 2; ++d) {
      txBefore[d] = counter(d, driver::sysfs::kEmuP2pTxBytes);
      rxBefore[d] = counter(d, driver::sysfs::kEmuP2pRxBytes);
    }
    auto set = InferenceSet::Factory(context_, network.qpc, 0, 1, 1);
    for (int round = 0; round < kRuns; ++round) {
      std::vector<float> x = input(round), y(kRows * kWidth, -1000.0f);
      inferOnce(*set, {heapBuffer(x), heapBuffer(y)}, static_cast<uint64_t>(round));
      outcome.outputs.push_back(y);
    }
    set.reset();
    for (unsigned d = 0; d < 2; ++d) {
      outcome.sent[d] = counter(d, driver::sysfs::kEmuP2pTxBytes) - txBefore[d];
      outcome.received[d] = counter(d, driver::sysfs::kEmuP2pRxBytes) - rxBefore[d];
    }
    return outcome;
  }
  uint64_t counter(unsigned device, const char* name) const { return std::stoull(emu_->attribute(device, name)); }

  Network native_, mxint8_;
};

TEST_F(MultiDeviceMxint8Test, Mxint8BetweenCardsMovesAQuarterOfTheBytesWithinTheFormatsBound) {
  ASSERT_EQ(mxint8_.qpc->getInfo().numDevices, 2u);
  const Outcome native = runAll(native_);
  const Outcome mxint8 = runAll(mxint8_);
  // One all_reduce_sum of y ([8, 64] float, 2048 bytes) per inference: natively each card sends
  // the half it does not sum and gets its half back (2048 bytes each way); as MXINT8 each card
  // sends its whole encoded contribution, 512 codes and 16 scales.
  for (unsigned d = 0; d < 2; ++d) {
    SCOPED_TRACE("device " + std::to_string(d));
    EXPECT_EQ(native.sent[d], uint64_t{kRuns} * 2048);
    EXPECT_EQ(mxint8.sent[d], uint64_t{kRuns} * 528);
    EXPECT_EQ(mxint8.received[d], mxint8.sent[d]);
    const double ratio = static_cast<double>(native.sent[d]) / static_cast<double>(mxint8.sent[d]);
    EXPECT_GT(ratio, 3.8);
    EXPECT_LT(ratio, 4.0);
  }
  bool anyDifferent = false;
  for (int round = 0; round < kRuns; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const auto bound = blockMagnitudeBounds(input(round));
    const auto& want = native.outputs[static_cast<std::size_t>(round)];
    const auto& got = mxint8.outputs[static_cast<std::size_t>(round)];
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_LE(std::fabs(double{got[i]} - want[i]), 2 * bound[i] / 64 + 1e-5 * (1 + std::fabs(want[i])))
          << "element " << i;
      anyDifferent = anyDifferent || got[i] != want[i];
    }
  }
  EXPECT_TRUE(anyDifferent) << "MXINT8 outputs equal the native ones everywhere: nothing was quantized";
}

}  // namespace
}  // namespace qaic::rt::test
