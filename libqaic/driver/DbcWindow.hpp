// SPDX-License-Identifier: Apache-2.0
// The data path of one activated DBC, bypassing FUSE (docs/device-protocol.md section 3): the
// window file named by QAIC_EMU_DBC_INFO holds the register page, the request FIFO and the
// response FIFO. submit() writes request elements, advances the request tail (the doorbell) and
// wakes the device through the shared futex word; takeResponses() drains response elements.
//
// Threading: one thread may submit while another takes responses (they own different
// registers); two submitters or two takers need the caller's lock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/MappedFile.hpp"
#include "base/Result.hpp"
#include "driver/DeviceNode.hpp"
#include "driver/DeviceProtocol.hpp"

namespace qaic::driver {

class DbcWindow {
 public:
  // Fails with the ioctl's errno (EPERM: not the activation's owner), or EPROTO when the
  // device's answer is inconsistent (name not terminated or not a plain file name, sizes or
  // offsets outside the window).
  static Result<DbcWindow> map(const DeviceNode& node, uint32_t dbcId);
  // Uses an already mapped window described by `info` (after the same checks as map()).
  static Result<DbcWindow> adopt(MappedFile window, const qaic_emu_dbc_info& info);
  // The consistency checks on an EMU_DBC_INFO answer.
  static Result<void> validate(const qaic_emu_dbc_info& info);

  uint32_t dbcId() const { return dbcId_; }
  uint32_t generation() const { return generation_; }
  uint32_t queueSize() const { return nelem_; }

  // Free request slots now (at most queueSize() - 1).
  uint32_t requestSlotsFree() const;
  // All of `elements` or nothing: EAGAIN when the ring lacks room, EIO when the device
  // registers are out of range (a device fault, not a client bug), ENODEV when the device
  // reports itself removed or stopped.
  Result<void> submit(std::span<const RequestElement> elements);
  // submit() in two steps, so that the system call of the wake-up can run outside the caller's
  // lock: enqueue() writes the elements and advances the tail (the same errors), and returns
  // true when this call claimed the device's wake-up (the device announced it may sleep, and
  // this call cleared that announcement); the caller then calls ringDoorbell(). Of several
  // doorbells rung while the device sleeps only the first makes the system call.
  Result<bool> enqueue(std::span<const RequestElement> elements);
  void ringDoorbell();
  // Copies up to out.size() responses and frees their slots; returns how many. The device
  // interrupts only when the FIFO it appends to was empty, so a drain must go on until a call
  // returns 0: a response appended while a batch is taken raises no interrupt of its own.
  Result<std::size_t> takeResponses(std::span<ResponseElement> out);
  DeviceStatus deviceStatus() const;

  // The response futex (docs/device-protocol.md section 3): a host thread that announces itself
  // with announceHostWaiting(true) is woken by the device through the response futex word instead
  // of the eventfd, and then drains the FIFO itself. Every access is sequentially consistent,
  // mirroring the device's store of the tail, increment of the word and load of the count.
  uint32_t responseFutexValue() const;
  void announceHostWaiting(bool waiting);
  bool responsesPending() const;
  // Sleeps while the response futex word still holds `seen`, at most `timeout` (FutexRing.hpp:
  // through io_uring where the kernel has futex operations).
  void waitForResponse(uint32_t seen, std::chrono::nanoseconds timeout) const;
  // Changes the word and, with `sleepers`, wakes every thread in waitForResponse (a host thread's
  // own wake-up). A thread that has not gone to sleep yet, or spins, finds the word changed.
  void wakeResponseWaiters(bool sleepers = true);

  // The polling data path (module parameter datapath_polling; docs/device-protocol.md section
  // 3): whether the device polls the ring, and its poll interval, which bounds a host spin.
  bool devicePolls() const;
  std::chrono::microseconds pollInterval() const;
  // While announced, the device signals nothing for a response (unless a thread also waits on
  // the response futex): the spinning thread finds it, and must drain after it withdraws.
  void announceHostPolling(bool polling);
  // Spins until a response is pending or the response futex word leaves `ticket` (a wake-up),
  // at most `limit`; true when either happened. The caller announced itself polling.
  bool spinForResponse(uint32_t ticket, std::chrono::nanoseconds limit) const;

 private:
  DbcWindow(MappedFile window, const qaic_emu_dbc_info& info);
  uint32_t loadRegister(std::size_t offset) const;
  // The 32-bit register at `offset` of the window: its address (for the futex calls) and an
  // atomic view of it.
  uint32_t* registerWord(std::size_t offset) const;
  std::atomic_ref<uint32_t> registerRef(std::size_t offset) const;
  void storeRegister(std::size_t offset, uint32_t value);

  MappedFile window_;
  uint32_t dbcId_ = 0;
  uint32_t generation_ = 0;
  uint32_t nelem_ = 0;
  std::size_t requestOffset_ = 0;
  std::size_t responseOffset_ = 0;
};

}  // namespace qaic::driver
