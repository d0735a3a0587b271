#include "GuardedCopy.hpp"

#include <setjmp.h>
#include <signal.h>

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

// A SIGBUS inside a guarded copy resumes it; any other goes where it went before (a
// sanitizer's report, or the default: the process dies with the signal).
void onSigbus(int signal, siginfo_t* info, void* context) {
  if (resumeAt != nullptr) siglongjmp(*resumeAt, 1);
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

}  // namespace

bool guardedCopy(void* to, const void* from, std::size_t bytes) {
  static std::once_flag installed;
  std::call_once(installed, installHandler);
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
