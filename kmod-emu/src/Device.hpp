// SPDX-License-Identifier: Apache-2.0
// One emulated AIC100: its resources, open files, DBCs and their activations, faults, and the
// sysfs view of all that. The FUSE layer calls open/release/ioctl/attribute; channels call back
// through ChannelHost. One mutex guards the control state; it is never held while joining a
// channel thread or while copying request data. The code is filed by concern, as the kernel's
// drivers/accel/qaic files it: each group of members below names the file that defines it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "BufferMemory.hpp"
#include "Config.hpp"
#include "DbcChannel.hpp"
#include "DeviceProgram.hpp"
#include "MemoryFile.hpp"
#include "ModuleParameters.hpp"
#include "OpenFile.hpp"
#include "PeerGroups.hpp"
#include "driver/VendorManage.hpp"

namespace qaic::emu {

// Where partitions get their ids (unique across the emulator's devices) and their nodes in the
// file tree: implemented by the Emulator. Called with the Device mutex held.
class PartitionNodes {
 public:
  virtual ~PartitionNodes() = default;
  virtual uint32_t allocatePartitionId() = 0;
  // parentPciAddress: the device's own, which its partition's `device` link leads to.
  virtual void publishPartition(uint32_t deviceIndex, uint32_t partitionId, const std::string& parentPciAddress) = 0;
  virtual void withdrawPartition(uint32_t partitionId) = 0;
};

// What every device of one emulator instance shares.
struct DeviceContext {
  const ShmDirectory* shm = nullptr;
  ProgramLoader loader;
  std::atomic<uint64_t>* nextMmapOffset = nullptr;
  std::chrono::milliseconds semaphoreTimeout{10000};
  PartitionNodes* partitionNodes = nullptr;  // null: partitions get ids but no nodes
  // Null: the device makes its own (a device driven alone, as by the fuzz harness).
  std::shared_ptr<MemoryRegistry> memories;
  std::shared_ptr<ModuleParameters> parameters;
  // Owner, group and mode of the devices' nodes: their memory files get the same.
  ResolvedNodePolicy nodePolicy{0600, 0, 0};
  // True while `mmap` of a node maps its BOs (FUSE passthrough); null: false.
  std::shared_ptr<const std::atomic<bool>> passthrough;
  // The host cores the NSPs of every device compute on. Null: the device makes its own.
  std::shared_ptr<ComputePool> compute;
  // The multi-device programs' peer groups of every device. Null: the device makes its own.
  std::shared_ptr<PeerGroups> peerGroups;
};

// What a peer-group request (DeviceProtocol.hpp, "QPGR") asks of the activation right after it.
struct PeerJoin {
  uint64_t token = 0;
  uint32_t part = 0;
  uint32_t parts = 0;
};

// A DBC's state as mainline's dbc<N>_state reports it.
enum class DbcState : uint8_t {
  Idle = 0,
  Assigned = 1,
  BeforeShutdown = 2,
  AfterShutdown = 3,
  BeforePowerUp = 4,
  AfterPowerUp = 5,
};

// The caller of one ioctl: FUSE copies the fixed-size argument, the rest is read from `pid`.
struct IoctlCall {
  pid_t pid = 0;  // calling thread
  const void* in = nullptr;
  std::size_t inSize = 0;
  void* out = nullptr;
  std::size_t outSize = 0;
};

// The fixed argument of an ioctl as its handler reads and answers it (the dispatch sized both
// buffers to the handler's own struct).
template <typename T>
T argIn(const IoctlCall& c) {
  T v;
  std::memcpy(&v, c.in, sizeof v);
  return v;
}
template <typename T>
void argOut(const IoctlCall& c, const T& v) {
  std::memcpy(c.out, &v, sizeof v);
}

// One transaction of a MANAGE message: where it starts in the message, and its header.
struct ManageTransaction {
  std::size_t offset;
  qaic_manage_trans_hdr hdr;
};
// What a MANAGE call has answered so far: the reply transactions, how many, and the DBCs it
// activated (deactivated again when a later transaction fails the call).
struct ManageAnswer {
  std::vector<std::byte> bytes;
  uint32_t count = 0;
  std::vector<uint32_t> activated;
};

class Device final : public ChannelHost {
 public:
  enum class Status { Initializing, Ready, Error };

  // ---- Lifecycle and faults (Device.cpp) ----
  Device(uint32_t index, DeviceConfig config, DeviceContext context);
  ~Device() override;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  uint32_t index() const { return index_; }
  bool removed() const { return removed_.load(); }

  // Control plane. Errors are positive errno values. `partitionId` nonzero opens the node of
  // that partition (EACCES for anyone but its owner, its group if the mode allows, or root).
  std::shared_ptr<OpenFile> open(uid_t uid, gid_t gid, int& error, uint32_t partitionId = 0);
  void release(const std::shared_ptr<OpenFile>& file);
  // The memory file of the node `f` was opened on (the device's, or its partition's), created at
  // first use. Null with an errno when it cannot be created.
  std::shared_ptr<DeviceMemoryFile> nodeMemory(const OpenFile& f, int& error);

  // Aborts every activation (ABORTED, status register Stopped); the device serves no more ioctls.
  void shutdown();

  // ---- The ioctl table and its dispatch (DeviceIoctlTable.cpp) ----
  // Any ioctl on the node, dispatched as drm_ioctl() does: ENOTTY for another ioctl type, EINVAL
  // for a number neither the DRM core nor the driver defines, the core's permission checks, then
  // the handler.
  int ioctl(OpenFile& file, unsigned cmd, const IoctlCall& call);

  // ---- sysfs and the status report (DeviceSysfs.cpp) ----
  // The PCI address its class directory's device/ stands for ("0000:01:00.0"): GET_UNIQUE.
  std::string pciAddress() const;
  // sysfs: the attribute files of sys/class/accel/accelN (names relative to it): mainline's
  // dbc<N>_state and device/{vendor,device,ce_count,ue_count,ue_nonfatal_count}, and the
  // emulator's own under qaic-emu/ ("qaic-emu/nsp_free", "qaic-emu/fault/reset"). Writable ones
  // are the fault files.
  static std::vector<std::string> attributeNames(uint32_t dbcs);
  static std::vector<std::string> writableAttributeNames();
  static bool attributeWritable(const std::string& name);
  // The firmware's identity strings (qaic-emu/serial, ...), the PCI link attributes and hwmon
  // (device/...): what qaic-util -q reads of a card besides its resources (SysfsNames.hpp).
  static const std::vector<std::string> kIdentityAttributes;
  // A partition's class directory: its parent's PCI attributes and identity, the device's
  // counters under qaic-emu/ (the partition's totals and free) and
  // qaic-emu/partition/{parent,owner_uid,owner_gid,mode,holder_pid,label}.
  static std::vector<std::string> partitionAttributeNames();
  std::optional<std::string> readAttribute(const std::string& name, uint32_t partitionId = 0);
  // Owner, group and mode of a partition's node; nullopt once it ended.
  struct NodeOwner {
    uid_t uid;
    gid_t gid;
    uint32_t mode;
  };
  std::optional<NodeOwner> partitionOwner(uint32_t partitionId);
  int writeAttribute(const std::string& name, const std::string& text);  // errno

  // What the firmware reports about the device (the MANAGE status query; qaic-emu/* shows the
  // same figures); a partition's are its own capacity and what is left of it.
  driver::DeviceStatusResponse statusReport(const Partition* partition);

  // ---- ChannelHost: a request's path (DeviceDataPath.cpp) ----
  std::shared_ptr<BufferObject> translate(const Activation& act, uint32_t handle, uint64_t offset, uint64_t length,
                                          uint32_t dir) override;
  bool completeKernelSlot(Activation& act, uint32_t slot, uint16_t code) override;
  // ---- ChannelHost: faults (Device.cpp), and what the channels share (defined here) ----
  uint16_t takeInjectedFault() override;
  bool waitWhileHung(const Activation& act, std::chrono::milliseconds limit) override;
  std::chrono::milliseconds semaphoreTimeout() const override { return ctx_.semaphoreTimeout; }
  ComputePool& computePool() override { return *ctx_.compute; }
  const ModuleParameters& moduleParameters() const override { return *ctx_.parameters; }
  DatapathCounters& datapathCounters() override { return datapath_; }

 private:
  using Lock = std::unique_lock<std::mutex>;
  friend struct IoctlDispatch;  // the dispatch table of ioctl() names the handlers below

  // ---- The DRM core's ioctls as an accel file sees them (DeviceIoctlTable.cpp) ----
  int drmVersion(OpenFile& f, const IoctlCall& c);
  int drmGetUnique(OpenFile& f, const IoctlCall& c);
  int drmGetClient(OpenFile& f, const IoctlCall& c);
  int drmGetStats(OpenFile& f, const IoctlCall& c);
  int drmGetCap(OpenFile& f, const IoctlCall& c);
  int drmMasterless(OpenFile& f, const IoctlCall& c);
  int setClientName(OpenFile& f, const IoctlCall& c);

  // ---- Buffer objects: creation, GEM handles, PRIME (DeviceDataPath.cpp) ----
  int createBo(OpenFile& f, const IoctlCall& c);
  int mmapBo(OpenFile& f, const IoctlCall& c);
  // Handles (mutex held): a new handle of `f` naming `bo` (0 when the file ran out of handles),
  // and the end of one (GEM_CLOSE, file release).
  uint32_t addHandle(OpenFile& f, const std::shared_ptr<BufferObject>& bo);
  bool dropHandle(OpenFile& f, uint32_t handle);
  int gemClose(OpenFile& f, const IoctlCall& c);
  int gemFlink(OpenFile& f, const IoctlCall& c);
  int gemOpen(OpenFile& f, const IoctlCall& c);
  int primeHandleToFd(OpenFile& f, const IoctlCall& c);
  int primeFdToHandle(OpenFile& f, const IoctlCall& c);

  // ---- Slices, execute, wait (DeviceDataPath.cpp) ----
  int attachSlice(OpenFile& f, const IoctlCall& c);
  int executeBo(OpenFile& f, const IoctlCall& c);
  int partialExecuteBo(OpenFile& f, const IoctlCall& c);
  int execute(OpenFile& f, const IoctlCall& c, bool partial);
  int waitBo(OpenFile& f, const IoctlCall& c);
  int perfStats(OpenFile& f, const IoctlCall& c);
  int detachSlice(OpenFile& f, const IoctlCall& c);
  int dbcInfo(OpenFile& f, const IoctlCall& c);

  // ---- MANAGE (DeviceManage.cpp) ----
  int manageIoctl(OpenFile& f, const IoctlCall& c);
  int manage(OpenFile& f, const IoctlCall& c);
  int resourceGroup(OpenFile& f, const driver::ResourceGroupRequest& req, driver::ResourceGroupResponse& resp);
  int partitionCommand(OpenFile& f, const driver::PartitionRequest& req, driver::PartitionResponse& resp);
  // Waits until `deadline` while the control_hang fault keeps the firmware from answering:
  // 0, ETIMEDOUT when it never answered, ENODEV when the device went away meanwhile.
  int waitForFirmware(Clock::time_point deadline);
  int dmaTransfer(OpenFile& f, const qaic_manage_trans_dma_xfer& t, bool continuation, pid_t pid);
  // `peer`: the activation is that part of a peer group; a part the group refuses is not
  // activated, `refusal` says why (an errno and a message naming the devices) and 0 is returned.
  int activate(OpenFile& f, const qaic_manage_trans_activate_to_dev& t, pid_t pid, uint32_t& dbcId,
               const PeerJoin* peer = nullptr, PeerGroups::Refusal* refusal = nullptr);
  // A peer-group request at `index` of `trans` with its ACTIVATE right after it: both answers.
  int peerActivate(OpenFile& f, const std::vector<std::byte>& msg, const std::vector<ManageTransaction>& trans,
                   std::size_t index, pid_t pid, ManageAnswer& answer);
  int deactivate(OpenFile& f, uint32_t dbcId);

  // ---- The vendor's firmware commands in MANAGE (DeviceVendorManage.cpp) ----
  // A vendor command: `rest` starts with its PASSTHROUGH_FROM_USR transaction; the command may
  // take the transaction right after it (a load's DMA transfer, an activation's or a
  // deactivation's DBC transaction), and `used` says how many it took. Its refusals are firmware
  // status codes in the reply; the return value is an errno only for what mainline's transport
  // would refuse (EINVAL, EFAULT) or a device gone (ENODEV).
  int vendorCommand(OpenFile& f, const std::vector<std::byte>& msg, std::span<const ManageTransaction> rest, pid_t pid,
                    ManageAnswer& answer, std::size_t& used);
  driver::vendor::StatusReply vendorStatus(const Partition* partition);
  driver::vendor::ResourceInfo vendorResources(const driver::DeviceStatusResponse& report) const;
  driver::vendor::PerformanceInfo vendorPerformance() const;

  // ---- sysfs and the status report (DeviceSysfs.cpp) ----
  std::optional<std::string> readIdentityAttribute(const std::string& name) const;  // mutex_ held
  std::optional<std::string> readPartitionAttribute(const Partition& p, const std::string& name);
  driver::DeviceStatusResponse statusReportLocked(const Partition* partition);

  // ---- Lifecycle and faults (Device.cpp) ----
  // Where an activation needing `need` (DDR aside) draws from: the group ACTIVATE names
  // (`namedGroup`), else the first of the file's unnamed groups that covers it, else the file's
  // pool. 0, ENOSPC when it does not cover `need`, EINVAL for an unknown named group.
  int drawPoolLocked(OpenFile& f, uint32_t namedGroup, const rt::Resources& need, rt::Resources*& pool,
                     uint32_t& groupId);
  // The lowest idle DBC id, or dbcs_.size() when every DBC is taken.
  uint32_t firstFreeDbcLocked() const;
  // Returns `charged` to resource group `groupId` of `f` (while it exists), or to `f`'s pool for 0.
  void giveBackLocked(OpenFile& f, uint32_t groupId, const rt::Resources& charged);
  // What an activation of the load holding `constants` is charged: `needs.charge`, without the
  // constants while another activation of the load already holds them on the device.
  static rt::Resources activationCharge(const ProgramNeeds& needs, const ResidentConstants& constants);
  // Logs an activation refused for device memory, once ("program 'p' needs X of device memory
  // (...); Y of Z free"), and returns its errno, ENOMEM. `capacity` is the total of what it drew
  // from: the device, its partition or its resource group.
  int refuseForMemory(uint32_t loadId, const ProgramNeeds& needs, uint64_t needBytes, uint64_t freeBytes,
                      uint64_t capacity) const;
  // The total of the pool drawPoolLocked chose (group `groupId`, else the file's partition, else
  // the device).
  uint64_t poolCapacityLocked(const OpenFile& f, uint32_t groupId) const;
  // Removes an activation from every table and gives its resources back (mutex held); the
  // caller then ends it with retire() outside the mutex.
  std::shared_ptr<Activation> detachActivation(OpenFile& f, uint32_t dbcId);
  // Stops a detached activation's channel (pending requests complete with `code`), then
  // detaches the BOs sliced to it, as the kernel's release_dbc does: they may be sliced again,
  // and those no handle names any more go, with their memory.
  void retire(Activation& act, uint16_t code, driver::DeviceStatus status);
  // Breaks the peer groups of this device's activations: "<accelN (part p ...)> `what`".
  void breakPeerGroups(const std::string& what);
  // Aborts the activations of every file, or only of the files opened on `partition`.
  void abortActivations(uint16_t code, driver::DeviceStatus status, const Partition* partition = nullptr);
  // Ends every partition (mutex held): their nodes go, their capacity returns to free_.
  void endPartitionsLocked();
  // Stops the activations of partitions a MANAGE call removed (outside the mutex).
  void stopRemovedPartitions();
  int reset();  // 0, or ETIMEDOUT when the firmware did not boot within mhi_timeout_ms
  // qaic-emu/fault/error: status Error (activations aborted, new ones refused) until a reset or
  // writing 0 makes it Ready again.
  void enterError();
  void remove();

  // ---- State, shared by the files above ----
  const uint32_t index_;
  const DeviceConfig config_;
  DeviceContext ctx_;
  const rt::Resources total_;

  std::mutex mutex_;
  std::mutex memoryMutex_;  // guards memory_ and the partitions' memory files
  std::shared_ptr<DeviceMemoryFile> memory_;
  std::condition_variable boChanged_;  // a BO completed, or activations were torn down
  std::condition_variable faultChanged_;
  Status status_ = Status::Ready;
  std::atomic<bool> removed_{false};
  bool stopped_ = false;
  rt::Resources free_;
  uint32_t nextGroupId_ = 1;
  std::map<uint32_t, std::shared_ptr<Partition>> partitions_;  // by derived device id
  uint32_t localPartitionId_ = driver::kFirstPartitionId;      // without PartitionNodes
  std::vector<std::shared_ptr<Partition>> removedPartitions_;  // activations still to stop
  uint64_t nextFileId_ = 1;
  std::map<uint64_t, std::weak_ptr<OpenFile>> files_;
  std::vector<std::shared_ptr<Activation>> dbcs_;  // by DBC id; null when idle
  std::vector<uint32_t> dbcGeneration_;
  std::vector<DbcState> dbcState_;                              // dbc<N>_state
  std::map<uint32_t, std::weak_ptr<BufferObject>> flinkNames_;  // GEM_FLINK names
  uint32_t nextFlinkName_ = 1;
  std::atomic<bool> controlHang_{false};  // fault: the firmware answers no control message
  std::atomic<bool> resetHang_{false};    // fault: a reset's firmware does not boot
  DatapathCounters datapath_;
  std::atomic<bool> nspHang_{false};  // written under mutex_; read without it on every run
  uint16_t dmaFailCode_ = 0;
  uint32_t dmaFailCount_ = 0;
};

}  // namespace qaic::emu
