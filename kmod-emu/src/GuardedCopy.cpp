// SPDX-License-Identifier: Apache-2.0
#include "GuardedCopy.hpp"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace qaic::emu {
namespace {

// Where the faulting copy of this thread resumes; null outside a guarded copy. Volatile, and
// fenced below, so that the compiler neither drops the store before the copy (nothing it can see
// reads it) nor moves it past the copy.
thread_local sigjmp_buf* volatile resumeAt = nullptr;
struct sigaction previousAction {};

// The ranges of every InPlaceAccess alive, read by the handler: lock-free, async-signal-safe.
struct InPlaceSlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 live
  std::atomic<std::uintptr_t> begin{0}, end{0};
  std::atomic<bool> faulted{false};
};
constexpr int kInPlaceSlots = 256;
InPlaceSlot inPlaceSlots[kInPlaceSlots];

// A fault inside a live in-place range: a private zero page replaces the missing one (mmap is
// async-signal-safe in practice: one system call), and the access is marked failed.
bool absorbInPlaceFault(const void* address) {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  for (InPlaceSlot& slot : inPlaceSlots) {
    if (slot.state.load(std::memory_order_acquire) != 2) continue;
    if (at < slot.begin.load(std::memory_order_relaxed) || at >= slot.end.load(std::memory_order_relaxed)) continue;
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    void* start = reinterpret_cast<void*>(at & ~(page - 1));
    if (::mmap(start, page, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
      return false;
    slot.faulted.store(true, std::memory_order_relaxed);
    return true;
  }
  return false;
}

// A SIGBUS inside a guarded copy resumes it, one inside an in-place range is absorbed; any other
// goes where it went before (a sanitizer's report, or the default: the process dies with the
// signal).
void onSigbus(int signal, siginfo_t* info, void* context) {
  if (resumeAt != nullptr) siglongjmp(*resumeAt, 1);
  if (info != nullptr && absorbInPlaceFault(info->si_addr)) return;
  if (previousAction.sa_flags & SA_SIGINFO) {
    if (previousAction.sa_sigaction != nullptr) return previousAction.sa_sigaction(signal, info, context);
  } else if (previousAction.sa_handler != SIG_DFL && previousAction.sa_handler != SIG_IGN) {
    return previousAction.sa_handler(signal);
  }
  ::signal(SIGBUS, SIG_DFL);
  raise(SIGBUS);
}

void installHandler() {
  struct sigaction action {};
  action.sa_sigaction = onSigbus;
  // SA_NODEFER: the handler leaves with siglongjmp, so SIGBUS must not stay blocked after it.
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  sigaction(SIGBUS, &action, &previousAction);
}

std::once_flag handlerInstalled;

}  // namespace

InPlaceAccess::InPlaceAccess(std::span<const std::span<std::byte>> ranges) {
  std::call_once(handlerInstalled, installHandler);
  for (const auto& range : ranges) {
    int found = -1;
    for (int i = 0; i < kInPlaceSlots && found < 0; ++i) {
      int expected = 0;
      if (inPlaceSlots[i].state.compare_exchange_strong(expected, 1)) found = i;
    }
    if (found >= 0) {
      InPlaceSlot& slot = inPlaceSlots[found];
      slot.begin.store(reinterpret_cast<std::uintptr_t>(range.data()), std::memory_order_relaxed);
      slot.end.store(reinterpret_cast<std::uintptr_t>(range.data() + range.size()), std::memory_order_relaxed);
      slot.faulted.store(false, std::memory_order_relaxed);
      slot.state.store(2, std::memory_order_release);
    }
    slots_.push_back(found);
  }
}

InPlaceAccess::~InPlaceAccess() {
  for (int i : slots_)
    if (i >= 0) inPlaceSlots[i].state.store(0, std::memory_order_release);
}

bool InPlaceAccess::faulted(std::size_t i) const {
  return i < slots_.size() && slots_[i] >= 0 && inPlaceSlots[slots_[i]].faulted.load();
}

bool guardedCopy(void* to, const void* from, std::size_t bytes) {
  std::call_once(handlerInstalled, installHandler);
  sigjmp_buf resume;
  // The mask is not saved (a system call per copy); after a fault SIGBUS is unblocked by hand:
  // SA_NODEFER keeps it unblocked under our own handler, but a sanitizer that dispatches signals
  // through its handler (TSan) leaves it blocked, and a blocked SIGBUS kills the next fault.
  if (sigsetjmp(resume, 0) != 0) {
    resumeAt = nullptr;
    sigset_t bus;
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &bus, nullptr);
    return false;
  }
  resumeAt = &resume;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::memcpy(to, from, bytes);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  resumeAt = nullptr;
  return true;
}

}  // namespace qaic::emu
