// SPDX-License-Identifier: Apache-2.0
#include "DbcChannel.hpp"

#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "GuardedCopy.hpp"
#include "Log.hpp"
#include "driver/ResponsePublisher.hpp"
#include "driver/WindowFutex.hpp"

namespace qaic::emu {
namespace {

using namespace std::chrono_literals;
using driver::RequestElement;
using driver::ResponseElement;

// How long a sleeping channel waits before it re-checks for shutdown.
constexpr std::chrono::milliseconds kFutexPoll{100};
// Polling: how long the channel spins on the tail after its ring empties, before it sleeps
// between looks (measured: tied to a short poll interval the spin ran out between the requests
// of one synchronous client on a loaded machine, and each request then waited for a look), and
// how long it goes on polling without a request before it sleeps on the doorbell futex instead.
constexpr std::chrono::microseconds kSpin{1000};
constexpr std::chrono::milliseconds kMinLinger{100};

uint32_t loadReg(const Activation& act, std::size_t off) {
  return std::atomic_ref<uint32_t>(*act.reg(off)).load(std::memory_order_acquire);
}
void storeReg(const Activation& act, std::size_t off, uint32_t v) {
  std::atomic_ref<uint32_t>(*act.reg(off)).store(v, std::memory_order_release);
}
uint32_t loadRegSeqCst(const Activation& act, std::size_t off) {
  return std::atomic_ref<uint32_t>(*act.reg(off)).load(std::memory_order_seq_cst);
}

// The doorbell handshake (DeviceProtocol.hpp, kRegDeviceSleeping): the device announces that it
// may sleep, then reads the futex word and the tail; the host bumps the futex word, then reads
// the flag. All four sequentially consistent, so a doorbell is never missed: the host either
// sees the flag and wakes, or its tail is visible to the device's check.
void announceSleeping(const Activation& act, bool sleeping) {
  std::atomic_ref<uint32_t>(*act.reg(driver::kRegDeviceSleeping)).store(sleeping ? 1 : 0, std::memory_order_seq_cst);
}

// Wait words of an element that are enabled commands of the WAIT kind.
bool isWait(uint32_t word) { return driver::semEnabled(word) && driver::semCmd(word) >= QAIC_SEM_WAIT_EQUAL; }

}  // namespace

namespace {

// A transfer between a client's memory and the IO region that the program may do itself; the
// BO is held until the request ends, like the DMA it replaces.
struct Held {
  DirectTransfer transfer;
  std::shared_ptr<BufferObject> bo;
};
// A from-device transfer the last run wrote (`done` bytes from its start), in place or not.
struct Written {
  uint64_t deviceOffset;
  const std::byte* host;
  uint64_t done;
  bool inPlace;
};

}  // namespace

// The ring consumer of one activation, on its own thread: elements in ring order, each to the
// end (a semaphore wait blocks the thread up to the device's semaphore timeout). The thread is
// also the activation's NSP: the element that rings the program's doorbell is finished (head
// advanced, its completion written), then the program runs there and then, so by the time a
// later element waits for the program's done semaphore the run is over or was dropped as hung.
class Channel {
 public:
  Channel(Activation& act, ChannelHost& host) : act_(act), host_(host) {}

  void runThread() {
    const bool polling = host_.moduleParameters().datapathPolling();
    storeReg(act_, driver::kRegDatapathPolling, polling ? 1 : 0);
    // Polls after work; after a quiet spell it sleeps until the next doorbell.
    bool poll = polling;
    while (!act_.stopping.load()) {
      if (poll) {
        // Not sleeping: the host's doorbell skips its FUTEX_WAKE while the channel polls.
        announceSleeping(act_, false);
        if (pollForRequests()) {
          processUpTo(loadRegSeqCst(act_, driver::kRegRequestTail));
          continue;
        }
        if (act_.stopping.load()) break;
        poll = false;
      }
      announceSleeping(act_, true);
      const uint32_t seen = loadRegSeqCst(act_, driver::kRegDoorbellFutex);
      const uint32_t tail = loadRegSeqCst(act_, driver::kRegRequestTail);
      // Nothing new, or a tail outside the ring (ignored until the host writes a valid one):
      // sleep until the next doorbell.
      if (tail >= act_.nelem || tail == head_) {
        host_.datapathCounters().doorbellSleeps.fetch_add(1, std::memory_order_relaxed);
        driver::futexWaitWhile(act_.reg(driver::kRegDoorbellFutex), seen, kFutexPoll);
        continue;
      }
      announceSleeping(act_, false);
      processUpTo(tail);
      poll = polling;
    }
    abortPending(head_);
  }

 private:
  void processUpTo(uint32_t tail) {
    tail_ = tail;  // how far a request's from-device transfers may be looked up ahead
    while (head_ != tail && !act_.stopping.load()) step();
  }

  bool requestsPending() const {
    const uint32_t tail = loadRegSeqCst(act_, driver::kRegRequestTail);
    return tail < act_.nelem && tail != head_;
  }

  // The polling data path, as mainline's datapath_polling does it while requests are
  // outstanding: look at the tail, spinning for kSpin (unless spinning keeps failing,
  // AdaptiveSpin), then once every datapath_poll_interval_us. Between those looks the channel
  // sleeps announced, so a doorbell rung meanwhile wakes it at once instead of waiting for the next
  // look. True when a request came. After kMinLinger (or 100 intervals, if longer) without one it
  // gives up, and the caller sleeps on the doorbell futex as without polling, so an idle emulator
  // costs no CPU in this mode either.
  bool pollForRequests() {
    using Clock = std::chrono::steady_clock;
    const auto interval = host_.moduleParameters().datapathPollInterval();  // 0600: may change
    storeReg(act_, driver::kRegPollIntervalUs, static_cast<uint32_t>(interval.count()));
    const auto start = Clock::now();
    const auto spinFor = spin_.spinFor(kSpin);
    const bool spin = spinFor > std::chrono::nanoseconds::zero();
    const auto spinUntil = start + spinFor;
    const auto lingerUntil = start + std::max<std::chrono::microseconds>(kMinLinger, interval * 100);
    auto& polls = host_.datapathCounters().doorbellPolls;
    polls.fetch_add(1, std::memory_order_relaxed);  // a poll round
    for (unsigned turn = 0;; ++turn) {
      if (act_.stopping.load()) return false;
      const auto now = Clock::now();
      if (requestsPending()) {
        if (now < spinUntil) spin_.result(true);
        announceSleeping(act_, false);
        return true;
      }
      if (now >= lingerUntil) {
        announceSleeping(act_, false);
        return false;
      }
      if (now < spinUntil) {
        driver::spinTurn(turn);
        continue;
      }
      if (spin) spin_.result(false);
      if (interval.count() == 0) {
        std::this_thread::yield();
        continue;
      }
      announceSleeping(act_, true);
      const uint32_t seen = loadRegSeqCst(act_, driver::kRegDoorbellFutex);
      if (!requestsPending()) {
        driver::futexWaitWhile(act_.reg(driver::kRegDoorbellFutex), seen, interval);
        // A look of its own, unless a doorbell ended the sleep.
        if (loadRegSeqCst(act_, driver::kRegDoorbellFutex) == seen) polls.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }

  void step() {
    RequestElement e;
    std::memcpy(&e, act_.requestFifo() + std::size_t{head_} * sizeof e, sizeof e);
    if (!inRequest_) {
      inRequest_ = true;
      failCode_ = host_.takeInjectedFault();
      reportCode_ = 0;
      bytesToDevice_ = bytesFromDevice_ = bytesInPlace_ = 0;
    }
    process(e, head_);
    head_ = (head_ + 1) % act_.nelem;
    storeReg(act_, driver::kRegRequestHead, head_);
    if (runRequested_) {
      runRequested_ = false;
      runProgram();
    }
  }

  void process(const RequestElement& e, uint32_t slot) {
    semaphores(e, true);
    if (failCode_ == 0 && e.length > 0) failCode_ = transfer(e);
    semaphores(e, false);
    if (failCode_ == 0) failCode_ = doorbell(e);
    if (e.cmd & driver::kReqCmdCompletion) {
      // Transfers no program took land in device memory before the request ends.
      const uint16_t landed = landPending();
      if (failCode_ == 0) failCode_ = landed;
      written_.clear();
      const uint16_t code = failCode_ != 0 ? failCode_ : reportCode_;
      if (traceRequests())
        logRequest("dbc " + std::to_string(act_.dbcId) + ": request " + std::to_string(e.reqId) + " ended, code " +
                   std::to_string(code) + ", " + std::to_string(bytesToDevice_) + " bytes to the device, " +
                   std::to_string(bytesFromDevice_) + " from it, " + std::to_string(bytesInPlace_) +
                   " of them in place");
      complete(e.reqId, code, slot);
      inRequest_ = false;
    }
  }

  // After a failure the rest of the request moves no data, but its INIT/INC/DEC still run so
  // the semaphores stay balanced for the next request; waits are skipped.
  void semaphores(const RequestElement& e, bool presync) {
    for (uint32_t word : e.semCmd) {
      if (!driver::semEnabled(word) || driver::semPresync(word) != presync) continue;
      const bool wait = isWait(word);
      if (failCode_ != 0 && wait) continue;
      const bool waitsForRun = wait && act_.program && driver::semIndex(word) == act_.program->needs().doneSemaphore;
      if (waitsForRun && runDropped_ && !act_.semaphores.satisfied(word)) {
        runDropped_ = false;  // nothing will INC it: fail now rather than after another timeout
        failCode_ = driver::DBC_COMPLETION_NSP_HANG;
        continue;
      }
      auto result = act_.semaphores.execute(word, host_.semaphoreTimeout());
      if (result == Semaphores::Result::Ok) {
        if (waitsForRun) reportCode_ = reportCode_ ? reportCode_ : programStatus_;
        continue;
      }
      if (failCode_ != 0) continue;
      if (result == Semaphores::Result::BadCommand)
        failCode_ = driver::DBC_COMPLETION_BAD_REQUEST;
      else if (result == Semaphores::Result::Cancelled)
        failCode_ = act_.abortCode.load();
      else
        failCode_ = driver::DBC_COMPLETION_SEMAPHORE_TIMEOUT;
    }
  }

  uint16_t transfer(const RequestElement& e) {
    const bool toDevice = e.cmd & driver::kReqCmdToDevice;
    const bool fromDevice = e.cmd & driver::kReqCmdFromDevice;
    if (toDevice == fromDevice) return driver::DBC_COMPLETION_BAD_REQUEST;
    const uint64_t hostAddr = toDevice ? e.srcAddr : e.dstAddr;
    const uint64_t devAddr = toDevice ? e.dstAddr : e.srcAddr;
    if (!driver::iovaIsHost(hostAddr) || driver::iovaIsHost(devAddr)) return driver::DBC_COMPLETION_BAD_ADDRESS;
    const uint64_t region = act_.ioRegion.size();
    if (devAddr > region || e.length > region - devAddr) return driver::DBC_COMPLETION_BAD_ADDRESS;
    const uint32_t off = driver::iovaOffset(hostAddr);
    auto bo = host_.translate(act_, driver::iovaHandle(hostAddr), off, e.length,
                              toDevice ? QAIC_DIR_TO_DEVICE : QAIC_DIR_FROM_DEVICE);
    if (!bo) return driver::DBC_COMPLETION_BAD_ADDRESS;
    if (off > bo->memory->size() || e.length > bo->memory->size() - off)
      return driver::DBC_COMPLETION_BAD_ADDRESS;  // a slice beyond an imported file's pages
    if (bo->memory->damaged()) return driver::DBC_COMPLETION_DMA_FAILED;
    std::byte* hostPtr = bo->memory->data() + off;
    std::byte* devPtr = act_.ioRegion.data() + devAddr;
    (toDevice ? bytesToDevice_ : bytesFromDevice_) += e.length;
    if (toDevice) {
      // Held back for the program, which may read it in place; a later transfer to the same
      // device memory must not be overtaken by it.
      if (const uint16_t landed = landPending(devAddr, e.length)) return landed;
      if (act_.program) {
        pending_.push_back({DirectTransfer{devAddr, {hostPtr, e.length}, true}, std::move(bo)});
        return 0;
      }
    } else {
      if (const uint16_t landed = landPending()) return landed;  // what it reads must be there
      const uint64_t skip = writtenByProgram(devAddr, hostPtr, e.length);
      hostPtr += skip;
      devPtr += skip;
      const uint64_t rest = e.length - skip;
      // The host side is a file its client may have truncated: that is a failed DMA, not a crash.
      return rest == 0 || guardedCopy(hostPtr, devPtr, rest) ? 0 : driver::DBC_COMPLETION_DMA_FAILED;
    }
    return guardedCopy(devPtr, hostPtr, e.length) ? 0 : driver::DBC_COMPLETION_DMA_FAILED;
  }

  // Copies the held-back to-device transfers (all, or those overlapping [offset, offset +
  // length)) into device memory; DMA_FAILED when a client's memory faulted.
  uint16_t landPending(uint64_t offset = 0, uint64_t length = UINT64_MAX) {
    uint16_t code = 0;
    for (auto it = pending_.begin(); it != pending_.end();) {
      const DirectTransfer& t = it->transfer;
      if (t.deviceOffset >= offset + std::min(length, UINT64_MAX - offset) ||
          offset >= t.deviceOffset + t.host.size()) {
        ++it;
        continue;
      }
      if (!guardedCopy(act_.ioRegion.data() + t.deviceOffset, t.host.data(), t.host.size()))
        code = driver::DBC_COMPLETION_DMA_FAILED;
      it = pending_.erase(it);
    }
    return code;
  }

  // Bytes of a from-device transfer the program already wrote into the client's memory itself.
  uint64_t writtenByProgram(uint64_t deviceOffset, const std::byte* host, uint64_t length) {
    for (auto it = written_.begin(); it != written_.end(); ++it) {
      if (it->deviceOffset != deviceOffset || it->host != host) continue;
      const uint64_t done = std::min<uint64_t>(it->done, length);
      if (it->inPlace) bytesInPlace_ += done;
      written_.erase(it);
      return done;
    }
    return 0;
  }

  // The from-device transfers of the request after the doorbell that starts the run, up to
  // the request's end or another doorbell: the program may write its outputs there itself.
  void lookAheadForOutputs(std::vector<Held>& outputs) {
    for (uint32_t slot = head_; slot != tail_; slot = (slot + 1) % act_.nelem) {
      RequestElement e;
      std::memcpy(&e, act_.requestFifo() + std::size_t{slot} * sizeof e, sizeof e);
      if (e.cmd & driver::kReqCmdToDevice) break;
      if ((e.cmd & driver::kReqCmdFromDevice) && e.length > 0 && driver::iovaIsHost(e.dstAddr) &&
          !driver::iovaIsHost(e.srcAddr) && e.srcAddr <= act_.ioRegion.size() &&
          e.length <= act_.ioRegion.size() - e.srcAddr) {
        const uint32_t off = driver::iovaOffset(e.dstAddr);
        auto bo = host_.translate(act_, driver::iovaHandle(e.dstAddr), off, e.length, QAIC_DIR_FROM_DEVICE);
        if (bo && !bo->memory->damaged() && off <= bo->memory->size() && e.length <= bo->memory->size() - off)
          outputs.push_back({DirectTransfer{e.srcAddr, {bo->memory->data() + off, e.length}, false}, std::move(bo)});
      }
      if (e.dbLen != 0 || (e.cmd & driver::kReqCmdCompletion)) break;
    }
  }

  uint16_t doorbell(const RequestElement& e) {
    if (e.dbLen == 0) return 0;
    if (e.dbLen != 8 && e.dbLen != 16 && e.dbLen != 32) return driver::DBC_COMPLETION_BAD_REQUEST;
    if (act_.program && e.dbAddr == act_.program->needs().doorbellAddress) {
      runRequested_ = true;
      return 0;
    }
    const uint64_t bytes = e.dbLen / 8u;
    const uint64_t region = act_.ioRegion.size();
    if (driver::iovaIsHost(e.dbAddr) || e.dbAddr > region || bytes > region - e.dbAddr)
      return driver::DBC_COMPLETION_BAD_ADDRESS;
    if (const uint16_t landed = landPending(e.dbAddr, bytes)) return landed;  // keep the write order
    std::memcpy(act_.ioRegion.data() + e.dbAddr, &e.dbData, bytes);           // little endian host
    return 0;
  }

  // A hung NSP holds the ring as a run that never ends would, up to the semaphore timeout; then
  // the run is dropped: the program never runs (nothing runs late behind later requests), and
  // the next wait for its done semaphore fails with NSP_HANG at once (the timeout is paid once).
  void runProgram() {
    if (!host_.waitWhileHung(act_, host_.semaphoreTimeout())) {
      runDropped_ = !act_.stopping.load();
      // The other parts of its multi-device program would wait for this one in vain.
      if (runDropped_ && act_.peer) act_.peer->breakGroup("hung (NSP hang)");
      return;
    }
    runDropped_ = false;
    // The program computes on as many of the host's cores as it was built for, shared with the
    // other activations' runs; a stopping activation stops waiting for them.
    ComputePool::Lease cores = host_.computePool().acquire(act_.program->needs().computeThreads, act_.stopping);
    if (!cores) return;  // stopping: the wait for the done semaphore is cancelled too
    // The request's client memory goes to the program, which reads its inputs and writes its
    // outputs there in place where it can (docs/emulator.md, zero copy).
    std::vector<Held> held = std::move(pending_);
    pending_.clear();
    lookAheadForOutputs(held);
    std::vector<DirectTransfer> direct;
    for (const Held& h : held) direct.push_back(h.transfer);
    act_.runCores = &cores;  // a multi-device program's collectives lend them out while they wait
    programStatus_ = act_.program->run(act_.ioRegion, direct);
    act_.runCores = nullptr;
    for (std::size_t i = 0; i < direct.size(); ++i) {
      const DirectTransfer& d = direct[i];
      if (d.faulted) held[i].bo->memory->damage();
      if (d.toDevice && d.inPlace) bytesInPlace_ += d.host.size();
      if (!d.toDevice && d.done > 0) written_.push_back({d.deviceOffset, d.host.data(), d.done, d.inPlace});
    }
    act_.semaphores.increment(static_cast<uint8_t>(act_.program->needs().doneSemaphore));
  }

  void complete(uint16_t reqId, uint16_t code, uint32_t slot) {
    if (!host_.completeKernelSlot(act_, slot, code)) pushResponse(reqId, code, true);
  }

  void abortPending(uint32_t head) {
    pending_.clear();
    written_.clear();
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
    const driver::ResponseFifoView fifo{act_.window->data(), act_.responseFifo(), act_.nelem};
    while (fifo.freeSlots() == 0) {
      if (!waitForRoom || act_.stopping.load()) return;
      std::this_thread::sleep_for(1ms);
    }
    if (driver::publishResponse(fifo, ResponseElement{reqId, code})) interruptHost();
  }

  // The response handshake (DeviceProtocol.hpp, kRegHostWaiting): the device stores the tail,
  // bumps the response futex word, then reads the host-waiting count; a host thread stores the
  // count, then reads the futex word and the tail before it sleeps. All sequentially consistent,
  // so either the device sees the count and wakes the futex, or the host sees the new tail (or
  // word) and does not sleep. A waiting thread drains the FIFO itself: no eventfd write then,
  // nor while a host thread spins on the tail (kRegHostPolling).
  void interruptHost() {
    uint32_t* word = act_.reg(driver::kRegResponseFutex);
    std::atomic_ref<uint32_t>(*word).fetch_add(1, std::memory_order_seq_cst);
    if (loadRegSeqCst(act_, driver::kRegHostWaiting) != 0) {
      host_.datapathCounters().responseWakes.fetch_add(1, std::memory_order_relaxed);
      driver::futexWakeAll(word);
      return;
    }
    // A host thread spinning on the tail (the polling data path) finds the response itself; it
    // drains again after it stops spinning, so a response it missed is not stranded.
    if (loadRegSeqCst(act_, driver::kRegHostPolling) != 0) return;
    host_.datapathCounters().responseInterrupts.fetch_add(1, std::memory_order_relaxed);
    if (act_.eventfd >= 0) {
      const uint64_t one = 1;
      // A saturated eventfd counter only loses a redundant wake-up.
      [[maybe_unused]] ssize_t w = ::write(act_.eventfd, &one, sizeof one);
    }
  }

  Activation& act_;
  ChannelHost& host_;

  std::vector<Held> pending_;     // to-device transfers of the request not yet in device memory
  std::vector<Written> written_;  // from-device transfers of the request the program did
  uint32_t tail_ = 0;             // the ring's tail the channel works towards
  uint64_t bytesInPlace_ = 0;     // of the request in progress: not copied by the DMA (--trace-requests)

  // The ring position and the request in progress (channel thread only).
  uint32_t head_ = 0;
  bool inRequest_ = false;
  uint16_t failCode_ = 0;
  uint16_t reportCode_ = 0;
  bool runRequested_ = false;   // the element being processed rang the program's doorbell
  bool runDropped_ = false;     // the last run was dropped as hung: its done INC never comes
  driver::AdaptiveSpin spin_;   // the polling data path's spin after the ring empties
  uint16_t programStatus_ = 0;  // of the last run, reported by the wait for its done semaphore
  uint64_t bytesToDevice_ = 0;  // moved by the request in progress (--trace-requests)
  uint64_t bytesFromDevice_ = 0;
};

uint16_t DeviceProgram::run(std::span<std::byte> ioRegion, std::span<DirectTransfer> direct) {
  for (DirectTransfer& d : direct) {
    if (!d.toDevice) continue;
    d.done = d.host.size();
    if (!guardedCopy(ioRegion.data() + d.deviceOffset, d.host.data(), d.host.size())) d.faulted = true;
  }
  for (const DirectTransfer& d : direct)
    if (d.faulted) return driver::DBC_COMPLETION_DMA_FAILED;
  return run(ioRegion);
}

void startChannel(Activation& act, ChannelHost& host) {
  storeReg(act, driver::kRegDeviceStatus, static_cast<uint32_t>(driver::DeviceStatus::Ok));
  act.ring = std::make_shared<Channel>(act, host);
  act.channel = std::thread([ring = act.ring.get(), &host] {
    ::pthread_setname_np(::pthread_self(), "emu-dbc");
    // A polling channel sleeps datapath_poll_interval_us between looks, not the default 50 us
    // more that timer slack would add.
    if (host.moduleParameters().datapathPolling()) ::prctl(PR_SET_TIMERSLACK, 1000UL);
    ring->runThread();
  });
}

void stopChannel(Activation& act, uint16_t code, driver::DeviceStatus status) {
  act.abortCode.store(code);
  act.stopping.store(true);
  storeReg(act, driver::kRegDeviceStatus, static_cast<uint32_t>(status));
  act.semaphores.cancel();
  driver::futexBumpAndWakeAll(act.reg(driver::kRegDoorbellFutex));
  if (act.channel.joinable()) act.channel.join();
  // Host threads asleep on the response futex look again and find the status register.
  driver::futexBumpAndWakeAll(act.reg(driver::kRegResponseFutex));
}

}  // namespace qaic::emu
