// SPDX-License-Identifier: Apache-2.0
#include "NoOpRing.hpp"

#include <array>

#include "ReluProgram.hpp"
#include "driver/ManageCalls.hpp"
#include "driver/RequestElements.hpp"

namespace qaic::emu::bench {

NoOpRing::NoOpRing() {
  try {
    emu_.emplace(testing::EmulatorOptions{{}, {}, {}, true});
  } catch (const std::exception& e) {
    error_ = e.what();
    return;
  }
  auto node = driver::DeviceNode::open(emu_->root(), 0);
  if (!node) {
    error_ = node.message();
    return;
  }
  node_.emplace(std::move(*node));
  // An activation needs a program; the no-op requests never start it.
  const auto container = testing::makeReluProgram(1, {1, 8, 2, 2}, {ir::DeviceLayout::DWHC, ir::DType::Float16});
  doorbell_ = container.doorbell;
  doneSemaphore_ = static_cast<uint8_t>(container.doneSemaphore);
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
  const driver::RequestElement element = driver::sliceRequestElement(++reqId_, 0, QAIC_DIR_TO_DEVICE,
                                                                     qaic_attach_slice_entry{}, true);
  return exchange({&element, 1}, 0, timeout);
}

bool NoOpRing::programRoundTrip(std::chrono::milliseconds timeout) {
  qaic_attach_slice_entry ring{};
  ring.db_addr = doorbell_;
  ring.db_len = 32;
  qaic_attach_slice_entry await{};
  await.sem0 = {0, doneSemaphore_, 1, QAIC_SEM_WAIT_GT_0, 0, 0};
  await.sem1 = {0, doneSemaphore_, 0, QAIC_SEM_DEC, 0, 0};
  ++reqId_;
  const std::array<driver::RequestElement, 2> elements = {
      driver::sliceRequestElement(reqId_, 0, QAIC_DIR_TO_DEVICE, ring, false),
      driver::sliceRequestElement(reqId_, 0, QAIC_DIR_FROM_DEVICE, await, true)};
  return exchange(elements, driver::DBC_COMPLETION_BAD_REQUEST, timeout);
}

bool NoOpRing::exchange(std::span<const driver::RequestElement> elements, uint16_t code,
                        std::chrono::milliseconds timeout) {
  if (auto sent = window_->submit(elements); !sent) {
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
  if (taken != 1 || responses[0].reqId != reqId_ || responses[0].completionCode != code) {
    error_ = "unexpected response to request " + std::to_string(reqId_) + ": code " +
             std::to_string(responses[0].completionCode);
    return false;
  }
  return true;
}

}  // namespace qaic::emu::bench
