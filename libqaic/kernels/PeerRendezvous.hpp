// SPDX-License-Identifier: Apache-2.0
// PeerRendezvous: the parts of a multi-device program running in one process (the emulator's
// cards, a test's threads) meet here for their collectives. Each part runs on its own thread
// with its own PeerExchange (exchange(part)); a collective returns on a part once every part
// has called it. A sum is added in part order once for all, so every part gets the same bits.
// A collective moves the data between the parts' own buffers, read and written in place with no
// buffer in between, at the cost of two synchronizations; a small one goes through a staging
// slot per part, which costs a copy of its bytes and saves one synchronization
// (stagedBytesPerPart() says how small).
//
// A collective waits at most `timeout` for the other parts; then, or after cancel(reason), the
// rendezvous is broken for good: every waiting and every later call throws ExecutionError
// naming its part, its collective and the reason (how a card lost in the middle of an
// inference fails the inference on every card). Parts calling different collectives (ids,
// kinds, sizes, element types) at the same step break it the same way. No part returns, by
// success or failure, while another part may still read or write its buffers.
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

  // A collective whose buffers come to at most this over all parts (every part's inOut of an
  // all_reduce_sum, every part's `mine` of an all_gather) is staged: one synchronization. When
  // the parts outnumber the CPUs a synchronization is a sleep and a wake-up (microseconds), and
  // staging pays up to 64 KiB; when every part has a CPU a part spinning sees the others arrive
  // within 0.1 us, and the copy through the slots outweighs that above a few hundred bytes.
  static constexpr std::size_t kStagedBytesSleeping = 64 << 10;
  static constexpr std::size_t kStagedBytesSpinning = 512;

  // Create it with std::make_shared: each exchange keeps the rendezvous alive.
  PeerRendezvous(std::size_t parts, std::chrono::milliseconds timeout);

  std::size_t parts() const { return parts_; }
  // The largest buffer per part (all_reduce_sum's inOut, all_gather's `mine`) a collective is
  // staged for: one of the budgets above shared by the parts, in whole cache lines.
  std::size_t stagedBytesPerPart() const { return stagingSlotBytes_; }
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
  // One part's own cache lines: written by that part, so the parts never share a line they write.
  struct alignas(64) PartState {
    Slot slot;
    std::atomic<uint32_t> arrivedAt{0};  // the last step this part arrived at, plus one
    std::atomic<uint64_t> sent{0};
    std::atomic<uint64_t> received{0};
    std::vector<std::byte*> sources;  // scratch of the part's sums: one per part, never reallocated
  };
  struct alignas(64) CacheLine {
    std::byte bytes[64];
  };

  void allReduceSum(std::size_t part, int collective, ir::DType type, std::span<std::byte> inOut);
  void allGather(std::size_t part, int collective, std::span<const std::byte> mine, std::span<std::byte> all);
  bool staged(std::size_t bytes) const { return bytes <= stagingSlotBytes_; }
  // Part `part`'s staging slot at a step: by step parity, so a slot read after step s is
  // written again at step s + 2 at the earliest, when every part has arrived at s + 1.
  std::byte* stagingSlot(uint32_t step, std::size_t part);

  // Arrives at the current step and returns it once every part has arrived. The last part to
  // arrive checks the slots (when `checkSlots`) and, when `dataPhaseFollows`, marks every part
  // as in the in-place data phase (leaveDataPhase ends it) before it lets the others go on.
  uint32_t arrive(std::size_t part, int collective, bool checkSlots, bool dataPhaseFollows);
  // Waits for `step` to complete: a bounded spin, then a futex wait up to the timeout.
  void waitForStep(std::size_t part, int collective, uint32_t step);
  // At the deadline: breaks the rendezvous naming the missing parts, unless the step has
  // completed or is about to (every part counted). False: keep waiting.
  bool breakForTimeout(uint32_t step);
  void leaveDataPhase();
  std::optional<std::string> mismatch() const;  // of the slots, when every part has arrived
  // Throws for a broken rendezvous, once no part is in a data phase any more: a part leaving
  // ends its run, and another part may still be reading or writing its buffers.
  [[noreturn]] void fail(std::size_t part, int collective);
  void breakWith(const std::string& reason);
  void wakeSleepers();

  // The barrier's state, one word: bit 63 broken, bits 32..62 the step, bits 0..31 the parts
  // that have arrived at it. One atomic add arrives; the last part's compare-exchange
  // completes the step unless the rendezvous broke first, so a step either completes for
  // every part or for none.
  static constexpr uint64_t kBroken = uint64_t{1} << 63;
  static constexpr uint32_t stepOf(uint64_t state) { return static_cast<uint32_t>(state >> 32) & 0x7fffffffu; }
  static constexpr uint32_t countOf(uint64_t state) { return static_cast<uint32_t>(state); }

  const std::size_t parts_;
  const std::chrono::milliseconds timeout_;
  const bool spinBeforeSleeping_;  // every part may have a CPU of its own
  const std::size_t stagingSlotBytes_;
  alignas(64) std::atomic<uint64_t> state_{0};
  // Parts in the data phase of an in-place collective (between its two steps).
  alignas(64) std::atomic<std::size_t> inDataPhase_{0};
  // The futex sleepers wait on: bumped when a step completes or the rendezvous breaks while
  // any part sleeps.
  alignas(64) std::atomic<uint32_t> wakeups_{0};
  std::atomic<uint32_t> sleepers_{0};
  std::vector<PartState> partStates_;
  std::vector<CacheLine> staging_;  // 2 x parts slots of stagingSlotBytes_
  // The slow path: the reason of a broken rendezvous, and parts failing while others are in a
  // data phase.
  mutable std::mutex mutex_;
  std::optional<std::string> reason_;
  std::condition_variable dataPhasesEnded_;
};

}  // namespace qaic::kernels
