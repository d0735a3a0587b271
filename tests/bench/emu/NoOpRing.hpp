// SPDX-License-Identifier: Apache-2.0
// A qaic-emu process with one activation whose DBC ring this process drives the way libqaic
// does: DbcWindow::submit writes the element, the tail and the futex doorbell; the device's
// completion raises the activation's eventfd (CompletionEvent); DbcWindow::takeResponses drains
// the response FIFO. Each request is one element with a zero-length transfer and the completion
// bit: the channel thread moves nothing, starts no program and answers at once
// (docs/device-protocol.md section 6), so a round trip is the cost of the path alone.
// programRoundTrip adds the program: a zero-length element rings its doorbell and a second waits
// for its done semaphore and asks for the response. The IO region holds no request descriptor,
// so the run answers BAD_REQUEST at once (device-protocol.md section 4): the path of a program
// run (doorbell, run, semaphore, completion) without the computation.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "EmulatorProcess.hpp"
#include "driver/CompletionEvent.hpp"
#include "driver/DbcWindow.hpp"
#include "driver/DeviceNode.hpp"

namespace qaic::emu::bench {

class NoOpRing {
 public:
  NoOpRing();  // starts the emulator, loads and activates a program, maps the window
  // Empty when ready; else what failed.
  const std::string& error() const { return error_; }
  // One no-op request, doorbell to consumed response; false (and error()) on failure.
  bool roundTrip(std::chrono::milliseconds timeout);
  // One program-run request, doorbell to consumed response; false (and error()) on failure.
  bool programRoundTrip(std::chrono::milliseconds timeout);

 private:
  std::optional<testing::EmulatorProcess> emu_;
  std::optional<driver::DeviceNode> node_;
  std::optional<driver::CompletionEvent> interrupt_;
  std::optional<driver::DbcWindow> window_;
  // Submits `elements` (one request) and takes its one response, expecting `code`.
  bool exchange(std::span<const driver::RequestElement> elements, uint16_t code, std::chrono::milliseconds timeout);

  uint64_t doorbell_ = 0;
  uint8_t doneSemaphore_ = 0;
  uint16_t reqId_ = 0;
  std::string error_;
};

}  // namespace qaic::emu::bench
