// One emulated AIC100: its resources, open files, DBCs and their activations, faults, and the
// sysfs view of all that. The FUSE layer calls open/release/ioctl/attribute; channels call back
// through ChannelHost. One mutex guards the control state; it is never held while joining a
// channel thread or while copying request data.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "Config.hpp"
#include "DbcChannel.hpp"
#include "DeviceProgram.hpp"
#include "MemoryFile.hpp"
#include "OpenFile.hpp"

namespace qaic::emu {

// Where partitions get their ids (unique across the emulator's devices) and their nodes in the
// file tree: implemented by the Emulator. Called with the Device mutex held.
class PartitionNodes {
 public:
  virtual ~PartitionNodes() = default;
  virtual uint32_t allocatePartitionId() = 0;
  virtual void publishPartition(uint32_t deviceIndex, uint32_t partitionId) = 0;
  virtual void withdrawPartition(uint32_t partitionId) = 0;
};

// What every device of one emulator instance shares.
struct DeviceContext {
  const ShmDirectory* shm = nullptr;
  ProgramLoader loader;
  std::atomic<uint64_t>* nextMmapOffset = nullptr;
  std::chrono::milliseconds semaphoreTimeout{10000};
  PartitionNodes* partitionNodes = nullptr;  // null: partitions get ids but no nodes
};

// The caller of one ioctl: FUSE copies the fixed-size argument, the rest is read from `pid`.
struct IoctlCall {
  pid_t pid = 0;  // calling thread
  const void* in = nullptr;
  std::size_t inSize = 0;
  void* out = nullptr;
  std::size_t outSize = 0;
};

class Device final : public ChannelHost {
 public:
  enum class Status { Initializing, Ready, Error };

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
  int ioctl(OpenFile& file, unsigned cmd, const IoctlCall& call);

  // sysfs: the attribute files of sys/class/accel/accelN (names relative to it, e.g. "status",
  // "device/emu_pid", "device/fault/reset"). Writable ones are the fault files.
  static std::vector<std::string> attributeNames(uint32_t dbcs);
  static std::vector<std::string> writableAttributeNames();
  static bool attributeWritable(const std::string& name);
  // serial, board_serial, fw/nsp image strings, device_capabilities, ddr_frequency_mhz, the PCI
  // link attributes and hwmon: what qaic-util -q reads of a card besides its resources.
  static const std::vector<std::string> kIdentityAttributes;
  // A partition's class directory: the device's counters (its own totals and free) and
  // device/partition/{parent,owner_uid,owner_gid,mode,holder_pid,label}.
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

  // Aborts every activation (ABORTED, status register Stopped); the device serves no more ioctls.
  void shutdown();

  // ChannelHost
  std::shared_ptr<BufferObject> translate(const Activation& act, uint32_t handle, uint64_t offset,
                                          uint64_t length, uint32_t dir) override;
  bool completeKernelSlot(Activation& act, uint32_t slot, uint16_t code) override;
  uint16_t takeInjectedFault() override;
  bool waitWhileHung(const Activation& act, std::chrono::milliseconds limit) override;
  std::chrono::milliseconds semaphoreTimeout() const override { return ctx_.semaphoreTimeout; }

 private:
  std::optional<std::string> readIdentityAttribute(const std::string& name) const;  // mutex_ held
  using Lock = std::unique_lock<std::mutex>;

  // ioctls (DeviceIoctls.cpp)
  int createBo(OpenFile& f, const IoctlCall& c);
  int mmapBo(OpenFile& f, const IoctlCall& c);
  int attachSlice(OpenFile& f, const IoctlCall& c);
  int execute(OpenFile& f, const IoctlCall& c, bool partial);
  int waitBo(OpenFile& f, const IoctlCall& c);
  int perfStats(OpenFile& f, const IoctlCall& c);
  int detachSlice(OpenFile& f, const IoctlCall& c);
  int dbcInfo(OpenFile& f, const IoctlCall& c);

  // MANAGE (DeviceManage.cpp)
  int manage(OpenFile& f, const IoctlCall& c);
  int resourceGroup(OpenFile& f, const driver::ResourceGroupRequest& req,
                    driver::ResourceGroupResponse& resp);
  int partitionCommand(OpenFile& f, const driver::PartitionRequest& req,
                       driver::PartitionResponse& resp);
  int dmaTransfer(OpenFile& f, const qaic_manage_trans_dma_xfer& t, bool continuation,
                  pid_t pid);
  int activate(OpenFile& f, const qaic_manage_trans_activate_to_dev& t, pid_t pid,
               uint32_t& dbcId);
  int deactivate(OpenFile& f, uint32_t dbcId);

  // Removes an activation from every table and gives its resources back (mutex held); the
  // caller then stops it with stopChannel outside the mutex.
  std::shared_ptr<Activation> detachActivation(OpenFile& f, uint32_t dbcId);
  // Aborts the activations of every file, or only of the files opened on `partition`.
  void abortActivations(uint16_t code, driver::DeviceStatus status,
                        const Partition* partition = nullptr);
  // Ends every partition (mutex held): their nodes go, their capacity returns to free_.
  void endPartitionsLocked();
  // Stops the activations of partitions a MANAGE call removed (outside the mutex).
  void stopRemovedPartitions();
  std::optional<std::string> readPartitionAttribute(const Partition& p, const std::string& name);
  void reset();
  // device/fault/error: status Error (activations aborted, new ones refused) until a reset or
  // writing 0 makes it Ready again.
  void enterError();
  void remove();

  const uint32_t index_;
  const DeviceConfig config_;
  DeviceContext ctx_;
  const rt::Resources total_;

  std::mutex mutex_;
  std::condition_variable boChanged_;  // a BO completed, or activations were torn down
  std::condition_variable faultChanged_;
  Status status_ = Status::Ready;
  std::atomic<bool> removed_{false};
  bool stopped_ = false;
  rt::Resources free_;
  uint32_t nextGroupId_ = 1;
  std::map<uint32_t, std::shared_ptr<Partition>> partitions_;  // by derived device id
  uint32_t localPartitionId_ = driver::kFirstPartitionId;     // without PartitionNodes
  std::vector<std::shared_ptr<Partition>> removedPartitions_;  // activations still to stop
  uint64_t nextFileId_ = 1;
  std::map<uint64_t, std::weak_ptr<OpenFile>> files_;
  std::vector<std::shared_ptr<Activation>> dbcs_;  // by DBC id; null when idle
  std::vector<uint32_t> dbcGeneration_;
  std::atomic<bool> nspHang_{false};  // written under mutex_; read without it on every run
  uint16_t dmaFailCode_ = 0;
  uint32_t dmaFailCount_ = 0;
};

}  // namespace qaic::emu
