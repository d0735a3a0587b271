// SPDX-License-Identifier: Apache-2.0
// Multi-device programs on the real qaic-emu (docs/emulator.md, "Multi-device programs"): N
// single-device programs, one per card, activated as the parts of one peer group, whose
// all_reduce_sum and all_gather move data between the cards. Inferences on every part give the
// sums and gathers, the cards' p2p counters move by the bytes the collectives exchange, the
// device refuses parts that do not fit the group, and a part's card deactivated, reset, hung or
// removed mid-inference fails the other parts naming that card, while a program of its own
// beside the group keeps running and nothing leaks.
#include <gmock/gmock.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "ContainerFiles.hpp"
#include "DeviceClient.hpp"
#include "EmuTest.hpp"
#include "InferenceRig.hpp"
#include "IrGraphs.hpp"
#include "ProcessUsage.hpp"
#include "ReluProgram.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;
using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kElements = 8;
constexpr uint64_t kFloatBytes = kElements * sizeof(float);
constexpr uint64_t kToken = 0x5eed0001;

// A part of an N-part program: s = all_reduce_sum(x) and g = all_gather(x, axis 1), x [1, 8]
// floats, each io buffer a page of the IO region after the descriptors and the doorbell.
std::vector<std::byte> peerProgram(int parts) {
  const ir::DeviceFormat flat{ir::DeviceLayout::Flat, ir::DType::Float};
  auto io = [&](const std::string& name, ir::Direction direction, ir::Dims dims) {
    ir::IoBuffer b;
    b.bufferName = name;
    b.tensor = name;
    b.direction = direction;
    b.dims = std::move(dims);
    b.deviceFormat = flat;
    return b;
  };
  ir::Graph graph;
  ir::Op sum;
  sum.name = "sum";
  sum.optype = "all_reduce_sum";
  sum.inputs = {{"src", "x"}};
  sum.outputs = {{"dst", "s"}};
  sum.params = {{"collective", 0.0}, {"parts", static_cast<double>(parts)}};
  ir::Op gather;
  gather.name = "gather";
  gather.optype = "all_gather";
  gather.inputs = {{"src", "x"}};
  gather.outputs = {{"dst", "g"}};
  gather.params = {{"axis", 1.0}, {"collective", 1.0}, {"parts", static_cast<double>(parts)}};
  graph.ops = {sum, gather};
  graph.io = {io("x", ir::Direction::In, {1, kElements}), io("s", ir::Direction::Out, {1, kElements}),
              io("g", ir::Direction::Out, {1, kElements * parts})};
  graph.sourceName = "peer-test";
  ir::inferShapes(graph);
  const std::string json = ir::toJson(graph);

  container::QpcContents contents;
  for (uint32_t i = 0; i < graph.io.size(); ++i) {
    container::QpcBuffer b;
    b.index = i;
    b.io = graph.io[i];
    b.size = static_cast<uint64_t>(ir::elementCount(b.io.dims)) * sizeof(float);
    b.dataType = rt::BUFFER_DATA_TYPE_FLOAT;
    b.deviceOffset = 12288 + 4096 * i;
    b.deviceSize = 4096;
    contents.buffers.push_back(b);
  }
  container::QpcProgram program;
  program.name = "part";
  program.numCores = 1;
  program.numSemaphores = 1;
  program.doneSemaphore = 0;
  program.ioRegionSize = 12288 + 4096 * graph.io.size();
  program.totalRequiredMemory = program.ioRegionSize;
  program.doorbellAddress = 8192;
  program.requestDescriptorOffset = 0;
  program.responseDescriptorOffset = 4096;
  program.bufferIndices = {0, 1, 2};
  program.payload = std::as_bytes(std::span(json.data(), json.size()));
  contents.programs = {program};
  return container::serializeQpc(contents);
}

// Part p's input: distinct per part and element, exact in float so every sum is too.
std::vector<float> partInput(int part, int round) {
  std::vector<float> x(kElements);
  for (int64_t i = 0; i < kElements; ++i) x[i] = static_cast<float>((part + 1) * 10 + round) + 0.5f * i;
  return x;
}

// What one part sends (and receives) per inference: its share of the reduce-scatter and the
// all-gather of the sum, then its slice to every other part (PeerRendezvous::Transfer).
uint64_t bytesPerInference(int parts) {
  const uint64_t own = kFloatBytes / parts;
  return (parts - 1) * own + (kFloatBytes - own) + (parts - 1) * kFloatBytes;
}

// One part: its card's node, the program loaded, the activation and its IO (the rig refers to
// the node, so neither moves).
struct Part {
  int device = 0;
  std::unique_ptr<DeviceNode> node;
  std::vector<std::byte> bytes;  // the container the image reads
  std::unique_ptr<container::QpcImage> image;
  uint32_t dbc = 0;
  std::unique_ptr<InferenceRig> rig;
};

std::string diagnostic(InferenceRig& rig) {
  const auto header = rig.responseHeader();
  const auto bytes = rig.buffer("response descriptor");
  const uint64_t at = responseDiagnosticOffset(header.bufferCount);
  uint32_t length = 0;
  std::memcpy(&length, bytes.data() + at, sizeof length);
  if (length > kResponseDiagnosticEnd - at - sizeof length) return "";
  return std::string(reinterpret_cast<const char*>(bytes.data() + at + sizeof length), length);
}

long threadCount(pid_t pid) {
  long n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

class PeerGroupTest : public EmuTest {
 protected:
  // `devices` cards of 4 NSPs and 4 DBCs; the compute pool has one core, so the parts can only
  // all reach a collective if a waiting part lends its core out. p2pGroups: "" for one group.
  std::string configFor(int devices, const std::string& p2pGroups, uint32_t timeoutMs) const {
    std::string list;
    for (int d = 0; d < devices; ++d) list += std::string(d ? ", " : "") + R"({"nsps": 4, "dbcs": 4})";
    return R"({"devices": [)" + list + R"(], "nodes": {"mode": "0600", "owner": "root", "group": "root"},)" +
           (p2pGroups.empty() ? "" : R"( "p2p_groups": )" + p2pGroups + ",") + R"( "semaphore_timeout_ms": )" +
           std::to_string(timeoutMs) + R"(, "compute_threads": 1})";
  }
  std::string config() const override { return configFor(devices_, p2pGroups_, timeoutMs_); }

  Part openPart(int device, int parts) {
    auto node = DeviceNode::open(root(), static_cast<unsigned>(device));
    if (!node) throw std::runtime_error(node.message());
    Part part{device, std::make_unique<DeviceNode>(std::move(*node)), peerProgram(parts), nullptr, 0, nullptr};
    part.image = container::QpcImage::fromBytes(part.bytes, "peer");
    if (auto loaded = loadProgram(*part.node, part.bytes, 1); !loaded) throw std::runtime_error(loaded.message());
    return part;
  }
  // Activates part `index` of `parts` on `device` and attaches its IO.
  Part activatePart(int device, int index, int parts, uint64_t token = kToken) {
    Part part = openPart(device, parts);
    auto dbc = activatePeerPart(*part.node, 1, 0, 16, 0,
                                {token, static_cast<uint32_t>(index), static_cast<uint32_t>(parts)});
    if (!dbc) throw std::runtime_error(dbc.message());
    part.dbc = *dbc;
    part.rig = std::make_unique<InferenceRig>(*part.node, *part.image, 0, part.dbc);
    part.rig->attachAll();
    return part;
  }
  void submit(Part& part, int index, int round) {
    part.rig->writeRequestDescriptor(static_cast<uint32_t>(round + 1));
    const auto x = partInput(index, round);
    std::memcpy(part.rig->buffer("x").data(), x.data(), kFloatBytes);
    std::memset(part.rig->buffer("s").data(), 0xff, part.rig->buffer("s").size());
    std::memset(part.rig->buffer("g").data(), 0xff, part.rig->buffer("g").size());
    auto submitted = part.node->execute(part.dbc, part.rig->executeEntries());
    ASSERT_TRUE(submitted) << submitted.message();
  }
  // Each BO of an EXECUTE_BO is a request of its own: the first output's waits for the program
  // and ends with its status; the response descriptor's comes last.
  Result<void> wait(Part& part) {
    auto output = part.node->waitBo(part.rig->slot("s").bo.handle(), part.dbc, 30000);
    auto last = part.node->waitBo(part.rig->lastHandle(), part.dbc, 30000);
    return output ? last : output;
  }
  uint64_t counter(int device, const char* name) const { return std::stoull(emu_->attribute(device, name)); }

  int devices_ = 2;
  std::string p2pGroups_;
  uint32_t timeoutMs_ = 20000;
};

void expectResults(Part& part, int parts, int round) {
  const auto header = part.rig->responseHeader();
  ASSERT_EQ(header.status, DBC_COMPLETION_SUCCESS) << completionCodeName(static_cast<uint16_t>(header.status));
  std::vector<float> s(kElements), g(kElements * parts);
  std::memcpy(s.data(), part.rig->buffer("s").data(), kFloatBytes);
  std::memcpy(g.data(), part.rig->buffer("g").data(), kFloatBytes * parts);
  for (int64_t i = 0; i < kElements; ++i) {
    float sum = 0;
    for (int p = 0; p < parts; ++p) sum += partInput(p, round)[i];
    EXPECT_EQ(s[i], sum) << "sum element " << i << " on accel" << part.device;
    for (int p = 0; p < parts; ++p)
      EXPECT_EQ(g[p * kElements + i], partInput(p, round)[i]) << "gathered element " << i << " of part " << p;
  }
}

// ---- Inferences over 2 and 4 cards ----------------------------------------------------------

class PeerGroupInference : public PeerGroupTest, public ::testing::WithParamInterface<int> {
 protected:
  void SetUp() override {
    devices_ = GetParam();
    PeerGroupTest::SetUp();
  }
};

TEST_P(PeerGroupInference, EveryPartGetsTheSumAndTheGatherAndTheCountersMove) {
  const int parts = GetParam();
  std::vector<uint64_t> tx0, rx0;
  for (int d = 0; d < parts; ++d) {
    tx0.push_back(counter(d, sysfs::kEmuP2pTxBytes));
    rx0.push_back(counter(d, sysfs::kEmuP2pRxBytes));
    EXPECT_EQ(tx0.back(), 0u);
  }
  std::vector<Part> group;
  for (int p = 0; p < parts; ++p) group.push_back(activatePart(p, p, parts));
  constexpr int kRounds = 3;
  for (int round = 0; round < kRounds; ++round) {
    // Submitted in reverse part order: the first parts wait in their collectives for the last.
    for (int p = parts - 1; p >= 0; --p) submit(group[p], p, round);
    for (int p = 0; p < parts; ++p) {
      auto done = wait(group[p]);
      ASSERT_TRUE(done) << "part " << p << ": " << done.message() << "\n" << diagnostic(*group[p].rig);
      expectResults(group[p], parts, round);
    }
  }
  for (int d = 0; d < parts; ++d) {
    EXPECT_EQ(counter(d, sysfs::kEmuP2pTxBytes) - tx0[d], kRounds * bytesPerInference(parts)) << "accel" << d;
    EXPECT_EQ(counter(d, sysfs::kEmuP2pRxBytes) - rx0[d], kRounds * bytesPerInference(parts)) << "accel" << d;
  }
  // Deactivated, the counters keep what the parts moved, and every card is whole again.
  for (Part& part : group) {
    part.rig.reset();
    ASSERT_TRUE(deactivate(*part.node, part.dbc));
  }
  for (int d = 0; d < parts; ++d) {
    EXPECT_EQ(counter(d, sysfs::kEmuP2pTxBytes) - tx0[d], kRounds * bytesPerInference(parts)) << "accel" << d;
    EXPECT_EQ(counter(d, sysfs::kEmuNspFree), kTestNsps) << "accel" << d;
    EXPECT_EQ(counter(d, sysfs::kEmuVcFree), kTestDbcs) << "accel" << d;
  }
}

INSTANTIATE_TEST_SUITE_P(Cards, PeerGroupInference, ::testing::Values(2, 4),
                         [](const auto& info) { return std::to_string(info.param) + "Cards"; });

// ---- Refusals -------------------------------------------------------------------------------

class PeerGroupRefusal : public PeerGroupTest {
 protected:
  void SetUp() override {
    devices_ = 4;
    p2pGroups_ = "[[0, 1], [2, 3]]";
    PeerGroupTest::SetUp();
  }
  // Activating part `index` of `parts` on `device` fails with `error`; returns the message.
  std::string refused(int device, int index, int parts, int error, uint64_t token = kToken) {
    Part part = openPart(device, parts);
    auto dbc = activatePeerPart(*part.node, 1, 0, 16, 0,
                                {token, static_cast<uint32_t>(index), static_cast<uint32_t>(parts)});
    EXPECT_FALSE(dbc) << "part " << index << " of " << parts << " on accel" << device << " was activated";
    if (dbc) return "";
    EXPECT_EQ(dbc.error(), error) << dbc.message();
    EXPECT_EQ(counter(device, sysfs::kEmuVcFree), kTestDbcs) << "a refused part holds a DBC";
    return dbc.message();
  }
};

TEST_F(PeerGroupRefusal, PartsThatDoNotFitTheGroupAreRefusedNamingTheDevices) {
  Part first = activatePart(0, 0, 2);
  // accel2 is behind another switch than accel0.
  EXPECT_THAT(refused(2, 1, 2, EXDEV), AllOf(HasSubstr("accel2"), HasSubstr("accel0"), HasSubstr("P2P")));
  EXPECT_THAT(refused(1, 2, 2, EINVAL), AllOf(HasSubstr("part 2"), HasSubstr("out of range")));
  EXPECT_THAT(refused(1, 0, 2, EBUSY), AllOf(HasSubstr("accel1"), HasSubstr("active already on accel0")));
  EXPECT_THAT(refused(1, 1, 3, EINVAL), AllOf(HasSubstr("2 parts"), HasSubstr("says 3")));
  EXPECT_THAT(refused(1, 1, 2, EINVAL, 0), HasSubstr("token is 0"));
  // A program with collectives activated as a program of its own cannot build them.
  {
    Part alone = openPart(1, 2);
    EXPECT_TRUE(failsWith(activate(*alone.node, 1, 0, 16, 0), EINVAL));
  }
  // The refusals left the group as it was: its real second part joins and runs.
  Part second = activatePart(1, 1, 2);
  submit(second, 1, 0);
  submit(first, 0, 0);
  for (Part* part : {&first, &second}) {
    auto done = wait(*part);
    ASSERT_TRUE(done) << done.message() << "\n" << diagnostic(*part->rig);
    expectResults(*part, 2, 0);
  }
  // Cards 2 and 3 make a group of their own with another token.
  Part third = activatePart(2, 0, 2, kToken + 1);
  Part fourth = activatePart(3, 1, 2, kToken + 1);
  submit(third, 0, 1);
  submit(fourth, 1, 1);
  for (Part* part : {&third, &fourth}) {
    auto done = wait(*part);
    ASSERT_TRUE(done) << done.message() << "\n" << diagnostic(*part->rig);
    expectResults(*part, 2, 1);
  }
}

// ---- A part that never comes -----------------------------------------------------------------

class PeerGroupTimeout : public PeerGroupTest {
 protected:
  void SetUp() override {
    devices_ = 2;
    timeoutMs_ = 1500;
    PeerGroupTest::SetUp();
  }
};

TEST_F(PeerGroupTimeout, TheOthersFailAfterTheSemaphoreTimeoutNamingTheMissingPart) {
  Part first = activatePart(0, 0, 2);
  Part second = activatePart(1, 1, 2);
  submit(first, 0, 0);  // part 1 is never asked
  const auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(failsWith(wait(first), EIO));
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(timeoutMs_ / 2));
  EXPECT_THAT(diagnostic(*first.rig), AllOf(HasSubstr("timed out after 1500 ms"), HasSubstr("part(s) 1")));
  // The group stays broken: the late part fails too, and so does the next inference.
  submit(second, 1, 0);
  EXPECT_TRUE(failsWith(wait(second), EIO));
  EXPECT_THAT(diagnostic(*second.rig), HasSubstr("timed out"));
}

// ---- Faults on one card ---------------------------------------------------------------------

enum class Fault { Deactivate, Reset, Hang, Remove };

std::string faultName(Fault fault) {
  switch (fault) {
    case Fault::Deactivate: return "Deactivate";
    case Fault::Reset: return "Reset";
    case Fault::Hang: return "Hang";
    case Fault::Remove: return "Remove";
  }
  return "";
}

class PeerGroupFault : public PeerGroupTest, public ::testing::WithParamInterface<Fault> {
 protected:
  void SetUp() override {
    devices_ = 2;
    PeerGroupTest::SetUp();
  }
  // Breaks card 1 the way the test names; returns the words the other part's error must hold.
  std::string inject(Part& victim) {
    switch (GetParam()) {
      case Fault::Deactivate:
        victim.rig.reset();
        EXPECT_TRUE(deactivate(*victim.node, victim.dbc));
        return "was deactivated";
      case Fault::Reset: EXPECT_TRUE(emu_->setAttribute(1, sysfs::kFaultReset, "1")); return "was reset";
      case Fault::Hang: EXPECT_TRUE(emu_->setAttribute(1, sysfs::kFaultNspHang, "1")); return "hung";
      case Fault::Remove: EXPECT_TRUE(emu_->removeDevice(1)); return "was removed";
    }
    return "";
  }
};

TEST_P(PeerGroupFault, TheOtherPartFailsNamingTheCardAndEverythingIsFreed) {
  // A program of its own on card 0 runs before, during and after.
  auto reluNode = openNode();
  const uint32_t reluDbc = activateRelu(reluNode, 7);
  auto reluImage = container::QpcImage::fromBytes(relu_, "relu");
  InferenceRig relu(reluNode, *reluImage, 0, reluDbc);
  relu.attachAll();
  auto runRelu = [&](uint32_t sequence) {
    relu.writeRequestDescriptor(sequence);
    std::vector<float> x(kReluElements, -1.0f);
    x[3] = 2.5f;
    std::memcpy(relu.buffer("x").data(), x.data(), x.size() * sizeof(float));
    ASSERT_TRUE(reluNode.execute(reluDbc, relu.executeEntries()));
    auto done = reluNode.waitBo(relu.lastHandle(), reluDbc, 30000);
    ASSERT_TRUE(done) << done.message();
    float y[kReluElements];
    std::memcpy(y, relu.buffer("y").data(), sizeof y);
    EXPECT_EQ(y[3], 2.5f);
    EXPECT_EQ(y[0], 0.0f);
  };
  runRelu(1);
  // A group that comes and goes whole first: what the cards keep for good from then on (card
  // 1's memory file, made with its first BO) is no leak of the broken group's.
  {
    Part first = activatePart(0, 0, 2, kToken + 1);
    Part second = activatePart(1, 1, 2, kToken + 1);
    submit(second, 1, 0);
    submit(first, 0, 0);
    for (Part* part : {&first, &second}) {
      auto done = wait(*part);
      ASSERT_TRUE(done) << done.message() << "\n" << diagnostic(*part->rig);
    }
  }
  const ProcessUsage before = sampleSettledUsage(emu_->pid());
  const long threadsBefore = threadCount(emu_->pid());
  {
    Part survivor = activatePart(0, 0, 2);
    Part victim = activatePart(1, 1, 2);
    // A whole inference first, so the fault meets a group that worked.
    submit(victim, 1, 0);
    submit(survivor, 0, 0);
    for (Part* part : {&survivor, &victim}) {
      auto done = wait(*part);
      ASSERT_TRUE(done) << done.message() << "\n" << diagnostic(*part->rig);
      expectResults(*part, 2, 0);
    }
    // Part 0 alone: it waits in its first collective for part 1, which never comes.
    submit(survivor, 0, 1);
    std::this_thread::sleep_for(200ms);
    runRelu(2);
    const std::string what = inject(victim);
    const auto started = std::chrono::steady_clock::now();
    EXPECT_TRUE(failsWith(wait(survivor), EIO));
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(timeoutMs_ / 2))
        << "the part waited for the rendezvous timeout instead of the fault";
    EXPECT_EQ(survivor.rig->responseHeader().status, DBC_COMPLETION_PROGRAM_FAILED);
    EXPECT_THAT(diagnostic(*survivor.rig), AllOf(HasSubstr("accel1"), HasSubstr(what), Not(HasSubstr("timed out"))));
    // Later inferences fail at once the same way.
    submit(survivor, 0, 2);
    EXPECT_TRUE(failsWith(wait(survivor), EIO));
    EXPECT_THAT(diagnostic(*survivor.rig), AllOf(HasSubstr("accel1"), HasSubstr(what)));
    runRelu(3);
    // The runtime deactivates what is left of the group; card 0 keeps only relu's activation.
    survivor.rig.reset();
    EXPECT_TRUE(deactivate(*survivor.node, survivor.dbc));
    if (GetParam() == Fault::Hang) {
      victim.rig.reset();
      EXPECT_TRUE(deactivate(*victim.node, victim.dbc));
      EXPECT_TRUE(emu_->setAttribute(1, sysfs::kFaultNspHang, "0"));
    }
    EXPECT_EQ(counter(0, sysfs::kEmuNspFree), kTestNsps - 1);
    EXPECT_EQ(counter(0, sysfs::kEmuVcFree), kTestDbcs - 1);
    if (GetParam() != Fault::Remove) {
      EXPECT_EQ(counter(1, sysfs::kEmuNspFree), kTestNsps);
      EXPECT_EQ(counter(1, sysfs::kEmuVcFree), kTestDbcs);
    }
    // The group is gone with its last part: its token names a new one.
    Part again = activatePart(0, 0, 2);
    again.rig.reset();
    EXPECT_TRUE(deactivate(*again.node, again.dbc));
  }
  runRelu(4);
  const ProcessUsage after = sampleSettledUsage(emu_->pid());
  EXPECT_LE(after.fds, before.fds) << "the emulator holds descriptors the group left";
  EXPECT_LE(threadCount(emu_->pid()), threadsBefore) << "the emulator runs threads the group left";
}

INSTANTIATE_TEST_SUITE_P(Faults, PeerGroupFault,
                         ::testing::Values(Fault::Deactivate, Fault::Reset, Fault::Hang, Fault::Remove),
                         [](const auto& info) { return faultName(info.param); });

}  // namespace
}  // namespace qaic::emu::test
