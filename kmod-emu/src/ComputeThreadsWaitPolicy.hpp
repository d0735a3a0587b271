// SPDX-License-Identifier: Apache-2.0
// Why qaic-emu starts itself again once. The NSP kernels split their work with OpenMP, and
// libgomp's threads, unless told otherwise, spin between parallel regions for a while before they
// sleep. An emulator shares its host with the processes that drive it (a test suite, compilers,
// the client); a spinning thread keeps its core for a whole time slice while the thread with the
// work waits for one. Measured on the 2-core AMD EPYC (Zen 4) KVM guest at load 6 to 8, thirty
// decode steps of a 4-layer Llama-shaped decoder took 13 to 19 s spinning and 4 to 5.3 s with
// OMP_WAIT_POLICY=PASSIVE; on a quiet host the two are the same (within 1%). libgomp reads the
// variable once, when it is loaded, before main() runs, so the only way to set it for the
// process is in its environment at exec: qaic-emu execs itself with it unless the caller chose a
// policy (OMP_WAIT_POLICY set, to any value, is left alone).
#pragma once

#include <unistd.h>

#include <cstdlib>

namespace qaic::emu {

inline constexpr const char* kWaitPolicyVariable = "OMP_WAIT_POLICY";

// Returns only when the policy was already chosen or the exec failed (the process then runs on
// with libgomp's default); otherwise this process image is replaced, with the same pid and argv.
inline void execWithPassiveComputeThreads(char** argv) {
  if (std::getenv(kWaitPolicyVariable) != nullptr) return;
  if (setenv(kWaitPolicyVariable, "PASSIVE", 1) != 0) return;
  execv("/proc/self/exe", argv);
}

}  // namespace qaic::emu
