// SPDX-License-Identifier: Apache-2.0
#include "PeerGroups.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "kernels/HostProgram.hpp"

namespace qaic::emu {
namespace {

std::string tokenText(uint64_t token) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(token));
  return text;
}

std::string accel(uint32_t device) { return "accel" + std::to_string(device); }

}  // namespace

// ---- PeerMember ---------------------------------------------------------------------------------

PeerMember::~PeerMember() {
  // A part that ran leaves a program that can no longer compute: the others must not wait for it.
  if (activated_) breakGroup("ended");
  groups_->leave(token_, part_);
}

std::shared_ptr<kernels::PeerExchange> PeerMember::exchange() const {
  return pipes_->exchange(part_, rendezvous_->exchange(part_));
}

void PeerMember::breakGroup(const std::string& what) {
  const std::string reason = accel(device_) + " (part " + std::to_string(part_) + " of peer group " +
                             tokenText(token_) + ") " + what;
  rendezvous_->cancel(reason);
  pipes_->cancel(reason);
}

// ---- PeerGroups ---------------------------------------------------------------------------------

std::shared_ptr<PeerMember> PeerGroups::join(uint64_t token, uint32_t part, uint32_t parts, uint32_t device,
                                             const std::vector<uint32_t>& devicePeers, Refusal& refusal) {
  const std::string who = "peer group " + tokenText(token) + ": part " + std::to_string(part) + " on " + accel(device);
  auto refuse = [&](int error, std::string why) -> std::shared_ptr<PeerMember> {
    refusal = {error, who + ": " + std::move(why)};
    return nullptr;
  };
  if (token == 0) return refuse(EINVAL, "the token is 0 (a group needs a nonzero token)");
  if (parts == 0) return refuse(EINVAL, "a program has at least one part, not 0");
  if (part >= parts) return refuse(EINVAL, "part index out of range (" + std::to_string(parts) + " parts)");
  std::lock_guard lock(mutex_);
  auto it = groups_.find(token);
  if (it == groups_.end()) {
    Group group;
    group.parts = parts;
    group.rendezvous = std::make_shared<kernels::PeerRendezvous>(parts, timeout_);
    group.pipes = std::make_shared<kernels::PeerPipes>(parts, timeout_);
    group.deviceOf.resize(parts);
    it = groups_.emplace(token, std::move(group)).first;
  }
  Group& group = it->second;
  if (group.parts != parts) {
    return refuse(EINVAL, "the group has " + std::to_string(group.parts) + " parts, this activation says " +
                              std::to_string(parts));
  }
  if (group.deviceOf[part]) return refuse(EBUSY, "the part is active already on " + accel(*group.deviceOf[part]));
  if (group.rendezvous->cancelled() || group.pipes->cancelled()) {
    return refuse(ECANCELED,
                  "the group was broken and parts of it are still active: deactivate them, or use a new token");
  }
  for (uint32_t other = 0; other < parts; ++other) {
    const std::optional<uint32_t> otherDevice = group.deviceOf[other];
    if (!otherDevice || *otherDevice == device) continue;
    if (std::find(devicePeers.begin(), devicePeers.end(), *otherDevice) == devicePeers.end()) {
      std::string peers;
      for (uint32_t peer : devicePeers) peers += (peers.empty() ? "" : ", ") + accel(peer);
      return refuse(EXDEV, accel(device) + " is not in the P2P group of " + accel(*otherDevice) + " (part " +
                               std::to_string(other) + "); " + accel(device) +
                               "'s P2P peers: " + (peers.empty() ? "none" : peers));
    }
  }
  group.deviceOf[part] = device;
  return std::shared_ptr<PeerMember>(
      new PeerMember(shared_from_this(), group.rendezvous, group.pipes, token, part, parts, device));
}

void PeerGroups::leave(uint64_t token, uint32_t part) {
  std::lock_guard lock(mutex_);
  auto it = groups_.find(token);
  if (it == groups_.end() || part >= it->second.parts || !it->second.deviceOf[part]) return;
  Group& group = it->second;
  auto& total = retired_[*group.deviceOf[part]];
  for (const auto& moved : {group.rendezvous->transferredBytes(part), group.pipes->transferredBytes(part)}) {
    total.sent += moved.sent;
    total.received += moved.received;
  }
  group.deviceOf[part].reset();
  if (std::none_of(group.deviceOf.begin(), group.deviceOf.end(), [](const auto& d) { return d.has_value(); }))
    groups_.erase(it);
}

kernels::PeerRendezvous::Transfer PeerGroups::deviceTransfer(uint32_t device) const {
  std::lock_guard lock(mutex_);
  kernels::PeerRendezvous::Transfer total;
  if (auto it = retired_.find(device); it != retired_.end()) total = it->second;
  for (const auto& [token, group] : groups_) {
    for (uint32_t part = 0; part < group.parts; ++part) {
      if (group.deviceOf[part] != device) continue;
      for (const auto& moved : {group.rendezvous->transferredBytes(part), group.pipes->transferredBytes(part)}) {
        total.sent += moved.sent;
        total.received += moved.received;
      }
    }
  }
  return total;
}

std::size_t PeerGroups::groupCount() const {
  std::lock_guard lock(mutex_);
  return groups_.size();
}

// ---- ComputeYieldingExchange --------------------------------------------------------------------

template <typename Exchange>
void ComputeYieldingExchange::yieldingCores(const std::string& what, Exchange&& exchange) {
  ComputePool::Lease* cores = *runCores_;
  if (cores) cores->suspend();
  std::exception_ptr failure;
  try {
    exchange();
  } catch (...) {
    failure = std::current_exception();
  }
  // A failed collective ends the run, whose cores are back in the pool already.
  if (failure) std::rethrow_exception(failure);
  if (cores && !cores->resume(*stopping_)) {
    throw kernels::ExecutionError("part " + std::to_string(inner_->part()) + ", " + what +
                                  ": the activation is stopping");
  }
}

void ComputeYieldingExchange::allReduceSum(int collective, ir::DType type, std::span<std::byte> inOut) {
  yieldingCores("collective " + std::to_string(collective), [&] { inner_->allReduceSum(collective, type, inOut); });
}

void ComputeYieldingExchange::allGather(int collective, std::span<const std::byte> mine, std::span<std::byte> all) {
  yieldingCores("collective " + std::to_string(collective), [&] { inner_->allGather(collective, mine, all); });
}

void ComputeYieldingExchange::send(int channel, std::size_t to, std::span<const std::byte> bytes) {
  yieldingCores("channel " + std::to_string(channel), [&] { inner_->send(channel, to, bytes); });
}

void ComputeYieldingExchange::receive(int channel, std::size_t from, std::span<std::byte> into) {
  yieldingCores("channel " + std::to_string(channel), [&] { inner_->receive(channel, from, into); });
}

}  // namespace qaic::emu
