// SPDX-License-Identifier: Apache-2.0
// PeerPipes (kernels/PeerPipes.hpp): messages arrive in order on their own channel; a sender
// runs ahead of its receiver by the link's depth and no further; a receive waits until the
// message comes; a timeout, a cancel or a size mismatch breaks the pipes for every part with
// the reason; the counters count each side's bytes. And peer_send / peer_receive built into two
// programs on two threads move a tensor from one to the other.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/HostProgram.hpp"
#include "kernels/PeerPipes.hpp"

namespace qaic::kernels {
namespace {

using namespace std::chrono_literals;

std::vector<std::byte> bytesOf(int value, std::size_t size = 8) {
  std::vector<std::byte> out(size);
  std::memcpy(out.data(), &value, sizeof value);
  return out;
}

int valueOf(const std::vector<std::byte>& bytes) {
  int value = 0;
  std::memcpy(&value, bytes.data(), sizeof value);
  return value;
}

// Runs `call` expecting ExecutionError whose message contains `mention`.
template <typename Call>
void expectFailure(Call call, const std::string& mention) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one mentioning: " << mention;
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
  }
}

TEST(PeerPipes, MessagesArriveInOrderPerChannel) {
  auto pipes = std::make_shared<PeerPipes>(2, 5s);
  auto sender = pipes->exchange(1), receiver = pipes->exchange(0);
  sender->send(0, 0, bytesOf(10));
  sender->send(1, 0, bytesOf(20));
  sender->send(0, 0, bytesOf(11));
  std::vector<std::byte> got(8);
  receiver->receive(1, 1, got);
  EXPECT_EQ(valueOf(got), 20);
  receiver->receive(0, 1, got);
  EXPECT_EQ(valueOf(got), 10);
  receiver->receive(0, 1, got);
  EXPECT_EQ(valueOf(got), 11);
  EXPECT_EQ(pipes->transferredBytes(1).sent, 24u);
  EXPECT_EQ(pipes->transferredBytes(0).received, 24u);
  EXPECT_EQ(pipes->transferredBytes(0).sent, 0u);
}

TEST(PeerPipes, SenderRunsAheadByTheDepthAndWaitsBeyondIt) {
  auto pipes = std::make_shared<PeerPipes>(2, 5s, 2);
  auto sender = pipes->exchange(0);
  std::atomic<int> sent{0};
  std::thread producer([&] {
    for (int i = 0; i < 5; ++i) {
      sender->send(3, 1, bytesOf(i));
      ++sent;
    }
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(sent.load(), 2);  // two buffered, the third waits for room
  std::vector<std::byte> got(8);
  for (int i = 0; i < 5; ++i) {
    pipes->receive(1, 3, 0, got);
    EXPECT_EQ(valueOf(got), i);
  }
  producer.join();
  EXPECT_EQ(sent.load(), 5);
}

TEST(PeerPipes, ReceiveWaitsForTheMessage) {
  auto pipes = std::make_shared<PeerPipes>(2, 5s);
  std::thread late([&] {
    std::this_thread::sleep_for(50ms);
    pipes->send(0, 0, 1, bytesOf(7));
  });
  std::vector<std::byte> got(8);
  pipes->receive(1, 0, 0, got);
  EXPECT_EQ(valueOf(got), 7);
  late.join();
}

TEST(PeerPipes, TimeoutCancelAndSizeMismatchBreakEveryPart) {
  {
    auto pipes = std::make_shared<PeerPipes>(2, 50ms);
    std::vector<std::byte> got(8);
    expectFailure([&] { pipes->receive(1, 4, 0, got); },
                  "part 1, channel 4: timed out after 50 ms waiting for part 0 to send on channel 4");
    expectFailure([&] { pipes->send(0, 4, 1, bytesOf(1)); }, "part 0, channel 4: timed out");
  }
  {
    auto pipes = std::make_shared<PeerPipes>(2, 5s);
    std::thread waiter([&] {
      std::vector<std::byte> got(8);
      expectFailure([&] { pipes->receive(0, 2, 1, got); }, "part 0, channel 2: accel1 reset");
    });
    std::this_thread::sleep_for(50ms);
    pipes->cancel("accel1 reset");
    waiter.join();
    EXPECT_TRUE(pipes->cancelled());
  }
  {
    auto pipes = std::make_shared<PeerPipes>(2, 5s);
    pipes->send(0, 0, 1, bytesOf(1, 8));
    std::vector<std::byte> small(4);
    expectFailure([&] { pipes->receive(1, 0, 0, small); }, "part 0 sent 8 bytes on channel 0, part 1 receives 4");
    expectFailure([&] { pipes->send(0, 0, 1, bytesOf(1)); }, "part 1 receives 4");
  }
  auto pipes = std::make_shared<PeerPipes>(2, 5s);
  expectFailure([&] { pipes->send(0, 0, 0, bytesOf(1)); }, "peer_send to part 0 is not another part");
}

// Stage 0 computes relu(x) and sends it; stage 1 receives it and adds it to itself.
TEST(PeerPipes, SendAndReceiveOpsMoveATensorBetweenPrograms) {
  const char* first = R"({"io": [{"name": "x", "tensor": "x", "direction": "in", "dtype": "TL_FLOAT", "dims": [4]}],
    "ops": [{"name": "r", "optype": "relu", "tensors_in": [{"arg_name": "src", "name": "x"}],
             "tensors_out": [{"arg_name": "dst", "name": "h"}], "params": []},
            {"name": "s", "optype": "peer_send", "tensors_in": [{"arg_name": "src", "name": "h"}], "tensors_out": [],
             "params": [{"arg_name": "channel", "value": 0}, {"arg_name": "peer", "value": 0},
                        {"arg_name": "parts", "value": 2}]}]})";
  const char* second = R"({"io": [{"name": "y", "tensor": "y", "direction": "out", "dtype": "TL_FLOAT", "dims": [4]}],
    "ops": [{"name": "v", "optype": "peer_receive", "tensors_in": [],
             "tensors_out": [{"arg_name": "dst", "name": "h"}],
             "params": [{"arg_name": "channel", "value": 0}, {"arg_name": "peer", "value": 1},
                        {"arg_name": "parts", "value": 2}, {"arg_name": "dtype", "value": "TL_FLOAT"},
                        {"arg_name": "dims", "value": [4]}]},
            {"name": "a", "optype": "elew", "tensors_in": [{"arg_name": "src1", "name": "h"},
                                                          {"arg_name": "src2", "name": "h"}],
             "tensors_out": [{"arg_name": "dst", "name": "y"}], "params": [{"arg_name": "elew_op", "value": "TL_SUM"}]}]})";
  ir::Graph g0 = ir::parseGraph(first), g1 = ir::parseGraph(second);
  ir::inferShapes(g0);
  ir::inferShapes(g1);
  auto pipes = std::make_shared<PeerPipes>(2, 5s);
  BuildOptions o0, o1;
  o0.peers = pipes->exchange(1);
  o1.peers = pipes->exchange(0);
  auto p0 = HostProgram::build(g0, nullptr, o0);
  auto p1 = HostProgram::build(g1, nullptr, o1);
  std::vector<float> x = {-1, 2, -3, 4}, y(4);
  std::thread stage0([&] {
    TensorView in{ir::DType::Float, {4}, x.data(), 16};
    p0->run(std::span(&in, 1), {});
  });
  TensorView out{ir::DType::Float, {4}, y.data(), 16};
  p1->run({}, std::span(&out, 1));
  stage0.join();
  EXPECT_EQ(y, (std::vector<float>{0, 4, 0, 8}));
  EXPECT_EQ(pipes->transferredBytes(1).sent, 16u);

  // Over a collectives-only exchange (PeerRendezvous's) the send fails, naming the channel.
  auto rendezvous = std::make_shared<PeerRendezvous>(2, 5s);
  BuildOptions collectivesOnly;
  collectivesOnly.peers = rendezvous->exchange(1);
  auto lone = HostProgram::build(g0, nullptr, collectivesOnly);
  TensorView in{ir::DType::Float, {4}, x.data(), 16};
  expectFailure([&] { lone->run(std::span(&in, 1), {}); }, "part 1, channel 0: peer_send needs point-to-point links");
}

}  // namespace
}  // namespace qaic::kernels
