// The one oneDNN scratchpad buffer of a plan, shared by all of its primitives.
//
// Why: a program is built on one thread and may run on any other (the emulator builds on the
// loading thread and runs on a channel thread). In oneDNN's default `library` scratchpad mode
// some implementations (im2col + GEMM convolution, Winograd, ...) keep their scratchpad in the
// creating thread's thread-local storage, so their primitives cannot migrate. Every primitive a
// kernel runs repeatedly is therefore created in `user` mode and executed with memory from here.
// A plan's kernels run one after another and a run is never re-entrant, so one buffer of the
// largest need serves them all; separate plans (and programs) have separate buffers.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include <dnnl.hpp>

namespace qaic::kernels {

class SharedScratchpad {
 public:
  // The scratchpad memory for a primitive created with userScratchpad(); pass it as
  // DNNL_ARG_SCRATCHPAD at every execute. It points at the shared buffer once bind() has run.
  dnnl::memory attach(const dnnl::primitive_desc_base& pd, const dnnl::engine& engine);

  // Once every kernel of the plan exists: allocates the buffer and points every attached memory
  // at it (again, should more have been attached since).
  void bind();

  std::size_t bytes() const { return bytes_; }

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const;
  };

  std::vector<dnnl::memory> users_;  // handles shared with the kernels: same oneDNN objects
  std::size_t bytes_ = 0;     // the largest need attached so far
  std::size_t capacity_ = 0;  // of buffer_
  std::unique_ptr<std::byte, AlignedDelete> buffer_;
};

}  // namespace qaic::kernels
