// SPDX-License-Identifier: Apache-2.0
// The retained state of one activation (qaic-exec -retained-state): one buffer of device memory
// per retained pair, zeros from activation on, read by each run as the pair's input and written
// as its output. Where the program's graph lets the output be written where the input is read (a
// scatter of the input that nothing reads afterwards, as a KV cache update), both are the same
// memory and a run moves no byte of the state; otherwise the output goes to a second buffer that
// is copied back after a successful run.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/CacheLineAllocator.hpp"
#include "container/QpcModel.hpp"
#include "ir/Graph.hpp"
#include "kernels/HostProgram.hpp"

namespace qaic::emu {

class RetainedMemory {
 public:
  // Allocates nothing yet: the device charges the state before allocate() takes it.
  explicit RetainedMemory(const std::vector<container::QpcRetainedState>& entries);

  // Takes each pair's memory, zeroed, once (later calls do nothing). Throws std::bad_alloc.
  void allocate();

  // The pair whose input or output is io buffer `bufferName`; -1 when none.
  int find(std::string_view bufferName) const;
  std::size_t size() const { return entries_.size(); }

  // Decides, for a graph the activation runs, whether pair `index`'s output may share its
  // input's memory; returns that choice (false: the output has a buffer of its own).
  bool prepare(std::size_t index, const ir::Graph& graph);
  kernels::IoMemory inputMemory(std::size_t index);
  kernels::IoMemory outputMemory(std::size_t index, bool inPlace);
  const container::QpcRetainedState& entry(std::size_t index) const { return entries_[index]; }

  // After a successful run: outputs written elsewhere become the state.
  void commit(const std::vector<bool>& inPlace);
  void reset();  // zeros, as at activation

 private:
  using Bytes = std::vector<std::byte, CacheLineAllocator<std::byte>>;
  std::vector<container::QpcRetainedState> entries_;
  std::vector<Bytes> state_, next_;  // next_[i] stays empty while every graph updates i in place
};

// True when `graph` may write tensor `output` in the memory of io input tensor `input`: the one
// op making it is a scatter (scatter_elements, scatter_nd) of `input`, and no op after it reads
// `input` or a view of it (reshape, flatten).
bool updatesInPlace(const ir::Graph& graph, const std::string& input, const std::string& output);

}  // namespace qaic::emu
