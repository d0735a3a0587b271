// SPDX-License-Identifier: Apache-2.0
// One qaic-emu instance: the devices of a configuration, their shared-memory directory, and the
// FUSE file system that serves dev/accel and sys/class/accel under a root.
// start() returns once the tree is mounted and served; stop() (or destruction) aborts every
// activation, stops serving and unmounts.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "Config.hpp"
#include "Device.hpp"
#include "FileTree.hpp"
#include "FusePassthrough.hpp"
#include "MemoryFile.hpp"

struct fuse_session;

namespace qaic::emu {

class StartError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a FUSE file handle (fi->fh) stands for: an open device node, or an attribute's content
// rendered at open so that one read() sees one consistent value.
struct OpenHandle {
  Device* device = nullptr;
  std::shared_ptr<OpenFile> file;  // device nodes only
  // Attributes only: rendered at open, and again for every read from offset 0 after the first,
  // as sysfs does, so a watcher can keep the file open and pread it. Readers of one handle may
  // run on several FUSE workers at once.
  std::mutex contentMutex;
  std::string content;
  bool contentRead = false;
};

class Emulator final : public PartitionNodes {
 public:
  // Device indices stay below the first partition id, so accel names never clash.
  static constexpr std::size_t kMaxDevices = driver::kFirstPartitionId;
  // `loader` builds programs from containers; the default is containerProgramLoader.
  explicit Emulator(EmuConfig config, ProgramLoader loader = {});
  ~Emulator() override;
  Emulator(const Emulator&) = delete;
  Emulator& operator=(const Emulator&) = delete;

  // Mounts at `root` (created if missing; a stale mount there is lazily unmounted first).
  // Throws StartError naming what failed.
  void start(const std::string& root);
  void stop();
  // Called by the FUSE worker that handles the kernel's INIT.
  void noteInitialized();
  // False once the file system stopped being served (stop(), or unmounted from outside).
  bool serving() const { return serving_.load(); }

  const std::string& root() const { return root_; }
  const std::string& shmDir() const { return shm_->path(); }
  std::size_t deviceCount() const;
  // Devices live until stop(), so the pointer stays valid while the emulator serves.
  Device* device(std::size_t i) const;
  const FileTree& tree() const { return *tree_; }

  // Adds a device at run time (sys/bus/qaic-emu/add_device); returns its index.
  uint32_t addDevice(const DeviceConfig& config);

  // Attribute files of any node: a device's, a partition's or an emulator control.
  std::optional<std::string> readAttribute(const TreeNode& node);
  int writeAttribute(const TreeNode& node, const std::string& text);  // errno
  // Owner, group and mode of a device node (the policy, or its partition's).
  std::optional<ResolvedNodePolicy> nodeOwner(const TreeNode& node) const;

  // PartitionNodes
  uint32_t allocatePartitionId() override;
  void publishPartition(uint32_t deviceIndex, uint32_t partitionId, const std::string& parentPciAddress) override;
  void withdrawPartition(uint32_t partitionId) override;
  // Owner of the sysfs files: the emulator's effective user and group.
  uid_t administrator() const { return administrator_; }
  gid_t administratorGroup() const { return administratorGroup_; }
  ModuleParameters& moduleParameters() { return *parameters_; }

  // The backing id an open of a device node passes through to (its node's memory file), 0 when
  // passthrough is off; and the hooks' state.
  int passthroughBacking(Device& device, const OpenFile& file);
  FusePassthrough& passthrough() { return *passthrough_; }

  // File handles: registered here so that stop() can release what clients never closed.
  uint64_t addHandle(std::shared_ptr<OpenHandle> handle);
  std::shared_ptr<OpenHandle> handle(uint64_t fh);
  std::shared_ptr<OpenHandle> takeHandle(uint64_t fh);

 private:
  EmuConfig config_;
  ResolvedNodePolicy policy_;
  std::unique_ptr<ShmDirectory> shm_;
  std::shared_ptr<ModuleParameters> parameters_;
  uid_t administrator_;
  gid_t administratorGroup_;
  std::atomic<uint64_t> nextMmapOffset_;
  DeviceContext deviceContext_;
  mutable std::shared_mutex devicesMutex_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::atomic<uint32_t> nextPartitionId_;
  std::unique_ptr<FileTree> tree_;
  std::string root_;
  fuse_session* session_ = nullptr;
  std::unique_ptr<FusePassthrough> passthrough_;
  std::shared_ptr<std::atomic<bool>> passthroughOn_ = std::make_shared<std::atomic<bool>>(false);
  // After INIT: passthrough is on when the kernel accepted it and lets us register a backing file.
  void settlePassthrough();
  static constexpr std::chrono::milliseconds kInitTimeout{20000};
  static constexpr unsigned kFuseWorkers = 32;  // blocking ioctls (WAIT_BO) hold one each
  void serveRequests();
  std::vector<std::thread> workers_;
  std::atomic<unsigned> liveWorkers_{0};
  std::atomic<bool> serving_{false};
  std::mutex initMutex_;
  std::condition_variable initialized_;
  bool initDone_ = false;
  bool passthroughSettled_ = false;  // settlePassthrough ran (or start gave up): opens may proceed
  std::mutex handlesMutex_;
  std::map<uint64_t, std::shared_ptr<OpenHandle>> handles_;
  uint64_t nextHandle_ = 1;
  bool stopped_ = false;
};

// Unmounts a dead FUSE mount (ENOTCONN) at `dir`; true when one was found and removed.
bool recoverStaleMount(const std::string& dir);

}  // namespace qaic::emu
