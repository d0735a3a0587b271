// SPDX-License-Identifier: Apache-2.0
// PeerRendezvous: the parts of a multi-device program running in one process (the emulator's
// cards, a test's threads) meet here for their collectives. Each part runs on its own thread
// with its own PeerExchange (exchange(part)); a collective returns on a part once every part
// has called it. The data moves between the parts' own buffers, read and written in place with
// no buffer in between, and a sum is added in part order once for all, so every part gets the
// same bits.
//
// A collective waits at most `timeout` for the other parts; then, or after cancel(reason), the
// rendezvous is broken for good: every waiting and every later call throws ExecutionError
// naming its part, its collective and the reason (how a card lost in the middle of an
// inference fails the inference on every card). Parts calling different collectives (ids,
// kinds, sizes) at the same step break it the same way.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernels/HostProgram.hpp"
#include "kernels/PeerExchange.hpp"

namespace qaic::kernels {

class PeerRendezvous : public std::enable_shared_from_this<PeerRendezvous> {
 public:
  // Bytes a part moved to and from the other parts over its collectives, counted as the
  // traffic of a reduce-scatter then all-gather (all_reduce_sum) or of sending its slice to
  // every other part (all_gather). The part's own share never counts.
  struct Transfer {
    uint64_t sent = 0;
    uint64_t received = 0;
  };

  // Create it with std::make_shared: each exchange keeps the rendezvous alive.
  PeerRendezvous(std::size_t parts, std::chrono::milliseconds timeout);

  std::size_t parts() const { return parts_; }
  // Part `part`'s exchange, for BuildOptions::peers of the program that part runs. Throws
  // ExecutionError for a part out of range.
  std::shared_ptr<PeerExchange> exchange(std::size_t part);

  // Breaks the rendezvous: every waiting and every later collective throws. The first reason
  // given is the one every error names.
  void cancel(const std::string& reason);
  bool cancelled() const;

  Transfer transferredBytes(std::size_t part) const;

 private:
  class PartExchange;
  enum class Kind : uint8_t { Sum, Gather };
  // What a part brought to the current collective.
  struct Slot {
    int collective = 0;
    Kind kind = Kind::Sum;
    ir::DType type = ir::DType::Float;
    std::byte* inOut = nullptr;       // all_reduce_sum
    const std::byte* mine = nullptr;  // all_gather
    std::byte* all = nullptr;
    std::size_t bytes = 0;  // of inOut, or of mine
  };

  void allReduceSum(std::size_t part, int collective, ir::DType type, std::span<std::byte> inOut);
  void allGather(std::size_t part, int collective, std::span<const std::byte> mine, std::span<std::byte> all);
  // Waits until every part has arrived at this step; the last one to arrive checks the slots.
  void arrive(std::unique_lock<std::mutex>& lock, std::size_t part, int collective, bool checkSlots);
  // A short spin for the step to complete before sleeping: parts that arrive close together
  // (a balanced split on cores of their own) then pay no wake-up. False: still waiting.
  bool spinForStep(std::unique_lock<std::mutex>& lock, uint64_t step);
  std::optional<std::string> mismatch() const;  // of the slots, when every part has arrived
  // Throws for a broken rendezvous, once no part is in a data phase any more: a part leaving
  // ends its run, and another part may still be reading or writing its buffers.
  [[noreturn]] void fail(std::unique_lock<std::mutex>& lock, std::size_t part, int collective);
  void breakLocked(const std::string& reason);

  const std::size_t parts_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  std::condition_variable allArrived_;
  std::vector<Slot> slots_;
  std::vector<bool> present_;  // who has arrived at the current step
  std::size_t arrived_ = 0;
  // Completed steps (two per collective); written under the mutex, read by spinning parts too.
  std::atomic<uint64_t> step_ = 0;
  std::optional<std::string> broken_;
  std::atomic<bool> brokenFlag_ = false;  // broken_ has a value, for spinning parts
  std::size_t inDataPhase_ = 0;           // parts between a collective's two steps
  std::condition_variable dataPhasesEnded_;
  std::vector<Transfer> transfers_;
};

}  // namespace qaic::kernels
