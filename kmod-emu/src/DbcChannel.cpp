#include "DbcChannel.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

namespace qaic::emu {
namespace {

using namespace std::chrono_literals;
using driver::RequestElement;
using driver::ResponseElement;

// How long a sleeping channel waits before it re-checks for shutdown.
constexpr timespec kFutexPoll{0, 100'000'000};

uint32_t loadReg(const Activation& act, std::size_t off) {
  return std::atomic_ref<uint32_t>(*act.reg(off)).load(std::memory_order_acquire);
}
void storeReg(const Activation& act, std::size_t off, uint32_t v) {
  std::atomic_ref<uint32_t>(*act.reg(off)).store(v, std::memory_order_release);
}

void futexWake(uint32_t* word) {
  std::atomic_ref<uint32_t>(*word).fetch_add(1, std::memory_order_acq_rel);
  syscall(SYS_futex, word, FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

class Channel {
 public:
  Channel(Activation& act, ChannelHost& host) : act_(act), host_(host) {}

  void run() {
    uint32_t head = 0;
    while (!act_.stopping.load()) {
      const uint32_t seen = loadReg(act_, driver::kRegDoorbellFutex);
      const uint32_t tail = loadReg(act_, driver::kRegRequestTail);
      if (tail >= act_.nelem || tail == head) {
        // A tail outside the ring is ignored until the host writes a valid one.
        syscall(SYS_futex, act_.reg(driver::kRegDoorbellFutex), FUTEX_WAIT, seen, &kFutexPoll,
                nullptr, 0);
        continue;
      }
      RequestElement e;
      std::memcpy(&e, act_.requestFifo() + std::size_t{head} * sizeof e, sizeof e);
      process(e, head);
      head = (head + 1) % act_.nelem;
      storeReg(act_, driver::kRegRequestHead, head);
    }
    abortPending(head);
  }

 private:
  void process(const RequestElement& e, uint32_t slot) {
    if (!inRequest_) {
      inRequest_ = true;
      failCode_ = host_.takeInjectedFault();
      reportCode_ = 0;
    }
    semaphores(e, true);
    if (failCode_ == 0 && e.length > 0) failCode_ = transfer(e);
    semaphores(e, false);
    if (failCode_ == 0) failCode_ = doorbell(e);
    if (e.cmd & driver::kReqCmdCompletion) {
      complete(e.reqId, failCode_ != 0 ? failCode_ : reportCode_, slot);
      inRequest_ = false;
    }
  }

  // After a failure the rest of the request moves no data, but its INIT/INC/DEC still run so
  // the semaphores stay balanced for the next request; waits are skipped.
  void semaphores(const RequestElement& e, bool presync) {
    for (uint32_t word : e.semCmd) {
      if (!driver::semEnabled(word) || driver::semPresync(word) != presync) continue;
      const uint8_t cmd = driver::semCmd(word);
      const bool isWait = cmd >= QAIC_SEM_WAIT_EQUAL;
      if (failCode_ != 0 && isWait) continue;
      auto result = act_.semaphores.execute(word, host_.semaphoreTimeout());
      if (result == Semaphores::Result::Ok) {
        if (isWait && act_.program && driver::semIndex(word) == act_.program->needs().doneSemaphore)
          reportCode_ = reportCode_ ? reportCode_ : act_.programStatus.load();
        continue;
      }
      if (failCode_ != 0) continue;
      if (result == Semaphores::Result::BadCommand)
        failCode_ = driver::DBC_COMPLETION_BAD_REQUEST;
      else if (result == Semaphores::Result::Cancelled)
        failCode_ = act_.abortCode.load();
      else
        failCode_ = act_.programBusy.load() ? driver::DBC_COMPLETION_NSP_HANG
                                            : driver::DBC_COMPLETION_SEMAPHORE_TIMEOUT;
    }
  }

  uint16_t transfer(const RequestElement& e) {
    const bool toDevice = e.cmd & driver::kReqCmdToDevice;
    const bool fromDevice = e.cmd & driver::kReqCmdFromDevice;
    if (toDevice == fromDevice) return driver::DBC_COMPLETION_BAD_REQUEST;
    const uint64_t hostAddr = toDevice ? e.srcAddr : e.dstAddr;
    const uint64_t devAddr = toDevice ? e.dstAddr : e.srcAddr;
    if (!driver::iovaIsHost(hostAddr) || driver::iovaIsHost(devAddr))
      return driver::DBC_COMPLETION_BAD_ADDRESS;
    const uint64_t region = act_.ioRegion.size();
    if (devAddr > region || e.length > region - devAddr) return driver::DBC_COMPLETION_BAD_ADDRESS;
    const uint32_t off = driver::iovaOffset(hostAddr);
    auto bo = host_.translate(act_, driver::iovaHandle(hostAddr), off, e.length,
                              toDevice ? QAIC_DIR_TO_DEVICE : QAIC_DIR_FROM_DEVICE);
    if (!bo) return driver::DBC_COMPLETION_BAD_ADDRESS;
    std::byte* hostPtr = bo->memory->data() + off;
    std::byte* devPtr = act_.ioRegion.data() + devAddr;
    if (toDevice)
      std::memcpy(devPtr, hostPtr, e.length);
    else
      std::memcpy(hostPtr, devPtr, e.length);
    return 0;
  }

  uint16_t doorbell(const RequestElement& e) {
    if (e.dbLen == 0) return 0;
    if (e.dbLen != 8 && e.dbLen != 16 && e.dbLen != 32) return driver::DBC_COMPLETION_BAD_REQUEST;
    if (act_.program && e.dbAddr == act_.program->needs().doorbellAddress) return startProgram();
    const uint64_t bytes = e.dbLen / 8u;
    const uint64_t region = act_.ioRegion.size();
    if (driver::iovaIsHost(e.dbAddr) || e.dbAddr > region || bytes > region - e.dbAddr)
      return driver::DBC_COMPLETION_BAD_ADDRESS;
    std::memcpy(act_.ioRegion.data() + e.dbAddr, &e.dbData, bytes);  // little endian host
    return 0;
  }

  uint16_t startProgram() {
    auto self = act_.shared_from_this();
    act_.programBusy.store(true);
    ChannelHost* host = &host_;
    bool queued = act_.pool->submit(act_.worker, [self, host] {
      host->waitWhileHung(*self);
      if (self->stopping.load()) return;
      std::lock_guard lock(self->runMutex);
      const uint16_t code = self->program->run(self->ioRegion);
      self->programStatus.store(code);
      self->programBusy.store(false);
      self->semaphores.increment(static_cast<uint8_t>(self->program->needs().doneSemaphore));
    });
    if (!queued) {
      act_.programBusy.store(false);
      return driver::DBC_COMPLETION_ABORTED;
    }
    return 0;
  }

  void complete(uint16_t reqId, uint16_t code, uint32_t slot) {
    if (!host_.completeKernelSlot(act_, slot, code)) pushResponse(reqId, code, true);
  }

  void abortPending(uint32_t head) {
    const uint16_t code = act_.abortCode.load();
    const uint32_t tail = loadReg(act_, driver::kRegRequestTail);
    if (tail >= act_.nelem) return;
    for (; head != tail; head = (head + 1) % act_.nelem) {
      RequestElement e;
      std::memcpy(&e, act_.requestFifo() + std::size_t{head} * sizeof e, sizeof e);
      if ((e.cmd & driver::kReqCmdCompletion) && !host_.completeKernelSlot(act_, head, code))
        pushResponse(e.reqId, code, false);
    }
    storeReg(act_, driver::kRegRequestHead, head);
  }

  // The host drains the response FIFO. While running, a full FIFO holds the channel until the
  // host makes room or the activation stops; when stopping the response is dropped instead
  // (the host may never drain again).
  void pushResponse(uint16_t reqId, uint16_t code, bool waitForRoom) {
    const uint32_t n = act_.nelem;
    const uint32_t tail = loadReg(act_, driver::kRegResponseTail) % n;
    uint32_t head = loadReg(act_, driver::kRegResponseHead) % n;
    while (driver::ringFree(head, tail, n) == 0) {
      if (!waitForRoom || act_.stopping.load()) return;
      std::this_thread::sleep_for(1ms);
      head = loadReg(act_, driver::kRegResponseHead) % n;
    }
    const bool wasEmpty = head == tail;
    ResponseElement r{reqId, code};
    std::memcpy(act_.responseFifo() + std::size_t{tail} * sizeof r, &r, sizeof r);
    storeReg(act_, driver::kRegResponseTail, (tail + 1) % n);
    if (wasEmpty && act_.eventfd >= 0) {
      const uint64_t one = 1;
      // A saturated eventfd counter only loses a redundant wake-up.
      [[maybe_unused]] ssize_t w = ::write(act_.eventfd, &one, sizeof one);
    }
  }

  Activation& act_;
  ChannelHost& host_;
  bool inRequest_ = false;
  uint16_t failCode_ = 0;
  uint16_t reportCode_ = 0;
};

}  // namespace

Activation::~Activation() {
  if (eventfd >= 0) close(eventfd);
  if (program && pool) {
    // Destroy the program on the worker that built it (see NspPool). If the pool no longer
    // takes jobs we are on that worker already (it drains its queue while stopping).
    std::shared_ptr<DeviceProgram> last(std::move(program));
    pool->submit(worker, [last] {});
  }
}

void startChannel(Activation& act, ChannelHost& host) {
  storeReg(act, driver::kRegDeviceStatus, static_cast<uint32_t>(driver::DeviceStatus::Ok));
  act.channel = std::thread([&act, &host] { Channel(act, host).run(); });
}

void stopChannel(Activation& act, uint16_t code, driver::DeviceStatus status) {
  act.abortCode.store(code);
  act.stopping.store(true);
  storeReg(act, driver::kRegDeviceStatus, static_cast<uint32_t>(status));
  act.semaphores.cancel();
  futexWake(act.reg(driver::kRegDoorbellFutex));
  if (act.channel.joinable()) act.channel.join();
}

}  // namespace qaic::emu
