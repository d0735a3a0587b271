// SPDX-License-Identifier: Apache-2.0
// What qaicd knows about the devices under its root and the partitions on them, and the only
// place that changes them: partitions are created and removed through MANAGE on the parent's
// node (libqaic/driver partitionCommand), who holds them is read from sysfs. The event loop
// calls rescan() on every poll tick or udev event. Every call on a device node runs on that
// device's own thread (DeviceWorker.hpp), so a device that hangs in a call holds up nothing but
// its own requests, and those only up to the bound; everything else lives on the loop thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "DeviceWorker.hpp"
#include "base/UniqueFd.hpp"
#include "driver/DeviceNode.hpp"
#include "driver/DeviceProtocol.hpp"
#include "driver/DeviceRoot.hpp"
#include "qaicd/Protocol.hpp"

namespace qaic::qaicd {

struct Partition {
  uint32_t id = 0;
  uint32_t device = 0;
  Resources resources;
  uint32_t ownerUid = 0, ownerGid = 0, mode = 0600;
  pid_t holderPid = 0;  // 0: static
  std::string label;
  uint64_t connection = 0;  // the connection the lease is bound to; 0: none (static, or re-adopted)
  bool isStatic() const { return holderPid == 0; }
};

struct PartitionSpec {
  Resources resources;
  uint32_t ownerUid = 0, ownerGid = 0, mode = 0600;
  pid_t holderPid = 0;
  std::string label;
};

class DeviceRegistry {
 public:
  using Clock = std::chrono::steady_clock;
  using CreateResult = std::variant<Partition*, ProtocolError>;
  using CreateDone = std::function<void(CreateResult)>;
  using RemoveDone = std::function<void(std::optional<ProtocolError>)>;
  using GroupResult = std::variant<std::vector<Partition*>, ProtocolError>;
  using GroupDone = std::function<void(GroupResult)>;

  explicit DeviceRegistry(driver::DeviceRoot root) : root_(std::move(root)) {}
  DeviceRegistry(const DeviceRegistry&) = delete;
  DeviceRegistry& operator=(const DeviceRegistry&) = delete;
  ~DeviceRegistry();

  // `callBound`: how long an answer may wait for a device (docs/qaicd.md, "Device calls").
  Result<void> start(std::chrono::milliseconds callBound);
  // The event loop watches these two and calls the matching handler: device calls' results,
  // and the deadlines of the answers waiting for them.
  int resultsFd() const { return results_->fd(); }
  int deadlineFd() const { return deadlineTimer_.get(); }
  void onResults();
  void onDeadline();
  // Called on the loop after the devices or partitions changed through a device call's result
  // (a device opened, a partition taken over or removed, a firmware state change).
  void setChangeListener(std::function<void()> listener) { changed_ = std::move(listener); }
  // Runs the loop's share (results, deadlines) until no device call is outstanding or until
  // `deadline`: the initial scan is complete before qaicd says it is ready.
  void settle(Clock::time_point deadline);

  const driver::DeviceRoot& root() const { return root_; }

  // Follows the tree: opens devices that appeared (on their own thread: they count once
  // open), forgets devices that went away (with their partitions), forgets partitions whose node
  // vanished (a reset ends them), and takes over partitions it does not track yet, as after a
  // restart: a live holder's lease is kept, a dead holder's partition is removed, holder 0 is a
  // static partition.
  void rescan();

  // `device` absent: the first device with room. ENODEV for an unknown device, ENOSPC naming
  // the short resource ("device 0: numNsp: 12 requested, 4 free"), ETIMEDOUT naming a device
  // that did not answer within the bound. `done` runs later on the loop, never inside create().
  void create(std::optional<uint32_t> device, const PartitionSpec& spec, CreateDone done);
  // One partition of `spec` on each of `devices` (every one listed), or on the first `count`
  // devices with room when `devices` is empty: all of them or none, the ones made removed again
  // when the group cannot be completed. The refusal names each device that could not take its
  // part. `done` as for create.
  void createGroup(std::vector<uint32_t> devices, uint32_t count, const PartitionSpec& spec, GroupDone done);
  // Forgets the partition at once and removes it from its device; ENOENT when unknown. A
  // partition already gone from the device (reset, removal) is only forgotten. `done` (later, on
  // the loop) tells how the device's removal went, or ETIMEDOUT when it did not answer within
  // the bound (the removal still happens when the device answers).
  std::optional<ProtocolError> remove(uint32_t id, const std::string& why, RemoveDone done = {});
  // Every open device with fresh figures; one that does not answer within the bound (or is
  // known to be stuck in a call) is "Unresponsive" with its last figures. `done` as for create.
  void deviceInfos(std::function<void(std::vector<DeviceInfo>)> done);
  // Queries the status of every idle device in the background (for status()).
  void refreshStatus();

  // Partitions found on the devices are still being read: what is on a device is not known yet,
  // so nothing should be created to complete it (static and profile partitions wait).
  bool takingOver() const { return !takingOver_.empty(); }

  Partition* find(uint32_t id);
  std::map<uint32_t, Partition>& partitions() { return partitions_; }
  PartitionInfo info(const Partition& p) const;
  bool hasDevice(uint32_t index) const;  // open and answering its first status query
  std::vector<uint32_t> deviceIndices() const;
  // The device's totals as its last status query reported them; nullopt for an unknown device.
  std::optional<Resources> totals(uint32_t index) const;
  // The last STATUS query's answer (ENODEV for an unknown device, ETIMEDOUT for a device stuck
  // in a call for longer than the bound).
  Result<driver::DeviceStatusResponse> status(uint32_t index) const;
  // The device's PCI address (DRM_IOCTL_GET_UNIQUE, asked when it was opened).
  std::optional<std::string> pciAddress(uint32_t index) const;

 private:
  struct Device {
    uint64_t generation = 0;
    std::unique_ptr<DeviceWorker> worker;
    bool ready = false;
    bool statusQueued = false;
    Result<driver::DeviceStatusResponse> status = SysError{EAGAIN, "no status read yet"};
    std::optional<std::string> busId;
  };
  // Runs `work` on the device's thread unless it is still queued at `runBy`; `done` gets its
  // result on the loop (`late`: after `timedOut` ran, at `answerBy`). Without timedOut there
  // is no answer deadline.
  template <typename T>
  void call(uint32_t device, Clock::time_point runBy,
            std::function<T(const driver::DeviceNode*, const std::string&)> work,
            std::function<void(T, bool late)> done, Clock::time_point answerBy = Clock::time_point::max(),
            std::function<void()> timedOut = {});
  void post(std::function<void()> work) { results_->post(std::move(work)); }
  void armDeadline();
  // "device 0: not answering: a device call has been running for 3200 ms" when its current
  // call has run for `after` or longer.
  std::optional<std::string> stuck(uint32_t index, Clock::duration after) const;
  // A call this long is not a busy device but a hung one (partition and status calls take
  // milliseconds): listings and first-fit creates stop waiting for it.
  Clock::duration unresponsiveAfter() const {
    return std::min<Clock::duration>(callBound_, std::chrono::milliseconds(1000));
  }
  void createOn(uint32_t device, const PartitionSpec& spec, std::function<void(CreateResult, bool noRoom)> done);
  struct GroupProgress;
  void createGroupFrom(std::vector<uint32_t> devices, std::size_t next, bool listed, PartitionSpec spec,
                       std::shared_ptr<GroupProgress> progress, GroupDone done);
  void abandonGroup(const GroupProgress& progress, ProtocolError why, const GroupDone& done);
  void createFirstFit(std::vector<uint32_t> devices, std::size_t next, PartitionSpec spec,
                      std::shared_ptr<std::vector<std::string>> refusals, bool unanswered, CreateDone done);
  void removeFromDevice(uint32_t device, uint32_t id, const std::string& why, RemoveDone done);
  void takeOver(uint32_t id);
  void forgetDevice(uint32_t index);
  void notifyChanged() {
    if (changed_) changed_();
  }

  driver::DeviceRoot root_;
  std::chrono::milliseconds callBound_{5000};
  std::shared_ptr<LoopMailbox> results_;
  UniqueFd deadlineTimer_;
  std::function<void()> changed_;
  std::map<uint32_t, Device> devices_;                  // by index, from the moment their thread opens them
  std::vector<std::unique_ptr<DeviceWorker>> retired_;  // of devices that went away, stopping
  uint64_t nextGeneration_ = 1;
  std::map<uint32_t, Partition> partitions_;
  std::set<uint32_t> removing_, takingOver_;  // partitions with a device call outstanding
  struct Deadline {
    Clock::time_point at;
    std::function<void()> timedOut;
  };
  std::map<uint64_t, Deadline> deadlines_;  // by call number
  uint64_t nextCall_ = 1;
  std::size_t outstanding_ = 0;  // device calls whose results have not come back
};

// Whether process `pid` exists (a zombie counts as gone).
bool processAlive(pid_t pid);

}  // namespace qaic::qaicd
