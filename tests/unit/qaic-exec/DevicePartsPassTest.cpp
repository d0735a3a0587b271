// SPDX-License-Identifier: Apache-2.0
// tensor-slicing and device-parts: a multi-device compile, run through compile()'s own passes
// from default-specialization to write-container and read back from programqpc.bin. An MLP and
// a self-attention block with a retained KV cache and two specializations (prefill, decode),
// over 2 and 4 devices: one part per device with the config's slot and cores, the weights split
// or replicated, the caches divided by heads; and each part's program graph (from the container,
// with its constants) run on threads through PeerRendezvous equals the single-device program.
#include <gmock/gmock.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "Compilation.hpp"
#include "ContainerFiles.hpp"
#include "PartRunner.hpp"
#include "SlicingTestNetworks.hpp"
#include "TempDir.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {
namespace {

using namespace partition::slicing_test;
using container::QpcContents;
using kernels::test::HostTensor;
using ::testing::HasSubstr;

// Devices 3, 4, ...: slots that are not part indices, each with its own core count.
PartitionConfig configOf(std::size_t devices) {
  PartitionConfig config = uniformPartitionConfig(static_cast<uint32_t>(devices), 1);
  for (std::size_t p = 0; p < devices; ++p) {
    config.partitions[0].devices[p] = {static_cast<uint32_t>(3 + p), static_cast<uint32_t>(1 + p % 3)};
    config.connections[0].devices[p] = static_cast<uint32_t>(3 + p);
  }
  return config;
}

struct Compiled {
  CompileSummary summary;
  std::shared_ptr<const container::QpcImage> image;
};

// Runs compile()'s passes after load-specializations over `variants` (one per specialization).
Compiled compileVariants(const std::vector<LoadedModel>& variants, const PartitionConfig& config,
                         const std::filesystem::path& dir, bool retainedState, bool mxint8Wire = false) {
  ExecOptions options;
  options.model = "net.json";
  options.binaryDir = dir.string();
  options.retainedState = retainedState;
  options.allowMxint8MdpIo = mxint8Wire;
  Compilation compilation(options);
  compilation.partitionConfig = config;
  compilation.summary.partitionDevices = config.deviceCount();
  if (variants.size() > 1)
    for (std::size_t v = 0; v < variants.size(); ++v) compilation.specializations.push_back({{"seq_len", int64_t(v)}});
  compilation.variants = variants;
  bool started = false;
  for (const CompilePass& pass : compilePasses()) {
    started = started || pass.name == "default-specialization";
    if (started) pass.run(compilation);
  }
  return {compilation.summary, container::QpcImage::open(compilation.summary.outputPath)};
}

LoadedModel modelOf(ir::Graph graph, const Weights& weights) {
  LoadedModel model;
  model.graph = std::move(graph);
  model.weights = weights.tensors();
  return model;
}

// A program's graph as the device runs it: a payload of the container with its constants.
struct PartProgram {
  ir::Graph graph;
  const QpcContents* contents = nullptr;
  kernels::ConstantLookup constants() const {
    return [c = contents](std::string_view name) -> const ir::WeightTensor* {
      for (const auto& constant : c->constants)
        if (constant.tensor.name == name) return &constant.tensor;
      return nullptr;
    };
  }
};

// Part p's contents (part 0: the container's own).
const QpcContents& partContents(const container::QpcImage& image, std::size_t p) {
  return p == 0 ? image.contents() : *image.contents().deviceParts[p].contents;
}

// The program's own payload (specialization < 0) or that specialization payload's.
PartProgram programOf(const QpcContents& contents, int specialization = -1) {
  const auto payload = specialization < 0
                           ? contents.programs[0].payload
                           : contents.specializationPayloads[static_cast<std::size_t>(specialization)].payload;
  PartProgram program;
  program.graph = ir::parseGraph(std::string(reinterpret_cast<const char*>(payload.data()), payload.size()), "payload");
  ir::inferShapes(program.graph);
  program.contents = &contents;
  return program;
}

void expectClose(const std::vector<float>& actual, const std::vector<float>& expected, float tolerance = 1e-4f) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], tolerance * std::max(1.0f, std::fabs(expected[i]))) << "element " << i;
}

HostTensor floats(const ir::Dims& dims, uint32_t seed) {
  return HostTensor::of(ir::DType::Float, dims,
                        randomFloats(static_cast<std::size_t>(ir::elementCount(dims)), seed, -1.0f, 1.0f));
}

uint64_t constantBytes(const QpcContents& contents) {
  uint64_t total = 0;
  for (const auto& c : contents.constants) total += c.storedSize();
  return total;
}

// The figures every multi-device container must have: a part per device with the config's slot
// and cores, each part's weight and retained bytes those of its own container, and the weights
// of all parts the split ones once plus the whole ones on every part.
void expectParts(const Compiled& single, const Compiled& split, const PartitionConfig& config) {
  const std::size_t parts = config.deviceCount();
  const QpcContents& outer = split.image->contents();
  ASSERT_EQ(outer.deviceParts.size(), parts);
  EXPECT_EQ(outer.partitionConfig, partitionConfigJson(config));
  EXPECT_TRUE(single.image->contents().deviceParts.empty());
  std::map<std::string, uint64_t> unsplit;
  for (const auto& c : single.image->contents().constants) unsplit[c.tensor.name] = c.storedSize();
  std::map<std::string, uint64_t> sliced;  // unsplit weight -> bytes of its slices over every part
  uint64_t whole = 0, total = 0;
  for (std::size_t p = 0; p < parts; ++p) {
    const auto& part = outer.deviceParts[p];
    const QpcContents& contents = partContents(*split.image, p);
    EXPECT_EQ(part.slot, config.partitions[0].devices[p].deviceId);
    EXPECT_EQ(part.numCores, config.partitions[0].devices[p].numCores);
    EXPECT_EQ(contents.programs[0].numCores, part.numCores);
    if (p > 0) {
      EXPECT_TRUE(contents.deviceParts.empty());  // nested parts are single-device
    }
    EXPECT_EQ(part.weightBytes, constantBytes(contents));
    uint64_t retained = 0;
    for (const auto& entry : contents.retainedState) retained += entry.size;
    EXPECT_EQ(part.retainedBytes, retained);
    EXPECT_EQ(split.summary.deviceParts[p].weightBytes, part.weightBytes);
    total += part.weightBytes;
    for (const auto& c : contents.constants) {
      const auto at = c.tensor.name.find(".part");
      if (at != std::string::npos)
        sliced[c.tensor.name.substr(0, at)] += c.storedSize();
      else if (p == 0)
        whole += c.storedSize();
      else
        EXPECT_TRUE(unsplit.contains(c.tensor.name)) << c.tensor.name;
    }
  }
  EXPECT_FALSE(sliced.empty());
  uint64_t slicedWhole = 0;
  for (const auto& [name, bytes] : sliced) {
    EXPECT_EQ(bytes, unsplit.at(name)) << name;
    slicedWhole += bytes;
  }
  EXPECT_EQ(total, slicedWhole + parts * whole);
  EXPECT_EQ(constantBytes(single.image->contents()), slicedWhole + whole);
}

class DeviceParts : public ::testing::TestWithParam<std::size_t> {
 protected:
  qaic::testing::TempDir dir_{"qaic-device-parts"};
};
INSTANTIATE_TEST_SUITE_P(Devices, DeviceParts, ::testing::Values(2u, 4u));

TEST_P(DeviceParts, MlpPartsHoldTheirSlicesAndComputeTheWholeResult) {
  const std::size_t parts = GetParam();
  Weights w;
  const LoadedModel model = modelOf(mlp(w), w);
  const PartitionConfig config = configOf(parts);
  const Compiled single = compileVariants({model}, uniformPartitionConfig(1, 1), dir_.path() / "single", false);
  const Compiled split = compileVariants({model}, config, dir_.path() / "split", false);
  expectParts(single, split, config);
  EXPECT_EQ(split.summary.splitWeights, 2u);  // up by columns, down by rows
  EXPECT_THAT(split.summary.sliceReport, HasSubstr("all_reduce_sum"));
  // The parts' nested containers went through files beside the output, gone once mapped.
  std::vector<std::string> written;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path() / "split"))
    written.push_back(entry.path().filename().string());
  EXPECT_EQ(written, std::vector<std::string>{"programqpc.bin"});

  const std::vector<HostTensor> inputs{floats({kRows, kHidden}, 7)};
  const PartProgram whole = programOf(single.image->contents());
  const auto expected = kernels::test::runGraph(whole.graph, inputs, whole.constants());
  std::vector<PartProgram> programs;
  std::vector<ir::Graph> graphs;
  for (std::size_t p = 0; p < parts; ++p) {
    programs.push_back(programOf(partContents(*split.image, p)));
    graphs.push_back(programs.back().graph);
  }
  const auto results = kernels::test::runParts(graphs, std::vector<std::vector<HostTensor>>(parts, inputs),
                                               [&](std::size_t p) { return programs[p].constants(); });
  for (std::size_t p = 0; p < parts; ++p) {
    expectClose(results.outputs[p][0].values<float>(), expected[0].values<float>());
    // The container's traffic figures are what the parts moved.
    EXPECT_EQ(split.image->contents().deviceParts[p].sentBytes, results.transfers[p].sent) << p;
    EXPECT_EQ(split.image->contents().deviceParts[p].receivedBytes, results.transfers[p].received) << p;
    EXPECT_GT(results.transfers[p].sent, 0u);
  }
}

// -allow-mxint8-mdp-io: every part's sum carries MXINT8 (param wire), the container's traffic
// figures are the encoded bytes the parts move, every part gets the same bits, and the result
// stays near the single-device one.
TEST_P(DeviceParts, Mxint8WireMovesEncodedBytesAndStaysNearTheSingleDeviceResult) {
  const std::size_t parts = GetParam();
  Weights w;
  const LoadedModel model = modelOf(mlp(w), w);
  const PartitionConfig config = configOf(parts);
  const Compiled single = compileVariants({model}, uniformPartitionConfig(1, 1), dir_.path() / "single", false);
  const Compiled split = compileVariants({model}, config, dir_.path() / "split", false, true);
  expectParts(single, split, config);
  const std::vector<HostTensor> inputs{floats({kRows, kHidden}, 9)};
  const PartProgram whole = programOf(single.image->contents());
  const auto expected = kernels::test::runGraph(whole.graph, inputs, whole.constants());
  std::vector<PartProgram> programs;
  std::vector<ir::Graph> graphs;
  for (std::size_t p = 0; p < parts; ++p) {
    programs.push_back(programOf(partContents(*split.image, p)));
    graphs.push_back(programs.back().graph);
    int wired = 0;
    for (const ir::Op& op : graphs.back().ops) {
      if (op.optype == "all_reduce_sum" || op.optype == "all_gather") {
        ASSERT_NE(op.findParam("wire"), nullptr) << op.name;
        EXPECT_EQ(op.string("wire"), "mxint8") << op.name;
        ++wired;
      }
    }
    EXPECT_EQ(wired, 1) << "part " << p;
  }
  const auto results = kernels::test::runParts(graphs, std::vector<std::vector<HostTensor>>(parts, inputs),
                                               [&](std::size_t p) { return programs[p].constants(); });
  // The sum of y [5, 16] (80 floats, 3 blocks): every part's encoding to every other part.
  const uint64_t encoded = 80 + 3;
  for (std::size_t p = 0; p < parts; ++p) {
    EXPECT_EQ(results.transfers[p].sent, (parts - 1) * encoded) << p;
    EXPECT_EQ(split.image->contents().deviceParts[p].sentBytes, results.transfers[p].sent) << p;
    EXPECT_EQ(split.image->contents().deviceParts[p].receivedBytes, results.transfers[p].received) << p;
    EXPECT_EQ(results.outputs[p][0].values<float>(), results.outputs[0][0].values<float>()) << "part " << p;
  }
  // The exact numerics are CollectivesTest's; here the result is near the single-device one
  // (1/16 of its largest magnitude per part: many times the MXINT8 error at these sizes, far
  // below a wrong or missing part) and not equal to it (quantized on the way).
  const auto want = expected[0].values<float>();
  const auto got = results.outputs[0][0].values<float>();
  float largest = 0;
  for (float v : want) largest = std::max(largest, std::fabs(v));
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], static_cast<float>(parts) * largest / 16) << "element " << i;
  EXPECT_NE(got, want);
}

// Prefill (3 rows) and decode (1 row) specializations of one attention block with a retained KV
// cache: every part holds its heads of the caches in both, and both payloads of every part
// together give the single-device program's results.
TEST_P(DeviceParts, AttentionWithRetainedCacheAndTwoSpecializations) {
  const std::size_t parts = GetParam();
  const int64_t heads = kHeads / static_cast<int64_t>(parts);
  Weights w;
  const ir::Graph prefill = attentionWithCache(w, 3);
  const ir::Graph decode = attentionWithCache(w, 1);
  const std::vector<LoadedModel> variants{modelOf(prefill, w), modelOf(decode, w)};
  const PartitionConfig config = configOf(parts);
  const Compiled single = compileVariants(variants, uniformPartitionConfig(1, 1), dir_.path() / "single", true);
  const Compiled split = compileVariants(variants, config, dir_.path() / "split", true);
  expectParts(single, split, config);
  const ir::Dims partCache{1, heads, kContext, kHeadDim};
  const uint64_t cacheBytes = static_cast<uint64_t>(ir::elementCount(partCache)) * sizeof(float);
  for (std::size_t p = 0; p < parts; ++p) {
    const QpcContents& contents = partContents(*split.image, p);
    ASSERT_EQ(contents.retainedState.size(), 2u);
    for (const auto& entry : contents.retainedState) EXPECT_EQ(entry.dims, partCache) << entry.name;
    EXPECT_EQ(split.image->contents().deviceParts[p].retainedBytes, 2 * cacheBytes);
    EXPECT_EQ(contents.specializationPayloads.size(), 1u);
    // Every part maps the same buffers as the whole program: x, indices, mask in; y out.
    ASSERT_EQ(contents.buffers.size(), single.image->contents().buffers.size());
    for (std::size_t b = 0; b < contents.buffers.size(); ++b) {
      EXPECT_EQ(contents.buffers[b].io.bufferName, single.image->contents().buffers[b].io.bufferName);
      EXPECT_EQ(contents.buffers[b].io.dims, single.image->contents().buffers[b].io.dims);
    }
  }
  EXPECT_THAT(split.summary.sliceReport, HasSubstr("retained buffer 'past_key': each part keeps its slice"));

  // Both specializations: the program's own payload (prefill) and the decode payload.
  for (int specialization : {-1, 0}) {
    const int64_t seq = specialization < 0 ? 3 : 1;
    std::vector<int64_t> tuples;
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t s = 0; s < seq; ++s) tuples.insert(tuples.end(), {0, h, 2 + s});
    std::vector<float> mask(static_cast<std::size_t>(seq * kContext));
    for (int64_t s = 0; s < seq; ++s)
      for (int64_t c = 0; c < kContext; ++c) mask[static_cast<std::size_t>(s * kContext + c)] = c <= 2 + s ? 0 : -1e4f;
    const ir::Dims cacheDims{1, kHeads, kContext, kHeadDim};
    const HostTensor pastKey = floats(cacheDims, 41), pastValue = floats(cacheDims, 42);
    const std::vector<HostTensor> inputs{
        floats({1, seq, kHeads * kHeadDim}, 40), HostTensor::of(ir::DType::Int64, {1, kHeads, seq, 3}, tuples),
        HostTensor::of(ir::DType::Float, {1, 1, seq, kContext}, mask), pastKey, pastValue};
    const PartProgram whole = programOf(single.image->contents(), specialization);
    const auto expected = kernels::test::runGraph(whole.graph, inputs, whole.constants());
    auto headsOf = [&](const HostTensor& cache, std::size_t p) {
      HostTensor slice{cache.dtype, partCache, {}};
      const auto share = static_cast<std::ptrdiff_t>(cacheBytes);
      slice.bytes.assign(cache.bytes.begin() + static_cast<std::ptrdiff_t>(p) * share,
                         cache.bytes.begin() + static_cast<std::ptrdiff_t>(p + 1) * share);
      return slice;
    };
    std::vector<PartProgram> programs;
    std::vector<ir::Graph> graphs;
    std::vector<std::vector<HostTensor>> partInputs;
    for (std::size_t p = 0; p < parts; ++p) {
      programs.push_back(programOf(partContents(*split.image, p), specialization));
      graphs.push_back(programs.back().graph);
      partInputs.push_back({inputs[0], inputs[1], inputs[2], headsOf(pastKey, p), headsOf(pastValue, p)});
    }
    const auto results = kernels::test::runParts(graphs, partInputs,
                                                 [&](std::size_t p) { return programs[p].constants(); });
    for (std::size_t k = 0; k < 3; ++k) {
      std::vector<float> joined;  // y is whole on every part; the caches join by heads
      for (std::size_t p = 0; p < parts; ++p) {
        const auto values = results.outputs[p][k].values<float>();
        if (k == 0) expectClose(values, expected[0].values<float>());
        joined.insert(joined.end(), values.begin(), values.end());
      }
      if (k > 0) expectClose(joined, expected[k].values<float>());
    }
  }
}

// 3 devices divide neither the MLP's 64 hidden units nor its 16 outputs: it still compiles, every
// part whole, and the report says why.
TEST(DevicePartsCases, IndivisibleSizesCompileReplicatedAndTheReportSaysWhy) {
  qaic::testing::TempDir dir("qaic-device-parts");
  Weights w;
  const LoadedModel model = modelOf(mlp(w), w);
  const PartitionConfig config = configOf(3);
  const Compiled split = compileVariants({model}, config, dir.path(), false);
  ASSERT_EQ(split.image->contents().deviceParts.size(), 3u);
  EXPECT_EQ(split.summary.splitWeights, 0u);
  EXPECT_THAT(split.summary.sliceReport, HasSubstr("do not divide among 3 parts"));
  for (const auto& part : split.image->contents().deviceParts) {
    EXPECT_EQ(part.weightBytes, w.bytes());
    EXPECT_EQ(part.sentBytes, 0u);
  }
}

// One device: neither pass does anything, so the container is the single-device one.
TEST(DevicePartsCases, OneDeviceLeavesTheProgramAlone) {
  qaic::testing::TempDir dir("qaic-device-parts");
  Weights w;
  const LoadedModel model = modelOf(mlp(w), w);
  const Compiled one = compileVariants({model}, uniformPartitionConfig(1, 1), dir.path() / "a", false);
  EXPECT_TRUE(one.image->contents().deviceParts.empty());
  EXPECT_TRUE(one.summary.deviceParts.empty());
  EXPECT_TRUE(one.summary.sliceReport.empty());
  EXPECT_LT(one.image->contents().formatVersion, 4u);  // no device_parts section
}

}  // namespace
}  // namespace qaic::compiler
