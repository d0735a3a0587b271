// SPDX-License-Identifier: Apache-2.0
// The channel of one active DBC: processes request elements in ring order (presync semaphores, DMA
// through the IOMMU, postsync semaphores, doorbell) and writes completions, waking the host through
// the response futex or the eventfd "interrupt". Its thread sleeps on the doorbell futex, or, with
// the module parameter datapath_polling, polls the request tail (spinning, then every
// datapath_poll_interval_us) while requests keep coming, and is the activation's NSP as well: the
// element whose doorbell starts the program runs it there and then, so a request never crosses a
// second thread inside the device.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "Activation.hpp"
#include "ComputePool.hpp"
#include "ModuleParameters.hpp"

namespace qaic::emu {

// How the channel threads of one device found their work (qaic-emu/datapath/): the tests and
// benchmarks see from them whether the doorbell was polled or slept on.
struct DatapathCounters {
  std::atomic<uint64_t> doorbellSleeps{0};  // sleeps on the doorbell futex
  // Polls of the request tail: a poll round after the ring emptied, and each look after a poll
  // interval that no doorbell ended.
  std::atomic<uint64_t> doorbellPolls{0};
  std::atomic<uint64_t> responseInterrupts{0};  // eventfd writes (the MSI)
  std::atomic<uint64_t> responseWakes{0};       // response futex wakes of a sleeping host thread
};

// What a channel needs from its device; implemented by Device.
class ChannelHost {
 public:
  virtual ~ChannelHost() = default;
  // The BO of the activation's owner holding [offset, offset + length) inside one slice attached
  // to this DBC with direction `dir`; nullptr when no such slice exists (BAD_ADDRESS).
  virtual std::shared_ptr<BufferObject> translate(const Activation& act, uint32_t handle, uint64_t offset,
                                                  uint64_t length, uint32_t dir) = 0;
  // Completes an EXECUTE_BO submission whose completion element sat in `slot`; false when the
  // slot belongs to a request the ring's owner wrote itself.
  virtual bool completeKernelSlot(Activation& act, uint32_t slot, uint16_t code) = 0;
  // A completion code injected by the dma_fail fault for the next request, or 0.
  virtual uint16_t takeInjectedFault() = 0;
  // Blocks while the nsp_hang fault is set, at most `limit`, returning early when `act` stops.
  // True when the NSP may run the program (no hang, `act` still running).
  virtual bool waitWhileHung(const Activation& act, std::chrono::milliseconds limit) = 0;
  virtual std::chrono::milliseconds semaphoreTimeout() const = 0;
  // The host cores every activation's program runs share.
  virtual ComputePool& computePool() = 0;
  virtual const ModuleParameters& moduleParameters() const = 0;
  virtual DatapathCounters& datapathCounters() = 0;
};

// Starts act.channel. The activation must stay alive until stopChannel returns.
void startChannel(Activation& act, ChannelHost& host);
// Completes every pending request with `code`, sets the status register and joins the thread.
void stopChannel(Activation& act, uint16_t code, driver::DeviceStatus status);

}  // namespace qaic::emu
