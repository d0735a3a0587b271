#include "DbcChannel.hpp"

#include <pthread.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
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

// The doorbell handshake (DeviceProtocol.hpp, kRegDeviceSleeping): the device announces that it
// may sleep, then reads the futex word and the tail; the host bumps the futex word, then reads
// the flag. All four sequentially consistent, so a doorbell is never missed: the host either
// sees the flag and wakes, or its tail is visible to the device's check.
void announceSleeping(const Activation& act, bool sleeping) {
  std::atomic_ref<uint32_t>(*act.reg(driver::kRegDeviceSleeping)).store(sleeping ? 1 : 0, std::memory_order_seq_cst);
}
uint32_t loadRegSeqCst(const Activation& act, std::size_t off) {
  return std::atomic_ref<uint32_t>(*act.reg(off)).load(std::memory_order_seq_cst);
}

void futexWake(uint32_t* word) {
  std::atomic_ref<uint32_t>(*word).fetch_add(1, std::memory_order_acq_rel);
  syscall(SYS_futex, word, FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

// Wait words of an element that are enabled commands of the WAIT kind.
bool isWait(uint32_t word) { return driver::semEnabled(word) && driver::semCmd(word) >= QAIC_SEM_WAIT_EQUAL; }

}  // namespace

// The ring consumer of one activation. Elements are processed in ring order by one driver at a
// time: the channel thread, or the activation's NSP worker once the program it waits for has
// run. When the next element waits for the done semaphore of a program still queued or running,
// the driver *parks* the ring instead of sleeping: the program's job, on finishing, continues
// with that element on the NSP thread (output DMA, completion, the next request's inputs and
// doorbell, whose program is queued behind it on the same worker) until the ring is empty, a
// wait only the channel thread may block in, or its budget; then the thread takes over again.
// The request's result is the same as the thread processing it; one wake-up per program run
// (NSP -> channel) disappears, and back-to-back requests need none in the emulator.
class Channel {
 public:
  Channel(Activation& act, ChannelHost& host) : act_(act), host_(host) {}

  void runThread() {
    while (!act_.stopping.load()) {
      bool own = false;
      timespec poll = kFutexPoll;
      uint32_t seen = 0;
      {
        std::lock_guard lock(driveMutex_);
        if (owner_ == Owner::Parked && Clock::now() >= parkDeadline_) {
          // The program did not finish within the semaphore timeout (a hung NSP): the thread
          // takes the element back and its wait times out, as a blocked wait would have.
          owner_ = Owner::Thread;
          parkExpired_ = true;
        }
        own = owner_ == Owner::Thread;
        if (owner_ == Owner::Parked) poll = untilDeadline();
        // While an NSP drives, doorbells need no wake-up (it keeps going until the ring is
        // empty, then sets the flag itself when it hands the ring back, under this mutex).
        if (own) announceSleeping(act_, true);
        seen = loadRegSeqCst(act_, driver::kRegDoorbellFutex);
      }
      const uint32_t tail = own ? loadRegSeqCst(act_, driver::kRegRequestTail) : 0;
      // Not ours (an NSP drives or will), nothing new, or a tail outside the ring (ignored until
      // the host writes a valid one): sleep until the next doorbell.
      if (!own || tail >= act_.nelem || tail == head_) {
        syscall(SYS_futex, act_.reg(driver::kRegDoorbellFutex), FUTEX_WAIT, seen, &poll, nullptr, 0);
        continue;
      }
      announceSleeping(act_, false);
      step(false);
    }
    // Stopping: wait for an NSP that is driving to let go, then fail what is left.
    {
      std::unique_lock lock(driveMutex_);
      while (owner_ == Owner::Nsp) driveChanged_.wait_for(lock, 100ms);
      owner_ = Owner::Thread;
    }
    abortPending(head_);
  }

  // On the activation's NSP worker after a program run (or a skipped one).
  void programFinished() {
    {
      std::lock_guard lock(driveMutex_);
      --programJobs_;
      if (owner_ != Owner::Parked || act_.stopping.load()) return;
      owner_ = Owner::Nsp;
    }
    drive();
  }

  uint16_t startProgram() {
    auto self = act_.shared_from_this();
    act_.programBusy.store(true);
    ChannelHost* host = &host_;
    {
      std::lock_guard lock(driveMutex_);
      ++programJobs_;
    }
    bool queued = act_.pool->submit(act_.worker, [self, host] {
      host->waitWhileHung(*self);
      if (!self->stopping.load()) {
        std::lock_guard lock(self->runMutex);
        const uint16_t code = self->program->run(self->ioRegion);
        self->programStatus.store(code);
        self->programBusy.store(false);
        self->semaphores.increment(static_cast<uint8_t>(self->program->needs().doneSemaphore));
      }
      self->ring->programFinished();
    });
    if (!queued) {
      std::lock_guard lock(driveMutex_);
      --programJobs_;
      act_.programBusy.store(false);
      return driver::DBC_COMPLETION_ABORTED;
    }
    return 0;
  }

 private:
  enum class Owner { Thread, Parked, Nsp };
  enum class Step { Advanced, Parked, HandBack };

  // Elements an NSP processes before it hands the ring back (other activations share it).
  static constexpr int kNspDriveBudget = 64;

  timespec untilDeadline() const {
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(parkDeadline_ - Clock::now());
    const auto wait = std::clamp<std::chrono::nanoseconds>(left, 1ms, 100ms);
    return {static_cast<time_t>(wait.count() / 1'000'000'000), static_cast<long>(wait.count() % 1'000'000'000)};
  }

  // The NSP's loop: the ring is ours until we hand it back or park it again.
  void drive() {
    for (;;) {
      Step last = Step::Advanced;
      int budget = kNspDriveBudget;
      while (last == Step::Advanced && budget > 0 && !act_.stopping.load()) {
        const uint32_t tail = loadReg(act_, driver::kRegRequestTail);
        if (tail >= act_.nelem || tail == head_) break;
        last = step(true);
        --budget;
      }
      if (last == Step::Parked) return;  // the next program's job continues
      std::lock_guard lock(driveMutex_);
      // From here doorbells wake the thread again; an element that came before the flag was
      // seen is found by this check of the tail.
      announceSleeping(act_, true);
      const uint32_t tail = loadRegSeqCst(act_, driver::kRegRequestTail);
      const bool empty = tail >= act_.nelem || tail == head_;
      if (last == Step::Advanced && budget > 0 && !empty && !act_.stopping.load()) {
        announceSleeping(act_, false);
        continue;
      }
      owner_ = Owner::Thread;
      driveChanged_.notify_all();
      if (!empty) futexWake(act_.reg(driver::kRegDoorbellFutex));
      return;
    }
  }

  // Whether `e` has wait commands that would block now (none run after a failure).
  bool blockedNow(const RequestElement& e) {
    if (failCode_ != 0) return false;
    for (uint32_t word : e.semCmd)
      if (isWait(word) && !act_.semaphores.satisfied(word)) return true;
    return false;
  }

  // The element's one semaphore command is a presync wait for the program's done semaphore.
  bool waitsForProgram(const RequestElement& e) const {
    if (!act_.program) return false;
    int commands = 0;
    bool programWait = false;
    for (uint32_t word : e.semCmd) {
      if (!driver::semEnabled(word)) continue;
      ++commands;
      programWait = isWait(word) && driver::semPresync(word) &&
                    driver::semIndex(word) == act_.program->needs().doneSemaphore;
    }
    return commands == 1 && programWait;
  }

  // A wait plus other semaphore commands in one element: their order decides the wait, so only
  // the channel thread (which may block) processes it.
  static bool mixesWaits(const RequestElement& e) {
    int waits = 0, commands = 0;
    for (uint32_t word : e.semCmd) {
      if (!driver::semEnabled(word)) continue;
      ++commands;
      if (isWait(word)) ++waits;
    }
    return waits > 0 && commands > waits;
  }

  bool responseFifoFull() const {
    const uint32_t n = act_.nelem;
    return driver::ringFree(loadReg(act_, driver::kRegResponseHead) % n,
                            loadReg(act_, driver::kRegResponseTail) % n, n) == 0;
  }

  // Processes the element at head_ on the thread (may block in waits) or the NSP (never blocks).
  Step step(bool onNsp) {
    RequestElement e;
    std::memcpy(&e, act_.requestFifo() + std::size_t{head_} * sizeof e, sizeof e);
    if (!inRequest_) {
      inRequest_ = true;
      failCode_ = host_.takeInjectedFault();
      reportCode_ = 0;
    }
    auto waitBudget = host_.semaphoreTimeout();
    if (blockedNow(e)) {
      if (!parkExpired_ && waitsForProgram(e)) {
        std::lock_guard lock(driveMutex_);
        // Under the lock a finishing program either already counted down (and its INC is
        // visible) or will find the ring parked.
        if (programJobs_ > 0 && blockedNow(e)) {
          owner_ = Owner::Parked;
          parkDeadline_ = Clock::now() + host_.semaphoreTimeout();
          driveChanged_.notify_all();
          return Step::Parked;
        }
      }
      if (onNsp && blockedNow(e)) return Step::HandBack;
      if (parkExpired_) waitBudget = 0ms;  // the whole timeout already passed while parked
    }
    if (onNsp && failCode_ == 0 && mixesWaits(e)) return Step::HandBack;
    if (onNsp && (e.cmd & driver::kReqCmdCompletion) && responseFifoFull()) return Step::HandBack;
    parkExpired_ = false;
    process(e, head_, waitBudget);
    head_ = (head_ + 1) % act_.nelem;
    storeReg(act_, driver::kRegRequestHead, head_);
    return Step::Advanced;
  }

  void process(const RequestElement& e, uint32_t slot, std::chrono::milliseconds waitBudget) {
    semaphores(e, true, waitBudget);
    if (failCode_ == 0 && e.length > 0) failCode_ = transfer(e);
    semaphores(e, false, waitBudget);
    if (failCode_ == 0) failCode_ = doorbell(e);
    if (e.cmd & driver::kReqCmdCompletion) {
      complete(e.reqId, failCode_ != 0 ? failCode_ : reportCode_, slot);
      inRequest_ = false;
    }
  }

  // After a failure the rest of the request moves no data, but its INIT/INC/DEC still run so
  // the semaphores stay balanced for the next request; waits are skipped.
  void semaphores(const RequestElement& e, bool presync, std::chrono::milliseconds waitBudget) {
    for (uint32_t word : e.semCmd) {
      if (!driver::semEnabled(word) || driver::semPresync(word) != presync) continue;
      const bool wait = isWait(word);
      if (failCode_ != 0 && wait) continue;
      auto result = act_.semaphores.execute(word, waitBudget);
      if (result == Semaphores::Result::Ok) {
        if (wait && act_.program && driver::semIndex(word) == act_.program->needs().doneSemaphore)
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

  // The ring position and the request in progress: touched only by the current driver.
  uint32_t head_ = 0;
  bool inRequest_ = false;
  uint16_t failCode_ = 0;
  uint16_t reportCode_ = 0;
  bool parkExpired_ = false;  // the element at head_ was parked for the whole semaphore timeout

  std::mutex driveMutex_;               // guards the hand-over below
  std::condition_variable driveChanged_;  // owner_ left Nsp (the stopping thread waits for it)
  Owner owner_ = Owner::Thread;
  uint32_t programJobs_ = 0;            // program runs queued or running for this activation
  Clock::time_point parkDeadline_{};
};


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
  act.ring = std::make_shared<Channel>(act, host);
  act.channel = std::thread([ring = act.ring.get()] {
    ::pthread_setname_np(::pthread_self(), "emu-dbc");
    ring->runThread();
  });
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
