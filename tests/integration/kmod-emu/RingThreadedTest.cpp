// SPDX-License-Identifier: Apache-2.0
// The data path as a runtime drives it: one thread submits into the mapped ring while a
// completion thread waits on the eventfd and drains responses, with two sets of buffers in
// flight. The completion thread is owned by the test and stopped through a flag + eventfd write.
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "DeviceClient.hpp"
#include "EmuTest.hpp"
#include "InferenceRig.hpp"
#include "ReluProgram.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;
using namespace std::chrono_literals;

class Completer {
 public:
  Completer(DbcWindow& window, const CompletionEvent& interrupt)
      : window_(window), interrupt_(interrupt), thread_([this] { run(); }) {}
  ~Completer() {
    stop_ = true;
    const uint64_t one = 1;
    (void)::write(interrupt_.fd(), &one, sizeof one);
    thread_.join();
  }
  // The next response, or nullopt after `timeout`.
  std::optional<ResponseElement> next(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [&] { return !responses_.empty() || failed_; })) return std::nullopt;
    if (responses_.empty()) return std::nullopt;
    auto r = responses_.front();
    responses_.pop_front();
    return r;
  }

 private:
  void run() {
    while (!stop_) {
      auto fired = interrupt_.wait(200ms);
      if (!fired) break;
      ResponseElement batch[8];
      auto n = window_.takeResponses(batch);
      std::lock_guard lock(mutex_);
      if (!n) {
        failed_ = true;
        ready_.notify_all();
        return;
      }
      responses_.insert(responses_.end(), batch, batch + *n);
      if (*n > 0) ready_.notify_all();
    }
  }

  DbcWindow& window_;
  const CompletionEvent& interrupt_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<ResponseElement> responses_;
  bool failed_ = false;
  std::thread thread_;
};

TEST_F(EmuTest, SubmitterAndCompletionThreadShareTheRing) {
  auto ring = activateReluOnRing();
  auto image = container::QpcImage::fromBytes(relu_, "relu");
  InferenceRig rigs[2] = {InferenceRig(ring.node, *image, 0, ring.dbc), InferenceRig(ring.node, *image, 0, ring.dbc)};
  for (auto& rig : rigs) rig.attachAll();

  constexpr int kRequests = 8;
  std::vector<std::vector<float>> inputs(kRequests, std::vector<float>(kReluElements));
  Completer completer(ring.window, ring.interrupt);
  auto check = [&](int k) {
    auto r = completer.next(20s);
    ASSERT_TRUE(r.has_value()) << "no response for request " << k;
    EXPECT_EQ(r->reqId, k + 1);
    EXPECT_EQ(r->completionCode, DBC_COMPLETION_SUCCESS) << completionCodeName(r->completionCode);
    const auto y = rigs[k % 2].buffer("y");
    for (std::size_t i = 0; i < kReluElements; ++i) {
      float got;
      std::memcpy(&got, y.data() + i * sizeof got, sizeof got);
      EXPECT_EQ(got, std::max(inputs[k][i], 0.0f)) << "request " << k << " element " << i;
    }
  };
  for (int k = 0; k < kRequests; ++k) {
    if (k >= 2) check(k - 2);
    for (std::size_t i = 0; i < kReluElements; ++i)
      inputs[k][i] = static_cast<float>((static_cast<int>(i) * 7 + k * 3) % 11) - 5.0f;
    InferenceRig& rig = rigs[k % 2];
    rig.writeRequestDescriptor(static_cast<uint32_t>(k + 1));
    std::memcpy(rig.buffer("x").data(), inputs[k].data(), kReluElements * sizeof(float));
    auto submitted = ring.window.submit(rig.ringElements(static_cast<uint16_t>(k + 1)));
    ASSERT_TRUE(submitted) << "request " << k << ": " << submitted.message();
  }
  check(kRequests - 2);
  check(kRequests - 1);
}

}  // namespace
}  // namespace qaic::emu::test
