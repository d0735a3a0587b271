// SPDX-License-Identifier: Apache-2.0
// The device's side of the response FIFO of a DBC window (docs/device-protocol.md section 3):
// appending one response and deciding whether the host needs an interrupt for it. The emulator's
// channel uses it, and so do the tests that play the device against DbcWindow.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "driver/DeviceProtocol.hpp"

namespace qaic::driver {

struct ResponseFifoView {
  std::byte* registerPage = nullptr;  // the window's first page
  std::byte* ring = nullptr;          // nelem ResponseElements
  uint32_t nelem = 0;

  std::atomic_ref<uint32_t> reg(std::size_t offset) const {
    return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(registerPage + offset));
  }
  uint32_t freeSlots() const {
    const uint32_t head = reg(kRegResponseHead).load(std::memory_order_acquire) % nelem;
    const uint32_t tail = reg(kRegResponseTail).load(std::memory_order_acquire) % nelem;
    return ringFree(head, tail, nelem);
  }
};

// Appends `response`; the caller has seen a free slot (only the device moves the tail). Returns
// true when the host must be interrupted.
//
// The decision is taken after the new tail is published, from the head read then: equal to the
// old tail means the host had taken every earlier response, so it may have found the FIFO empty
// and stopped draining. Reading the head before publishing would race with a drain in progress:
// the device sees an earlier response still there and stays quiet, the host takes that one,
// re-reads the old tail, finds nothing and sleeps, and only then does the new tail appear.
// Both sides' head and tail accesses are sequentially consistent (DbcWindow::takeResponses), so
// when this read still sees an earlier response the host's drain has yet to store the head that
// passes it, and its next read of the tail, after that store, finds this response.
inline bool publishResponse(const ResponseFifoView& fifo, ResponseElement response) {
  const uint32_t tail = fifo.reg(kRegResponseTail).load(std::memory_order_relaxed) % fifo.nelem;
  std::memcpy(fifo.ring + std::size_t{tail} * sizeof response, &response, sizeof response);
  fifo.reg(kRegResponseTail).store((tail + 1) % fifo.nelem, std::memory_order_seq_cst);
  return fifo.reg(kRegResponseHead).load(std::memory_order_seq_cst) % fifo.nelem == tail;
}

}  // namespace qaic::driver
