// SPDX-License-Identifier: Apache-2.0
#include "DeviceRegistry.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/timerfd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>

#include "Log.hpp"
#include "driver/ManageCalls.hpp"
#include "driver/SysfsDevice.hpp"
#include "driver/SysfsNames.hpp"

namespace qaic::qaicd {

namespace {

uint64_t amountOf(const Resources& r, driver::PartitionResource which) {
  switch (which) {
    case driver::PartitionResource::Nsp: return r.numNsp;
    case driver::PartitionResource::Mcid: return r.numMcid;
    case driver::PartitionResource::Sem: return r.numSem;
    case driver::PartitionResource::Vc: return r.numVc;
    case driver::PartitionResource::Ddr: return r.ddrSize;
    case driver::PartitionResource::None: break;
  }
  return 0;
}

ProtocolError error(int errnum, std::string message) { return ProtocolError{errnum, std::move(message), {}}; }

}  // namespace

bool processAlive(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  // A zombie still answers kill(0); its lease is over all the same.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const auto close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() || text[close + 2] != 'Z';
}

namespace {

std::string milliseconds(std::chrono::steady_clock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

driver::PartitionRequest partitionRequest(driver::PartitionOp op) {
  driver::PartitionRequest request{};
  request.magic = driver::kPartitionMagic;
  request.version = driver::kPartitionVersion;
  request.op = static_cast<uint32_t>(op);
  return request;
}

// What a create call brings back from the device's thread.
struct CreateOutcome {
  Result<driver::PartitionResponse> answer = SysError{EIO, "not run"};
  std::string refusal;  // ENOSPC: "numNsp: 12 requested, 4 free", read right after the refusal
};

// What the device's thread reads of a partition it is asked to take over.
struct TakeOverOutcome {
  std::optional<Partition> partition;
};

struct OpenOutcome {
  std::string error;  // empty: open
  Result<driver::DeviceStatusResponse> status = SysError{EIO, "not run"};
  std::optional<std::string> busId;
};

}  // namespace

DeviceRegistry::~DeviceRegistry() {
  // Every thread is told first, so several hung devices cost one wait, not one each.
  for (auto& [index, device] : devices_) device.worker->requestStop();
  for (auto& worker : retired_) worker->requestStop();
  devices_.clear();
  retired_.clear();
}

Result<void> DeviceRegistry::start(std::chrono::milliseconds callBound) {
  callBound_ = callBound;
  auto mailbox = LoopMailbox::create();
  if (!mailbox) return mailbox.sysError();
  results_ = std::move(*mailbox);
  deadlineTimer_.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!deadlineTimer_) return lastError("timerfd_create");
  return {};
}

template <typename T>
void DeviceRegistry::call(uint32_t device, Clock::time_point runBy,
                          std::function<T(const driver::DeviceNode*, const std::string&)> work,
                          std::function<void(T, bool late)> done, Clock::time_point answerBy,
                          std::function<void()> timedOut) {
  const uint64_t number = nextCall_++;
  const bool answered = static_cast<bool>(timedOut);
  if (answered) {
    deadlines_.emplace(number, Deadline{answerBy, std::move(timedOut)});
    armDeadline();
  }
  ++outstanding_;
  std::shared_ptr<LoopMailbox> results = results_;
  devices_.at(device).worker->post(runBy,
                                   [this, number, answered, results, work = std::move(work), done = std::move(done)](
                                       const driver::DeviceNode* node, const std::string& whyNot) mutable {
                                     auto value = std::make_shared<T>(work(node, whyNot));
                                     // Runs on the loop (onResults), where `this` is the registry
                                     // that owns the mailbox.
                                     results->post([this, number, answered, value, done = std::move(done)] {
                                       --outstanding_;
                                       const bool late = answered && deadlines_.erase(number) == 0;
                                       done(std::move(*value), late);
                                     });
                                   });
}

void DeviceRegistry::onResults() {
  // Results posted by a result's own handler wait for the next round; each round is finite.
  for (auto& work : results_->take()) work();
  for (auto it = retired_.begin(); it != retired_.end();) it = (*it)->finished() ? retired_.erase(it) : std::next(it);
}

void DeviceRegistry::onDeadline() {
  uint64_t expirations = 0;
  [[maybe_unused]] ssize_t n = ::read(deadlineTimer_.get(), &expirations, sizeof expirations);
  const auto now = Clock::now();
  std::vector<std::function<void()>> expired;
  for (auto it = deadlines_.begin(); it != deadlines_.end();) {
    if (it->second.at <= now) {
      expired.push_back(std::move(it->second.timedOut));
      it = deadlines_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& timedOut : expired) timedOut();
  armDeadline();
}

void DeviceRegistry::armDeadline() {
  itimerspec when{};
  if (!deadlines_.empty()) {
    auto first = Clock::time_point::max();
    for (const auto& [number, d] : deadlines_) first = std::min(first, d.at);
    const auto wait = std::max(first - Clock::now(), Clock::duration(std::chrono::microseconds(100)));
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
    when.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    when.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  }
  ::timerfd_settime(deadlineTimer_.get(), 0, &when, nullptr);
}

void DeviceRegistry::settle(Clock::time_point deadline) {
  while (outstanding_ != 0) {
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return;
    pollfd fds[2] = {{results_->fd(), POLLIN, 0}, {deadlineTimer_.get(), POLLIN, 0}};
    const int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(left).count()) + 1;
    if (::poll(fds, 2, ms) < 0 && errno != EINTR) return;
    if (fds[0].revents & POLLIN) onResults();
    if (fds[1].revents & POLLIN) onDeadline();
  }
}

std::optional<std::string> DeviceRegistry::stuck(uint32_t index, Clock::duration after) const {
  auto it = devices_.find(index);
  if (it == devices_.end()) return std::nullopt;
  auto busy = it->second.worker->busyFor();
  if (!busy || *busy < after) return std::nullopt;
  return "device " + std::to_string(index) + ": not answering: a device call has been running for " +
         milliseconds(*busy);
}

void DeviceRegistry::forgetDevice(uint32_t index) {
  for (auto it = partitions_.begin(); it != partitions_.end();) {
    if (it->second.device == index) {
      logWarn("device " + std::to_string(index) + " went away: dropping partition " + std::to_string(it->first) + " (" +
              it->second.label + ")");
      it = partitions_.erase(it);
    } else {
      ++it;
    }
  }
  auto it = devices_.find(index);
  if (it == devices_.end()) return;
  // Its thread may be in a call the device never answers: it ends on its own, the loop goes on.
  it->second.worker->requestStop();
  retired_.push_back(std::move(it->second.worker));
  const bool wasReady = it->second.ready;
  devices_.erase(it);
  if (wasReady) logWarn("device " + std::to_string(index) + " is gone");
}

void DeviceRegistry::rescan() {
  std::set<uint32_t> present, presentPartitions;
  for (unsigned index : root_.listDevices())
    (index >= driver::kFirstPartitionId ? presentPartitions : present).insert(index);

  for (auto it = devices_.begin(); it != devices_.end();) {
    const uint32_t index = it->first;
    ++it;
    if (present.count(index) == 0) forgetDevice(index);
  }
  for (uint32_t index : present) {
    if (devices_.count(index) != 0) continue;
    Device& device = devices_[index];
    device.generation = nextGeneration_++;
    device.worker = std::make_unique<DeviceWorker>(root_, index);
    const uint64_t generation = device.generation;
    call<OpenOutcome>(
        index, Clock::time_point::max(),
        [](const driver::DeviceNode* node, const std::string& whyNot) {
          OpenOutcome out;
          if (node == nullptr) {
            out.error = whyNot;
            return out;
          }
          out.status = driver::queryDeviceStatus(*node);
          if (auto busId = node->busId()) out.busId = *busId;
          return out;
        },
        [this, index, generation](OpenOutcome out, bool) {
          auto it = devices_.find(index);
          if (it == devices_.end() || it->second.generation != generation) return;
          if (!out.error.empty() || !out.status) {
            logWarn((out.error.empty() ? "device " + std::to_string(index) + ": " + out.status.message() : out.error) +
                    " (retrying on the next scan)");
            it->second.worker->requestStop();
            retired_.push_back(std::move(it->second.worker));
            devices_.erase(it);
            return;
          }
          it->second.ready = true;
          it->second.status = std::move(out.status);
          it->second.busId = std::move(out.busId);
          logInfo("device " + std::to_string(index) + " found");
          // Partitions listed before the device was open are taken over now.
          for (unsigned id : root_.listDevices())
            if (id >= driver::kFirstPartitionId && partitions_.count(id) == 0) takeOver(id);
          notifyChanged();
        });
  }
  for (auto it = partitions_.begin(); it != partitions_.end();) {
    if (presentPartitions.count(it->first) == 0) {
      logWarn("partition " + std::to_string(it->first) + " vanished from the device (reset or removal)");
      it = partitions_.erase(it);
    } else {
      ++it;
    }
  }
  for (uint32_t id : presentPartitions)
    if (partitions_.count(id) == 0) takeOver(id);
}

void DeviceRegistry::takeOver(uint32_t id) {
  if (removing_.count(id) != 0 || takingOver_.count(id) != 0) return;
  // Who holds a partition is the emulator's record (qaic-emu/partition/); what it holds, the
  // status query on its own node, asked on the parent's thread.
  driver::SysfsDevice sysfs(root_, id);
  auto parent = sysfs.readU64(driver::sysfs::kPartitionParent);
  if (!parent || !hasDevice(static_cast<uint32_t>(*parent))) return;  // half-made, or the parent is not open yet
  const auto device = static_cast<uint32_t>(*parent);
  takingOver_.insert(id);
  driver::DeviceRoot root = root_;
  call<TakeOverOutcome>(
      device, Clock::time_point::max(),
      [root, id, device](const driver::DeviceNode* parentNode, const std::string&) {
        TakeOverOutcome out;
        if (parentNode == nullptr) return out;
        driver::SysfsDevice sysfs(root, id);
        auto holder = sysfs.readU64(driver::sysfs::kPartitionHolderPid);
        if (!holder) return out;
        auto node = driver::DeviceNode::open(root, id);
        if (!node) return out;
        auto report = driver::queryDeviceStatus(*node);
        if (!report) return out;
        Partition p;
        p.id = id;
        p.device = device;
        p.holderPid = static_cast<pid_t>(*holder);
        if (auto uid = sysfs.readU64(driver::sysfs::kPartitionOwnerUid)) p.ownerUid = static_cast<uint32_t>(*uid);
        if (auto gid = sysfs.readU64(driver::sysfs::kPartitionOwnerGid)) p.ownerGid = static_cast<uint32_t>(*gid);
        if (auto mode = sysfs.read(driver::sysfs::kPartitionMode))
          p.mode = static_cast<uint32_t>(std::strtoul(mode->c_str(), nullptr, 8));
        if (auto label = sysfs.read(driver::sysfs::kPartitionLabel)) p.label = *label;
        p.resources = driver::totalResources(*report);
        out.partition = std::move(p);
        return out;
      },
      [this, id](TakeOverOutcome out, bool) {
        takingOver_.erase(id);
        // Half-created or going away: the next scan sees it settled. Already known: a create's
        // answer came first.
        if (!out.partition || partitions_.count(id) != 0 || removing_.count(id) != 0) return;
        if (!hasDevice(out.partition->device)) return;
        Partition& p = *out.partition;
        if (!p.isStatic() && !processAlive(p.holderPid)) {
          const pid_t holder = p.holderPid;
          partitions_.emplace(id, std::move(p));
          remove(id, "its holder " + std::to_string(holder) + " is gone");
        } else {
          logInfo("partition " + std::to_string(id) + " on device " + std::to_string(p.device) + " re-adopted (" +
                  (p.isStatic() ? std::string("static") : "holder " + std::to_string(p.holderPid)) + ")");
          partitions_.emplace(id, std::move(p));
        }
        notifyChanged();
      });
}

void DeviceRegistry::createOn(uint32_t device, const PartitionSpec& spec,
                              std::function<void(CreateResult, bool noRoom)> done) {
  const std::string where = "device " + std::to_string(device) + ": ";
  if (!hasDevice(device)) {
    // In the tree with its first status query outstanding: not answering once that query has
    // run past the bound, else about to be listed.
    ProtocolError why = error(ENODEV, where + "no such device");
    if (devices_.count(device) != 0) {
      const auto hung = stuck(device, callBound_);
      why = hung ? error(ETIMEDOUT, *hung + " (its first status query, so it is not listed yet)")
                 : error(EAGAIN, where + "still being opened (its first status query is outstanding); try again");
    }
    post([done, why] { done(why, false); });
    return;
  }
  if (auto why = stuck(device, callBound_)) {
    post([done, why = *why] { done(error(ETIMEDOUT, why), false); });
    return;
  }
  driver::PartitionRequest request = partitionRequest(driver::PartitionOp::Create);
  request.resources = spec.resources;
  request.ownerUid = spec.ownerUid;
  request.ownerGid = spec.ownerGid;
  request.mode = spec.mode;
  request.holderPid = spec.holderPid;
  std::strncpy(request.label, spec.label.c_str(), sizeof request.label - 1);
  const auto deadline = Clock::now() + callBound_;
  call<CreateOutcome>(
      device, deadline,
      [request, spec](const driver::DeviceNode* node, const std::string& whyNot) {
        CreateOutcome out;
        if (node == nullptr) {
          out.answer = SysError{ENODEV, whyNot};
          return out;
        }
        out.answer = driver::partitionCommand(*node, request);
        if (out.answer && out.answer->status == -ENOSPC) {
          // The free count is read now, on the same thread, so it is the one that refused.
          const auto which = static_cast<driver::PartitionResource>(out.answer->shortResource);
          auto report = driver::queryDeviceStatus(*node);
          out.refusal = std::string(driver::partitionResourceName(which)) + ": " +
                        std::to_string(amountOf(spec.resources, which)) + " requested";
          out.refusal += report ? ", " + std::to_string(amountOf(driver::freeResources(*report), which)) + " free"
                                : " (free count unknown: " + report.message() + ")";
        }
        return out;
      },
      [this, device, spec, where, done](CreateOutcome out, bool late) {
        if (late) {
          // The requester was told the device did not answer; what the device did anyway is undone.
          if (out.answer && out.answer->status == 0) {
            const uint32_t id = out.answer->partitionId;
            logWarn("partition " + std::to_string(id) + " on device " + std::to_string(device) +
                    " was created after its request timed out: removing it");
            removing_.insert(id);
            removeFromDevice(device, id, "its create request timed out", {});
          }
          return;
        }
        if (!out.answer) {
          const int code = out.answer.error();
          return done(error(code == 0 ? EIO : code, where + out.answer.message()), false);
        }
        if (out.answer->status == -ENOSPC) return done(error(ENOSPC, where + out.refusal), true);
        if (out.answer->status != 0)
          return done(error(-out.answer->status, where + "partition create: " + std::strerror(-out.answer->status)),
                      false);
        Partition p;
        p.id = out.answer->partitionId;
        p.device = device;
        p.resources = out.answer->resources;
        p.ownerUid = spec.ownerUid;
        p.ownerGid = spec.ownerGid;
        p.mode = spec.mode;
        p.holderPid = spec.holderPid;
        p.label = spec.label;
        auto [it, inserted] = partitions_.insert_or_assign(p.id, std::move(p));
        (void)inserted;
        logInfo("partition " + std::to_string(it->first) + " created on device " + std::to_string(device) +
                " for uid " + std::to_string(spec.ownerUid) + " holder " + std::to_string(spec.holderPid));
        done(&it->second, false);
      },
      deadline,
      [done, where, this] {
        done(error(ETIMEDOUT,
                   where + "not answering: no answer to the partition create within " + milliseconds(callBound_)),
             false);
      });
}

void DeviceRegistry::create(std::optional<uint32_t> device, const PartitionSpec& spec, CreateDone done) {
  if (device) {
    createOn(*device, spec, [done](CreateResult result, bool) { done(std::move(result)); });
    return;
  }
  if (deviceIndices().empty()) {
    post([done, message = "no devices under " + root_.path().string()] { done(error(ENODEV, message)); });
    return;
  }
  createFirstFit(deviceIndices(), 0, spec, std::make_shared<std::vector<std::string>>(), false, std::move(done));
}

void DeviceRegistry::createFirstFit(std::vector<uint32_t> devices, std::size_t next, PartitionSpec spec,
                                    std::shared_ptr<std::vector<std::string>> refusals, bool unanswered,
                                    CreateDone done) {
  if (next == devices.size()) {
    // No device had room (or answered): every device's reason, in order.
    std::string message = "no device has room: ";
    for (std::size_t i = 0; i < refusals->size(); ++i) message += (i == 0 ? "" : "; ") + (*refusals)[i];
    post([done, message, unanswered] { done(error(unanswered ? ETIMEDOUT : ENOSPC, message)); });
    return;
  }
  const uint32_t device = devices[next];
  if (auto why = stuck(device, unresponsiveAfter())) {
    // Not queued behind a call that holds the device: the next device may have room now.
    refusals->push_back(*why);
    createFirstFit(devices, next + 1, spec, refusals, true, done);
    return;
  }
  createOn(device, spec, [=, this](CreateResult result, bool noRoom) {
    auto* e = std::get_if<ProtocolError>(&result);
    if (e == nullptr) return done(std::move(result));
    // A device that is gone or not answering is passed over like one without room; any other
    // refusal (EPERM, an error state) answers the request.
    const bool passOver = noRoom || e->errnum == ETIMEDOUT || e->errnum == ENODEV;
    if (!passOver) return done(std::move(result));
    refusals->push_back(e->message);
    createFirstFit(devices, next + 1, spec, refusals, unanswered || !noRoom, done);
  });
}

// How far a group create has come: the partitions made so far and why devices were passed over.
struct DeviceRegistry::GroupProgress {
  uint32_t count = 0;          // partitions the group needs
  std::vector<uint32_t> made;  // their ids, in device order
  std::vector<std::string> refusals;
  bool unanswered = false;  // a device was passed over for not answering
};

void DeviceRegistry::createGroup(std::vector<uint32_t> devices, uint32_t count, const PartitionSpec& spec,
                                 GroupDone done) {
  const bool listed = !devices.empty();
  if (!listed) devices = deviceIndices();
  if (listed) count = static_cast<uint32_t>(devices.size());
  if (devices.size() < count) {
    post([done, message = "deviceCount: " + std::to_string(count) + " devices requested, " +
                          std::to_string(devices.size()) + " present under " +
                          root_.path().string()] { done(error(ENOSPC, message)); });
    return;
  }
  auto progress = std::make_shared<GroupProgress>();
  progress->count = count;
  createGroupFrom(std::move(devices), 0, listed, spec, std::move(progress), std::move(done));
}

void DeviceRegistry::createGroupFrom(std::vector<uint32_t> devices, std::size_t next, bool listed, PartitionSpec spec,
                                     std::shared_ptr<GroupProgress> progress, GroupDone done) {
  if (progress->made.size() == progress->count) {
    std::vector<Partition*> group;
    for (uint32_t id : progress->made) {
      Partition* p = find(id);
      // Gone with its device while the others were made: the group is not whole.
      if (p == nullptr)
        return abandonGroup(*progress, error(ENODEV, "partition " + std::to_string(id) + " vanished with its device"),
                            done);
      group.push_back(p);
    }
    return done(std::move(group));
  }
  const std::size_t needed = progress->count - progress->made.size();
  if (devices.size() - next < needed) {
    // Too few devices are left to try: the ones passed over say why.
    std::string message = "a group of " + std::to_string(progress->count) + " devices cannot be completed: ";
    for (std::size_t i = 0; i < progress->refusals.size(); ++i) message += (i == 0 ? "" : "; ") + progress->refusals[i];
    return abandonGroup(*progress, error(progress->unanswered ? ETIMEDOUT : ENOSPC, message), done);
  }
  const uint32_t device = devices[next];
  if (!listed) {
    if (auto why = stuck(device, unresponsiveAfter())) {
      progress->refusals.push_back(*why);
      progress->unanswered = true;
      return createGroupFrom(std::move(devices), next + 1, listed, std::move(spec), std::move(progress),
                             std::move(done));
    }
  }
  createOn(device, spec, [=, this](CreateResult result, bool noRoom) {
    if (auto* p = std::get_if<Partition*>(&result)) {
      progress->made.push_back((*p)->id);
      return createGroupFrom(devices, next + 1, listed, spec, progress, done);
    }
    auto& e = std::get<ProtocolError>(result);
    const bool passOver = !listed && (noRoom || e.errnum == ETIMEDOUT || e.errnum == ENODEV);
    if (!passOver) {
      if (listed) e.message = "devices[" + std::to_string(next) + "]: " + e.message;
      return abandonGroup(*progress, std::move(e), done);
    }
    progress->refusals.push_back(e.message);
    progress->unanswered = progress->unanswered || !noRoom;
    createGroupFrom(devices, next + 1, listed, spec, progress, done);
  });
}

void DeviceRegistry::abandonGroup(const GroupProgress& progress, ProtocolError why, const GroupDone& done) {
  for (uint32_t id : progress.made)
    if (partitions_.count(id) != 0) remove(id, "its group could not be completed");
  done(std::move(why));
}

std::optional<ProtocolError> DeviceRegistry::remove(uint32_t id, const std::string& why, RemoveDone done) {
  auto it = partitions_.find(id);
  if (it == partitions_.end()) return error(ENOENT, "partition " + std::to_string(id) + ": no such partition");
  const Partition p = it->second;
  partitions_.erase(it);
  if (!hasDevice(p.device)) {
    if (done) post([done] { done(std::nullopt); });
    return std::nullopt;
  }
  removing_.insert(id);
  removeFromDevice(p.device, id, why, std::move(done));
  return std::nullopt;
}

void DeviceRegistry::removeFromDevice(uint32_t device, uint32_t id, const std::string& why, RemoveDone done) {
  if (devices_.count(device) == 0) {  // gone with its device
    removing_.erase(id);
    if (done) post([done] { done(std::nullopt); });
    return;
  }
  driver::PartitionRequest request = partitionRequest(driver::PartitionOp::Remove);
  request.partitionId = id;
  const auto deadline = Clock::now() + callBound_;
  std::function<void()> timedOut;
  if (done)
    timedOut = [done, id, device, this] {
      done(error(ETIMEDOUT, "partition " + std::to_string(id) + ": device " + std::to_string(device) +
                                " did not answer the removal within " + milliseconds(callBound_) +
                                "; it is removed when the device answers"));
    };
  // Always run, however long it waited: the partition is already forgotten here.
  call<Result<driver::PartitionResponse>>(
      device, Clock::time_point::max(),
      [request](const driver::DeviceNode* node, const std::string& whyNot) -> Result<driver::PartitionResponse> {
        if (node == nullptr) return SysError{ENODEV, whyNot};
        return driver::partitionCommand(*node, request);
      },
      [this, id, why, done](Result<driver::PartitionResponse> answer, bool late) {
        removing_.erase(id);
        std::optional<ProtocolError> failure;
        if (!answer && answer.error() != ENOENT && answer.error() != ENODEV) {
          // Still on the device: the next scan finds it untracked and decides again.
          logWarn("partition " + std::to_string(id) + ": remove failed: " + answer.message());
          failure = error(answer.error(), "partition " + std::to_string(id) + ": " + answer.message());
        } else {
          logInfo("partition " + std::to_string(id) + " removed: " + why);
        }
        notifyChanged();
        if (done && !late) done(failure);
      },
      deadline, std::move(timedOut));
}

Partition* DeviceRegistry::find(uint32_t id) {
  auto it = partitions_.find(id);
  return it == partitions_.end() ? nullptr : &it->second;
}

void DeviceRegistry::deviceInfos(std::function<void(std::vector<DeviceInfo>)> done) {
  // What a device's thread reads for a listing: the device's STATUS, and that of each of its
  // partitions' nodes (their capacity and what their holders' activations left free).
  struct Figures {
    Result<driver::DeviceStatusResponse> device = SysError{ETIMEDOUT, "waiting"};
    std::vector<PartitionUsage> partitions;
    std::optional<std::vector<uint32_t>> p2pPeers;
  };
  struct Gather {
    std::map<uint32_t, Figures> reports;
    std::size_t waiting = 0;
    std::function<void(std::vector<DeviceInfo>)> done;
  };
  auto gather = std::make_shared<Gather>();
  gather->done = std::move(done);
  // Builds the answer once every device has answered or timed out; the table is read then.
  auto finish = [this, gather] {
    std::vector<DeviceInfo> out;
    for (auto& [index, figures] : gather->reports) {
      auto device = devices_.find(index);
      if (device == devices_.end() || !device->second.ready) continue;  // went away meanwhile
      const auto& report = figures.device;
      DeviceInfo d;
      d.id = index;
      const auto& known = report ? report : device->second.status;
      if (report)
        d.status = driver::firmwareStateName(report->firmwareState);
      else
        d.status = report.error() == ETIMEDOUT ? "Unresponsive" : "Gone";
      if (known) {
        d.total = driver::totalResources(*known);
        d.free = driver::freeResources(*known);
      }
      for (const auto& [id, p] : partitions_)
        if (p.device == index) d.partitions.push_back(id);
      for (const auto& usage : figures.partitions)
        if (std::find(d.partitions.begin(), d.partitions.end(), usage.id) != d.partitions.end())
          d.partitionUsage.push_back(usage);
      d.p2pPeers = figures.p2pPeers;
      out.push_back(std::move(d));
    }
    gather->done(std::move(out));
  };
  // A listing waits behind a device's other calls only as long as a healthy device ever takes;
  // a device that does not answer by then is listed Unresponsive with its last figures, and one
  // already held that long by a call is not asked at all.
  const auto deadline = Clock::now() + unresponsiveAfter();
  for (uint32_t index : deviceIndices()) {
    if (auto why = stuck(index, unresponsiveAfter())) {
      gather->reports[index].device = SysError{ETIMEDOUT, *why};
      continue;
    }
    gather->reports[index].device = SysError{ETIMEDOUT, "waiting"};
    ++gather->waiting;
    const uint64_t generation = devices_.at(index).generation;
    std::vector<uint32_t> partitionIds;
    for (const auto& [id, p] : partitions_)
      if (p.device == index) partitionIds.push_back(id);
    call<Figures>(
        index, deadline,
        [root = root_, index, partitionIds](const driver::DeviceNode* node, const std::string& whyNot) -> Figures {
          Figures figures;
          if (node == nullptr) {
            figures.device = SysError{ETIMEDOUT, whyNot};
            return figures;
          }
          figures.device = driver::queryDeviceStatus(*node);
          // On this thread: a sysfs read goes to the same server as the device's calls.
          figures.p2pPeers = driver::readP2pPeers(driver::SysfsDevice(root, index));
          // A partition's node answers for the partition; one that cannot be read now (removed
          // meanwhile) is left out of the listing's figures.
          for (uint32_t id : partitionIds) {
            auto partitionNode = driver::DeviceNode::open(root, id);
            if (!partitionNode) continue;
            if (auto status = driver::queryDeviceStatus(*partitionNode))
              figures.partitions.push_back({id, driver::totalResources(*status), driver::freeResources(*status)});
          }
          return figures;
        },
        [this, index, generation, gather, finish](Figures figures, bool late) {
          auto device = devices_.find(index);
          if (figures.device && device != devices_.end() && device->second.generation == generation)
            device->second.status = figures.device;
          if (late) return;
          gather->reports.insert_or_assign(index, std::move(figures));
          if (--gather->waiting == 0) finish();
        },
        deadline,
        [gather, finish] {
          if (--gather->waiting == 0) finish();
        });
  }
  if (gather->waiting == 0) post(finish);
}

void DeviceRegistry::refreshStatus() {
  for (auto& [index, device] : devices_) {
    if (!device.ready || device.statusQueued || !device.worker->idle()) continue;
    device.statusQueued = true;
    const uint64_t generation = device.generation;
    const uint32_t at = index;
    call<Result<driver::DeviceStatusResponse>>(
        index, Clock::now() + callBound_,
        [](const driver::DeviceNode* node, const std::string& whyNot) -> Result<driver::DeviceStatusResponse> {
          if (node == nullptr) return SysError{ENODEV, whyNot};
          return driver::queryDeviceStatus(*node);
        },
        [this, at, generation](Result<driver::DeviceStatusResponse> report, bool) {
          auto it = devices_.find(at);
          if (it == devices_.end() || it->second.generation != generation) return;
          it->second.statusQueued = false;
          const auto state = [](const Result<driver::DeviceStatusResponse>& r) {
            return r ? static_cast<int64_t>(r->firmwareState) : -1;
          };
          const bool changed = state(report) != state(it->second.status);
          it->second.status = std::move(report);
          if (changed) notifyChanged();
        });
  }
}

bool DeviceRegistry::hasDevice(uint32_t index) const {
  auto it = devices_.find(index);
  return it != devices_.end() && it->second.ready;
}

std::vector<uint32_t> DeviceRegistry::deviceIndices() const {
  std::vector<uint32_t> out;
  for (const auto& [index, device] : devices_)
    if (device.ready) out.push_back(index);
  return out;
}

std::optional<Resources> DeviceRegistry::totals(uint32_t index) const {
  auto it = devices_.find(index);
  if (it == devices_.end() || !it->second.ready || !it->second.status) return std::nullopt;
  return driver::totalResources(*it->second.status);
}

Result<driver::DeviceStatusResponse> DeviceRegistry::status(uint32_t index) const {
  if (!hasDevice(index)) return SysError{ENODEV, "device " + std::to_string(index) + " is not open"};
  if (auto why = stuck(index, callBound_)) return SysError{ETIMEDOUT, *why};
  return devices_.at(index).status;
}

std::optional<std::string> DeviceRegistry::pciAddress(uint32_t index) const {
  auto it = devices_.find(index);
  if (it == devices_.end() || !it->second.ready) return std::nullopt;
  return it->second.busId;
}

PartitionInfo DeviceRegistry::info(const Partition& p) const {
  PartitionInfo i;
  i.id = p.id;
  i.device = p.device;
  i.node = root_.nodePath(p.id).string();
  i.ownerUid = p.ownerUid;
  i.ownerGid = p.ownerGid;
  i.holderPid = p.holderPid;
  i.isStatic = p.isStatic();
  i.label = p.label;
  i.resources = p.resources;
  return i;
}

}  // namespace qaic::qaicd
