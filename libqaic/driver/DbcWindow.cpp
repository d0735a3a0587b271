// SPDX-License-Identifier: Apache-2.0
#include "driver/DbcWindow.hpp"

#include <atomic>
#include <cstring>

#include "driver/FutexRing.hpp"
#include "driver/WindowFutex.hpp"

namespace qaic::driver {

namespace {

bool plainFileName(const char* name, std::size_t capacity) {
  const std::size_t length = strnlen(name, capacity);
  if (length == 0 || length == capacity) return false;
  if (std::strchr(name, '/') != nullptr) return false;
  return std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0;
}

}  // namespace

Result<void> DbcWindow::validate(const qaic_emu_dbc_info& info) {
  const std::string what = "EMU_DBC_INFO dbc " + std::to_string(info.dbc_id) + ": ";
  if (!plainFileName(info.name, sizeof info.name))
    return SysError{EPROTO, what + "window name is not a terminated file name"};
  const uint32_t n = info.nelem;
  if (n < kMinQueueSize || n > kMaxQueueSize)
    return SysError{EPROTO, what + "nelem " + std::to_string(n) + " out of range"};
  const uint64_t size = info.window_size;
  if (size < dbcWindowBytes(n) || info.request_offset < kRegisterPageBytes ||
      info.request_offset > size - uint64_t{n} * kRequestElementBytes || info.response_offset < kRegisterPageBytes ||
      info.response_offset > size - uint64_t{n} * kResponseElementBytes ||
      info.request_offset % alignof(RequestElement) != 0 || info.response_offset % alignof(ResponseElement) != 0)
    return SysError{EPROTO, what + "window size or FIFO offsets inconsistent with nelem " + std::to_string(n)};
  return {};
}

Result<DbcWindow> DbcWindow::map(const DeviceNode& node, uint32_t dbcId) {
  auto info = node.emuDbcInfo(dbcId);
  if (!info) return info.sysError();
  if (auto valid = validate(*info); !valid) return valid.sysError();
  auto window = MappedFile::open(node.shmDir() / info->name, info->window_size);
  if (!window) return window.sysError();
  return DbcWindow(std::move(*window), *info);
}

Result<DbcWindow> DbcWindow::adopt(MappedFile window, const qaic_emu_dbc_info& info) {
  if (auto valid = validate(info); !valid) return valid.sysError();
  if (window.size() < info.window_size) return SysError{EPROTO, "DBC window mapping smaller than window_size"};
  return DbcWindow(std::move(window), info);
}

DbcWindow::DbcWindow(MappedFile window, const qaic_emu_dbc_info& info)
    : window_(std::move(window)),
      dbcId_(info.dbc_id),
      generation_(info.generation),
      nelem_(info.nelem),
      requestOffset_(info.request_offset),
      responseOffset_(info.response_offset) {}

uint32_t* DbcWindow::registerWord(std::size_t offset) const {
  return reinterpret_cast<uint32_t*>(window_.data() + offset);
}

std::atomic_ref<uint32_t> DbcWindow::registerRef(std::size_t offset) const {
  return std::atomic_ref<uint32_t>(*registerWord(offset));
}

uint32_t DbcWindow::loadRegister(std::size_t offset) const {
  return registerRef(offset).load(std::memory_order_acquire);
}

void DbcWindow::storeRegister(std::size_t offset, uint32_t value) {
  registerRef(offset).store(value, std::memory_order_release);
}

DeviceStatus DbcWindow::deviceStatus() const { return static_cast<DeviceStatus>(loadRegister(kRegDeviceStatus)); }

uint32_t DbcWindow::requestSlotsFree() const {
  const uint32_t head = loadRegister(kRegRequestHead);
  const uint32_t tail = loadRegister(kRegRequestTail);
  if (head >= nelem_ || tail >= nelem_) return 0;
  return ringFree(head, tail, nelem_);
}

Result<void> DbcWindow::submit(std::span<const RequestElement> elements) {
  auto wake = enqueue(elements);
  if (!wake) return wake.sysError();
  if (*wake) ringDoorbell();
  return {};
}

Result<bool> DbcWindow::enqueue(std::span<const RequestElement> elements) {
  const DeviceStatus status = deviceStatus();
  if (status == DeviceStatus::Removed || status == DeviceStatus::Stopped)
    return SysError{ENODEV, "DBC " + std::to_string(dbcId_) + " submit: the device " +
                                (status == DeviceStatus::Removed ? "was removed" : "stopped serving")};
  const uint32_t head = loadRegister(kRegRequestHead);
  const uint32_t tail = loadRegister(kRegRequestTail);
  if (head >= nelem_ || tail >= nelem_)
    return SysError{EIO, "DBC " + std::to_string(dbcId_) + " request registers out of range"};
  if (elements.size() > ringFree(head, tail, nelem_))
    return SysError{EAGAIN, "DBC " + std::to_string(dbcId_) + " request ring full"};
  auto* ring = reinterpret_cast<RequestElement*>(window_.data() + requestOffset_);
  uint32_t slot = tail;
  for (const RequestElement& element : elements) {
    std::memcpy(&ring[slot], &element, sizeof(element));
    slot = (slot + 1) % nelem_;
  }
  // Release: the device that sees the new tail also sees the elements before it.
  storeRegister(kRegRequestTail, slot);
  // Sequentially consistent with the device's store of the sleeping flag before it reads the
  // futex word and the tail: either this exchange sees the flag, or the device sees the new
  // tail. The exchange claims the wake-up: a later doorbell that finds the flag cleared leaves
  // it to the claimer, whose FUTEX_WAKE comes after its own increment; the device stores the
  // flag again before every sleep, so it sees every tail stored before that store.
  registerRef(kRegDoorbellFutex).fetch_add(1, std::memory_order_seq_cst);
  return registerRef(kRegDeviceSleeping).exchange(0, std::memory_order_seq_cst) != 0;
}

void DbcWindow::ringDoorbell() { futexWakeShared(registerWord(kRegDoorbellFutex)); }

Result<std::size_t> DbcWindow::takeResponses(std::span<ResponseElement> out) {
  // The tail is read, and the head stored below, sequentially consistent: a drain ends with a
  // call that stores nothing new and finds no response, and the device's interrupt rule
  // (publishResponse) relies on that read coming after the previous call's store.
  const uint32_t head = loadRegister(kRegResponseHead);
  const uint32_t tail = registerRef(kRegResponseTail).load(std::memory_order_seq_cst);
  if (head >= nelem_ || tail >= nelem_)
    return SysError{EIO, "DBC " + std::to_string(dbcId_) + " response registers out of range"};
  const auto* ring = reinterpret_cast<const ResponseElement*>(window_.data() + responseOffset_);
  std::size_t taken = 0;
  uint32_t slot = head;
  while (slot != tail && taken < out.size()) {
    std::memcpy(&out[taken++], &ring[slot], sizeof(ResponseElement));
    slot = (slot + 1) % nelem_;
  }
  registerRef(kRegResponseHead).store(slot, std::memory_order_seq_cst);
  return taken;
}

uint32_t DbcWindow::responseFutexValue() const {
  return registerRef(kRegResponseFutex).load(std::memory_order_seq_cst);
}

void DbcWindow::announceHostWaiting(bool waiting) {
  if (waiting)
    registerRef(kRegHostWaiting).fetch_add(1, std::memory_order_seq_cst);
  else
    registerRef(kRegHostWaiting).fetch_sub(1, std::memory_order_seq_cst);
}

bool DbcWindow::responsesPending() const {
  return registerRef(kRegResponseTail).load(std::memory_order_seq_cst) !=
         registerRef(kRegResponseHead).load(std::memory_order_seq_cst);
}

void DbcWindow::waitForResponse(uint32_t seen, std::chrono::nanoseconds timeout) const {
  futexWaitShared(registerWord(kRegResponseFutex), seen, timeout);
}

void DbcWindow::wakeResponseWaiters(bool sleepers) {
  registerRef(kRegResponseFutex).fetch_add(1, std::memory_order_seq_cst);
  if (sleepers) futexWakeShared(registerWord(kRegResponseFutex));
}

bool DbcWindow::devicePolls() const { return loadRegister(kRegDatapathPolling) != 0; }

std::chrono::microseconds DbcWindow::pollInterval() const {
  return std::chrono::microseconds(loadRegister(kRegPollIntervalUs));
}

void DbcWindow::announceHostPolling(bool polling) {
  if (polling)
    registerRef(kRegHostPolling).fetch_add(1, std::memory_order_seq_cst);
  else
    registerRef(kRegHostPolling).fetch_sub(1, std::memory_order_seq_cst);
}

bool DbcWindow::spinForResponse(uint32_t ticket, std::chrono::nanoseconds limit) const {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (unsigned turn = 0;; ++turn) {
    if (responsesPending() || responseFutexValue() != ticket) return true;
    if (spinExpired(turn, until)) return false;
    spinTurn(turn);
  }
}

}  // namespace qaic::driver
