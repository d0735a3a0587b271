// SPDX-License-Identifier: Apache-2.0
// The peer groups of one emulator instance: the activations that run the N parts of a multi-device
// program (docs/emulator.md, "Multi-device programs"). Parts naming one token meet in one
// kernels::PeerRendezvous (collectives) and one kernels::PeerPipes (a pipeline's stage to stage
// transfers), whatever device of the instance they run on; each part's program is built over its
// exchange, so the cards' collectives and transfers move data between the cards' own memories,
// never through a client. A part whose activation ends, or whose device is reset, hangs or goes
// away, breaks the group: the rendezvous is cancelled naming that device, and every waiting and
// later collective of the other parts fails with that reason.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ComputePool.hpp"
#include "kernels/PeerExchange.hpp"
#include "kernels/PeerPipes.hpp"
#include "kernels/PeerRendezvous.hpp"

namespace qaic::emu {

class PeerGroups;

// One part's place in its group, held by the part's activation. Destroying it gives the part
// back; a part that had started (activated()) breaks the group as it goes.
class PeerMember {
 public:
  ~PeerMember();
  PeerMember(const PeerMember&) = delete;
  PeerMember& operator=(const PeerMember&) = delete;

  uint64_t token() const { return token_; }
  uint32_t part() const { return part_; }
  uint32_t parts() const { return parts_; }
  uint32_t device() const { return device_; }
  // The exchange the part's program is built with.
  std::shared_ptr<kernels::PeerExchange> exchange() const;
  // The activation is running: from now on its end breaks the group.
  void activated() { activated_ = true; }
  // Breaks the group: "accel<device> (part p of peer group 0x...) <what>" is the reason every
  // failed collective of every part names. The first reason given stays.
  void breakGroup(const std::string& what);

 private:
  friend class PeerGroups;
  PeerMember(std::shared_ptr<PeerGroups> groups, std::shared_ptr<kernels::PeerRendezvous> rendezvous,
             std::shared_ptr<kernels::PeerPipes> pipes, uint64_t token, uint32_t part, uint32_t parts, uint32_t device)
      : groups_(std::move(groups)),
        rendezvous_(std::move(rendezvous)),
        pipes_(std::move(pipes)),
        token_(token),
        part_(part),
        parts_(parts),
        device_(device) {}

  std::shared_ptr<PeerGroups> groups_;
  std::shared_ptr<kernels::PeerRendezvous> rendezvous_;
  std::shared_ptr<kernels::PeerPipes> pipes_;
  const uint64_t token_;
  const uint32_t part_;
  const uint32_t parts_;
  const uint32_t device_;
  bool activated_ = false;  // set and read by the device under its own order of events
};

class PeerGroups : public std::enable_shared_from_this<PeerGroups> {
 public:
  // `timeout`: how long a collective waits for the other parts (the semaphore timeout).
  explicit PeerGroups(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  struct Refusal {
    int error = 0;  // positive errno, as PeerGroupResponse's status negated
    std::string message;
  };
  // Part `part` of `parts` of group `token`, run on device `device` whose P2P peers are
  // `devicePeers` (the other devices of its P2P group). Null with `refusal` set when the part
  // cannot join: a zero token, a part out of range, another part count, a part already held, a
  // device not linked to the devices of the group's other parts, a broken group.
  std::shared_ptr<PeerMember> join(uint64_t token, uint32_t part, uint32_t parts, uint32_t device,
                                   const std::vector<uint32_t>& devicePeers, Refusal& refusal);

  // Bytes the parts on `device` sent and received through collectives and stage transfers
  // since the instance started (qaic-emu/p2p_tx_bytes, p2p_rx_bytes).
  kernels::PeerRendezvous::Transfer deviceTransfer(uint32_t device) const;

  // Groups with a part held (tests and the log).
  std::size_t groupCount() const;

 private:
  friend class PeerMember;
  struct Group {
    uint32_t parts = 0;
    std::shared_ptr<kernels::PeerRendezvous> rendezvous;
    std::shared_ptr<kernels::PeerPipes> pipes;
    std::vector<std::optional<uint32_t>> deviceOf;  // by part: the device holding it
  };
  void leave(uint64_t token, uint32_t part);

  const std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  std::map<uint64_t, Group> groups_;
  std::map<uint32_t, kernels::PeerRendezvous::Transfer> retired_;  // by device: parts that left
};

// A part's exchange as its device runs it: while a collective or a transfer waits for the
// other parts, the
// run gives its compute threads back to the pool (the parts of one program share the host's
// cores, and a part holding cores while it waits could keep the others from ever arriving), and
// takes them again, in turn, before it computes on.
class ComputeYieldingExchange final : public kernels::PeerExchange {
 public:
  // `runCores`: where the activation's channel keeps the lease of the run in progress (null
  // between runs); `stopping`: the activation's stop flag, which ends the wait for cores.
  ComputeYieldingExchange(std::shared_ptr<kernels::PeerExchange> inner, ComputePool::Lease* const* runCores,
                          const std::atomic<bool>* stopping)
      : inner_(std::move(inner)), runCores_(runCores), stopping_(stopping) {}
  std::size_t parts() const override { return inner_->parts(); }
  std::size_t part() const override { return inner_->part(); }
  void allReduceSum(int collective, ir::DType type, std::span<std::byte> inOut) override;
  void allGather(int collective, std::span<const std::byte> mine, std::span<std::byte> all) override;
  void send(int channel, std::size_t to, std::span<const std::byte> bytes) override;
  void receive(int channel, std::size_t from, std::span<std::byte> into) override;

 private:
  // `what`: "collective 3" or "channel 1", for the error of a run that stops while it waits.
  template <typename Exchange>
  void yieldingCores(const std::string& what, Exchange&& exchange);

  std::shared_ptr<kernels::PeerExchange> inner_;
  ComputePool::Lease* const* runCores_;
  const std::atomic<bool>* stopping_;
};

}  // namespace qaic::emu
