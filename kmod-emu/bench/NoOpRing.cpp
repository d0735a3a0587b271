#include "NoOpRing.hpp"

#include <array>

#include "TestContainer.hpp"
#include "driver/ManageCalls.hpp"
#include "driver/RequestElements.hpp"

namespace qaic::emu::bench {

NoOpRing::NoOpRing() {
  if (!emu_.ready()) {
    error_ = "qaic-emu did not start";
    return;
  }
  auto node = driver::DeviceNode::open(driver::DeviceRoot(root_.path()), 0);
  if (!node) {
    error_ = node.message();
    return;
  }
  node_.emplace(std::move(*node));
  // An activation needs a program; the no-op requests never start it.
  const auto container = test::makeReluContainer(1);
  constexpr uint32_t kLoadId = 1;
  if (auto loaded = driver::loadProgram(*node_, container.bytes, kLoadId); !loaded) {
    error_ = loaded.message();
    return;
  }
  auto interrupt = driver::CompletionEvent::create();
  if (!interrupt) {
    error_ = interrupt.message();
    return;
  }
  interrupt_.emplace(std::move(*interrupt));
  auto dbc = driver::activate(*node_, kLoadId, 0, 64, interrupt_->fd());
  if (!dbc) {
    error_ = dbc.message();
    return;
  }
  auto window = driver::DbcWindow::map(*node_, *dbc);
  if (!window) {
    error_ = window.message();
    return;
  }
  window_.emplace(std::move(*window));
}

bool NoOpRing::roundTrip(std::chrono::milliseconds timeout) {
  // A zero-length slice: its element moves nothing and, being the last, asks for a response.
  const driver::RequestElement element =
      driver::sliceRequestElement(++reqId_, 0, QAIC_DIR_TO_DEVICE, qaic_attach_slice_entry{}, true);
  if (auto sent = window_->submit({&element, 1}); !sent) {
    error_ = sent.message();
    return false;
  }
  std::array<driver::ResponseElement, 4> responses{};
  std::size_t taken = 0;
  while (taken == 0) {  // a wake-up may be left over from a response taken earlier
    auto signalled = interrupt_->wait(timeout);
    if (!signalled || !*signalled) {
      error_ = signalled ? "no completion in time" : signalled.message();
      return false;
    }
    auto got = window_->takeResponses(responses);
    if (!got) {
      error_ = got.message();
      return false;
    }
    taken = *got;
  }
  if (taken != 1 || responses[0].reqId != reqId_ || responses[0].completionCode != 0) {
    error_ = "unexpected response to no-op request " + std::to_string(reqId_);
    return false;
  }
  return true;
}

}  // namespace qaic::emu::bench
