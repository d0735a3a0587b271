// SPDX-License-Identifier: Apache-2.0
// The host executor: a shape-inferred IR graph turned into a runnable program whose operator
// kernels (oneDNN for convolution, matrix multiply and pooling) are created and whose weights are
// packed once, at build time; it may then run on any thread. lightnet runs IR files with it;
// every emulated NSP runs compiled programs with it; the ONNX conformance suite checks it.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/Graph.hpp"
#include "ir/Weights.hpp"

namespace qaic::kernels {

// A tensor in host memory, row-major in the IR's logical layout (NCHW for images).
struct TensorView {
  ir::DType dtype = ir::DType::Float;
  ir::Dims dims;
  void* data = nullptr;
  std::size_t bytes = 0;  // capacity of `data`
};

// Finds the data of a `create` op with from_file=true (weights file or container constants).
using ConstantLookup = std::function<const ir::WeightTensor*(std::string_view tensorName)>;

// Caller memory a graph input or output lives in for the program's whole life.
struct IoMemory {
  void* data = nullptr;  // nullptr: the program keeps the tensor in memory of its own
  std::size_t bytes = 0;
};

// Constants packed once, in place, and shared by the programs built with the same instance
// (ops/ConstantPacking.hpp). With it, the data behind ConstantLookup must be writable and live as
// long as the instance: the emulator's loaded container, whose activations all share one.
class ConstantPacking;
std::shared_ptr<ConstantPacking> makeConstantPacking();

class PeerExchange;  // kernels/PeerExchange.hpp

struct BuildOptions {
  int threads = 1;                           // compute threads this program may use
  std::shared_ptr<ConstantPacking> packing;  // null: each program packs copies of its own
  std::ostream* printStream = nullptr;       // where print ops write; nullptr = std::cout
  // In the graph's io order by direction (shorter lists leave the rest unbound). A bound input
  // is read and a bound output written by the kernels in place, so a run() given views of
  // exactly this memory copies nothing; views of other memory are still copied. A tensor that
  // is several io buffers at once, or is a constant, stays in the program's own memory.
  std::vector<IoMemory> inputMemory, outputMemory;
  // A run may be given views of other memory than a bound tensor's (the emulator's NSP reading
  // a client's DMA buffer in place). With reboundPlans > 0 the program builds up to that many
  // further plans whose bound tensors are such views, so those runs copy nothing either: only
  // where a plan's own memory (activations, scratchpad) is at most the bytes it saves copying
  // per run, for aligned views that overlap no other view of the run. Other runs copy.
  int reboundPlans = 0;
  // This part's link to the other parts of a multi-device program, for its collectives
  // (all_reduce_sum, all_gather). Null: a graph with a collective fails to build.
  std::shared_ptr<PeerExchange> peers;
};

// Every optype the executor has a kernel for: the IR registry's optypes, checked by
// tests/unit/onnx/OperatorRegistriesTest.cpp.
std::vector<std::string_view> kernelOptypes();

class ExecutionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class HostProgram {
 public:
  // `graph` must have passed ir::inferShapes. Throws ExecutionError (naming the op) for an
  // operator or dtype the executor does not support, or a missing constant.
  static std::unique_ptr<HostProgram> build(const ir::Graph& graph, ConstantLookup constants,
                                            const BuildOptions& options = {});
  virtual ~HostProgram() = default;

  // Runs the whole graph once. inputs/outputs are in the graph's io order (by direction).
  // An input whose dims differ from the built dims (partial or specialized IO) re-infers shapes
  // for that combination (cached); each output view's dims are set to the actual output dims and
  // its buffer must hold them. Any thread may run it (not only the building one), but not
  // concurrently: one run at a time per HostProgram.
  virtual void run(std::span<const TensorView> inputs, std::span<TensorView> outputs) = 0;
  // Of the last run: whether input / output `k` (io order by direction) was read or written by
  // the kernels in the caller's view itself (true) or copied between it and the program's memory.
  virtual bool inPlace(ir::Direction direction, std::size_t k) const = 0;

  // Bytes of the one oneDNN scratchpad shared by the kernels of the plan for the graph's own
  // input dims (each shape combination's plan has its own); 0 when no primitive needs one.
  virtual std::size_t scratchpadBytes() const = 0;
  // Bytes of that plan's activation arena (MemoryPlan.hpp): the intermediate tensors, each in a
  // slot it shares with tensors whose lifetimes do not overlap its own.
  virtual std::size_t activationBytes() const = 0;
};

}  // namespace qaic::kernels
