// SPDX-License-Identifier: Apache-2.0
// The one oneDNN scratchpad buffer of a plan, shared by all of its primitives.
//
// Why: a program is built on one thread and may run on any other (the emulator builds on the
// loading thread and runs on a channel thread). In oneDNN's default `library` scratchpad mode
// some implementations (im2col + GEMM convolution, Winograd, ...) keep their scratchpad in the
// creating thread's thread-local storage, so their primitives cannot migrate. Every primitive a
// kernel runs repeatedly is therefore created in `user` mode and executed with memory from here.
// A plan's kernels run one after another and a run is never re-entrant, so one buffer of the
// largest need serves them all; separate plans (and programs) have separate buffers. The same
// buffer holds what a kernel needs only while it runs, such as a convolution's activations in
// oneDNN's blocked layout.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include <dnnl.hpp>

namespace qaic::kernels {

class SharedScratchpad {
 public:
  // Before each kernel is created: its attachments start at the buffer's beginning again.
  void beginKernel() { offset_ = 0; }

  // The scratchpad memory for a primitive created with userScratchpad(); pass it as
  // DNNL_ARG_SCRATCHPAD at every execute. It points at the shared buffer once bind() has run.
  dnnl::memory attach(const dnnl::primitive_desc_base& pd, const dnnl::engine& engine);
  // Memory of `md` for the kernel's own use during its run (activations reordered into a
  // primitive's layout); the attachments of one kernel do not overlap one another.
  dnnl::memory attach(const dnnl::memory::desc& md, const dnnl::engine& engine);

  // Once every kernel of the plan exists: allocates the buffer and points every attached memory
  // at its place in it (again, should more have been attached since).
  void bind();

  std::size_t bytes() const { return bytes_; }

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const;
  };
  struct User {
    dnnl::memory memory;  // a handle shared with the kernel: the same oneDNN object
    std::size_t offset;
  };

  std::vector<User> users_;
  std::size_t offset_ = 0;    // next free byte of the kernel being created
  std::size_t bytes_ = 0;     // the largest need attached so far
  std::size_t capacity_ = 0;  // of buffer_
  std::unique_ptr<std::byte, AlignedDelete> buffer_;
};

}  // namespace qaic::kernels
