// SPDX-License-Identifier: Apache-2.0
// Test helper: the parts of a multi-device program run in-process, part p's graph on thread p,
// joined by one kernels::PeerRendezvous, as the emulator's cards will run them.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "GraphBuilder.hpp"
#include "kernels/PeerExchange.hpp"
#include "kernels/PeerRendezvous.hpp"

namespace qaic::kernels::test {

struct PartResults {
  std::vector<std::vector<HostTensor>> outputs;  // by part, in each graph's io order
  std::vector<PeerRendezvous::Transfer> transfers;
};

// One run of a built program; outputs are sized from the graph's io section.
inline std::vector<HostTensor> runProgram(HostProgram& program, const ir::Graph& graph,
                                          const std::vector<HostTensor>& inputs) {
  std::vector<TensorView> in;
  for (const auto& t : inputs) in.push_back({t.dtype, t.dims, const_cast<std::byte*>(t.bytes.data()), t.bytes.size()});
  std::vector<HostTensor> out;
  for (const auto& io : graph.io) {
    if (io.direction != ir::Direction::Out) continue;
    const auto bytes = static_cast<std::size_t>(ir::elementCount(io.dims)) * ir::dtypeSize(io.dtype);
    out.push_back({io.dtype, io.dims, std::vector<std::byte>(bytes)});
  }
  std::vector<TensorView> views;
  for (auto& t : out) views.push_back({t.dtype, t.dims, t.bytes.data(), t.bytes.size()});
  program.run(in, views);
  return out;
}

// Builds each part's program, one after the other on the calling thread (as a card builds a
// program at activation; oneDNN's primitive cache, which building fills, is synchronized inside
// an uninstrumented library, so builds racing on threads would only show ThreadSanitizer false
// reports), then runs each `runs` times on a thread of its own; inputs[p] are part p's inputs and
// constants(p) its constant lookup. A part that fails cancels the rendezvous (so no other part
// waits for it) and its error is rethrown here once every thread has ended.
inline PartResults runParts(const std::vector<ir::Graph>& graphs, const std::vector<std::vector<HostTensor>>& inputs,
                            const std::function<ConstantLookup(std::size_t)>& constants = nullptr, int runs = 1,
                            std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const std::size_t parts = graphs.size();
  auto rendezvous = std::make_shared<PeerRendezvous>(parts, timeout);
  std::vector<std::unique_ptr<HostProgram>> programs;
  for (std::size_t p = 0; p < parts; ++p) {
    BuildOptions options;
    options.peers = rendezvous->exchange(p);
    programs.push_back(HostProgram::build(graphs[p], constants ? constants(p) : nullptr, options));
  }
  PartResults results;
  results.outputs.resize(parts);
  std::vector<std::exception_ptr> errors(parts);
  std::vector<std::thread> threads;
  for (std::size_t p = 0; p < parts; ++p) {
    threads.emplace_back([&, p] {
      try {
        for (int run = 0; run < runs; ++run) results.outputs[p] = runProgram(*programs[p], graphs[p], inputs[p]);
      } catch (const std::exception& e) {
        errors[p] = std::current_exception();
        rendezvous->cancel(std::string("part ") + std::to_string(p) + " failed: " + e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  for (std::size_t p = 0; p < parts; ++p) results.transfers.push_back(rendezvous->transferredBytes(p));
  return results;
}

}  // namespace qaic::kernels::test
