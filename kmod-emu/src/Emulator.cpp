// SPDX-License-Identifier: Apache-2.0
#include "Emulator.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "FuseOps.hpp"
#include "FusermountMount.hpp"
#include "Log.hpp"
#include "driver/DeviceProtocol.hpp"

namespace qaic::emu {

bool recoverStaleMount(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) == 0 || errno != ENOTCONN) return false;
  logInfo("lazily unmounting a stale mount at " + dir);
  if (geteuid() == 0 && umount2(dir.c_str(), MNT_DETACH) == 0) return true;
  auto unmounted = unmountThroughFusermount(dir, /*lazy=*/true);
  if (!unmounted) logError(unmounted.message());
  return unmounted.ok();
}

Emulator::Emulator(EmuConfig config, ProgramLoader loader)
    : config_(std::move(config)),
      administrator_(geteuid()),
      administratorGroup_(getegid()),
      nextMmapOffset_(driver::kFirstMmapOffset),
      nextPartitionId_(driver::kFirstPartitionId) {
  policy_ = resolveNodePolicy(config_.nodes);
  // qaic-emu resolved them already; an emulator built in-process (tests) gets its peers here.
  resolveP2pGroups(config_, "emulator configuration");
  try {
    shm_ = ShmDirectory::create();
  } catch (const std::exception& e) {
    throw StartError(std::string("shared-memory directory: ") + e.what());
  }
  deviceContext_.compute = std::make_shared<ComputePool>(config_.computeThreads);
  if (!loader) loader = containerProgramLoader(deviceContext_.compute->cores());
  deviceContext_.shm = shm_.get();
  deviceContext_.loader = loader;
  deviceContext_.nextMmapOffset = &nextMmapOffset_;
  deviceContext_.semaphoreTimeout = std::chrono::milliseconds(config_.semaphoreTimeoutMs);
  // A collective waits for the other parts as long as a semaphore wait may block a channel.
  deviceContext_.peerGroups = std::make_shared<PeerGroups>(deviceContext_.semaphoreTimeout);
  deviceContext_.partitionNodes = this;
  deviceContext_.memories = std::make_shared<MemoryRegistry>();
  deviceContext_.nodePolicy = policy_;
  deviceContext_.passthrough = passthroughOn_;
  // Registering a backing file takes CAP_SYS_ADMIN; without it, do not ask the kernel at all.
  passthrough_ = std::make_unique<FusePassthrough>(config_.passthrough && geteuid() == 0);
  parameters_ = std::make_shared<ModuleParameters>(config_.moduleParameters);
  deviceContext_.parameters = parameters_;
  tree_ = std::make_unique<FileTree>();
  tree_->addControl("add_device");
  for (const auto& p : ModuleParameters::all()) tree_->addModuleParameter(p.name, p.mode);
  for (const DeviceConfig& device : config_.devices) addDevice(device);
}

uint32_t Emulator::addDevice(const DeviceConfig& config) {
  std::unique_lock lock(devicesMutex_);
  const auto index = static_cast<uint32_t>(devices_.size());
  devices_.push_back(std::make_unique<Device>(index, config, deviceContext_));
  tree_->addDevice(index, devices_.back()->pciAddress(), Device::attributeNames(config.dbcs),
                   Device::writableAttributeNames());
  if (session_ != nullptr) logInfo("accel" + std::to_string(index) + ": added");
  return index;
}

std::size_t Emulator::deviceCount() const {
  std::shared_lock lock(devicesMutex_);
  return devices_.size();
}

Device* Emulator::device(std::size_t i) const {
  std::shared_lock lock(devicesMutex_);
  return i < devices_.size() ? devices_[i].get() : nullptr;
}

uint32_t Emulator::allocatePartitionId() { return nextPartitionId_.fetch_add(1); }

void Emulator::publishPartition(uint32_t deviceIndex, uint32_t partitionId, const std::string& parentPciAddress) {
  tree_->addPartition(deviceIndex, partitionId, parentPciAddress, Device::partitionAttributeNames());
}

void Emulator::withdrawPartition(uint32_t partitionId) { tree_->removePartition(partitionId); }

std::optional<std::string> Emulator::readAttribute(const TreeNode& node) {
  if (node.fixedContent) return node.fixedContent;
  if (node.device < 0) {
    if (node.attribute.starts_with("module/")) return parameters_->read(node.attribute.substr(7));
    return std::string("0\n");  // controls read as 0, like fault/reset
  }
  Device* d = device(static_cast<std::size_t>(node.device));
  if (d == nullptr) return std::nullopt;
  return d->readAttribute(node.attribute, node.partition);
}

int Emulator::writeAttribute(const TreeNode& node, const std::string& text) {
  if (node.device >= 0) {
    Device* d = device(static_cast<std::size_t>(node.device));
    return d == nullptr ? ENODEV : d->writeAttribute(node.attribute, text);
  }
  if (node.attribute.starts_with("module/")) {
    const int err = parameters_->write(node.attribute.substr(7), text);
    if (err == 0) logInfo("module parameter " + node.attribute.substr(7) + " = " + text);
    return err;
  }
  if (node.attribute == "add_device") {
    // "1": one more device configured like the first one.
    std::string word = text;
    while (!word.empty() && (word.back() == '\n' || word.back() == ' ')) word.pop_back();
    if (word != "1") return EINVAL;
    if (deviceCount() >= kMaxDevices) return ENOSPC;
    DeviceConfig added = config_.devices.empty() ? DeviceConfig{} : config_.devices.front();
    // A card plugged in later is behind no switch the others share: it has no peers.
    added.p2pPeers.clear();
    if (!added.mdpConfigured)
      for (auto& [name, supported] : added.capabilities)
        if (name == "MDP") supported = false;
    addDevice(added);
    return 0;
  }
  return EACCES;
}

std::optional<ResolvedNodePolicy> Emulator::nodeOwner(const TreeNode& node) const {
  if (node.partition == 0) return policy_;
  Device* d = device(static_cast<std::size_t>(node.device));
  if (d == nullptr) return std::nullopt;
  auto owner = d->partitionOwner(node.partition);
  if (!owner) return std::nullopt;
  return ResolvedNodePolicy{owner->mode, owner->uid, owner->gid};
}

Emulator::~Emulator() { stop(); }

void Emulator::noteInitialized() {
  {
    std::lock_guard lock(initMutex_);
    initDone_ = true;
  }
  initialized_.notify_all();
}

void Emulator::start(const std::string& root) {
  if (session_ != nullptr) throw StartError("already started");
  std::error_code ec;
  recoverStaleMount(root);
  std::filesystem::create_directories(root, ec);
  struct stat st;
  if (stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw StartError(root + ": not a usable directory: " + std::strerror(errno));
  root_ = std::filesystem::absolute(root).lexically_normal().string();
  if (root_.size() > 1 && root_.back() == '/') root_.pop_back();

  std::string options = "default_permissions,fsname=qaic-emu,subtype=qaic-emu";
  if (geteuid() == 0) options += ",allow_other";
  const char* argv[] = {"qaic-emu", "-o", options.c_str()};
  fuse_args args = FUSE_ARGS_INIT(3, const_cast<char**>(argv));
  session_ = fuse_session_new(&args, &fuseOperations(), sizeof(fuse_lowlevel_ops), this);
  fuse_opt_free_args(&args);
  if (session_ == nullptr) throw StartError("fuse_session_new failed");
  if (fuse_session_mount(session_, root_.c_str()) != 0) {
    fuse_session_destroy(session_);
    session_ = nullptr;
    const std::string why = fuseDeviceProblem();
    throw StartError(root_ + ": mounting the FUSE file system failed" +
                     (why.empty() ? std::string(" (is /dev/fuse usable?)") : ": " + why));
  }
  // Our own workers instead of fuse_session_loop_mt: they poll a non-blocking /dev/fuse with a
  // timeout, so stop() ends them without sending a request to our own mount (a request nobody
  // answers would hang its sender in the kernel for good).
  const int fd = fuse_session_fd(session_);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  if (int rc = passthrough_->install(
          session_, [](void* self) -> FusePassthrough& { return static_cast<Emulator*>(self)->passthrough(); });
      rc != 0)
    logError(std::string("FUSE passthrough hooks: ") + std::strerror(-rc));
  serving_.store(true);
  liveWorkers_.store(kFuseWorkers);
  for (unsigned i = 0; i < kFuseWorkers; ++i) {
    workers_.emplace_back([this] {
      ::pthread_setname_np(::pthread_self(), "emu-fuse");
      serveRequests();
    });
  }
  // Ready once the kernel's INIT went through our workers. The emulator never looks at its own
  // tree through the mount: a thread of ours waiting on our own FUSE request could not be
  // killed, and a SIGKILL then would leave a process that never exits.
  {
    std::unique_lock lock(initMutex_);
    if (!initialized_.wait_for(lock, kInitTimeout, [this] { return initDone_; })) {
      lock.unlock();
      stop();
      throw StartError(root_ + ": the kernel's FUSE INIT did not arrive within " +
                       std::to_string(kInitTimeout.count()) + " ms");
    }
  }
  settlePassthrough();
  logInfo("serving " + std::to_string(deviceCount()) + " device(s) at " + root_ + " (shm " + shm_->path() + ")");
}

void Emulator::settlePassthrough() {
  passthrough_->awaitInitReply(kInitTimeout);  // INIT's operation ran; its reply decides
  bool on = passthrough_->active();
  std::string why = passthrough_->inactiveReason();
  if (on) {
    // A trial registration: the kernel may have accepted passthrough in INIT and still refuse
    // our backing files (no CAP_SYS_ADMIN in the initial user namespace).
    UniqueFd probe(::open((shm_->path() + "/" + driver::kInstanceLockName).c_str(), O_RDONLY | O_CLOEXEC));
    const int refused = probe ? passthrough_->tryBacking(probe.get()) : errno;
    if (refused != 0) {
      on = false;
      why = std::string("the kernel refused a backing file: ") + std::strerror(refused);
    }
  }
  passthroughOn_->store(on);
  {
    std::lock_guard lock(initMutex_);
    passthroughSettled_ = true;
  }
  initialized_.notify_all();
  if (on)
    logInfo("FUSE passthrough on: mmap of a device node maps its BOs");
  else
    logNotice("FUSE passthrough off (" + why +
              "): mmap of a device node is ENODEV; clients map the memory-accel<N> "
              "files in " +
              shm_->path());
}

int Emulator::passthroughBacking(Device& device, const OpenFile& file) {
  {
    // The tree answers from the kernel's INIT on, a moment before the start's trial
    // registration decides on passthrough; an open in between waits for that decision, since an
    // open made without passthrough stays so (a client's mmap of it would be ENODEV).
    std::unique_lock lock(initMutex_);
    initialized_.wait_for(lock, kInitTimeout, [this] { return passthroughSettled_; });
  }
  if (!passthroughOn_->load()) return 0;
  int err = 0;
  auto memory = device.nodeMemory(file, err);
  return memory ? passthrough_->backingFor(memory) : 0;
}

void Emulator::stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard lock(initMutex_);
    passthroughSettled_ = true;  // an open waiting for the decision goes on, without passthrough
  }
  initialized_.notify_all();
  {
    std::shared_lock lock(devicesMutex_);
    for (auto& d : devices_) d->shutdown();
  }
  if (session_ != nullptr) {
    fuse_session_exit(session_);
    for (auto& w : workers_)
      if (w.joinable()) w.join();
    workers_.clear();
    passthrough_->closeAll();
    fuse_session_unmount(session_);
    fuse_session_destroy(session_);
    session_ = nullptr;
  }
  std::map<uint64_t, std::shared_ptr<OpenHandle>> leftovers;
  {
    std::lock_guard lock(handlesMutex_);
    leftovers.swap(handles_);
  }
  for (auto& [fh, h] : leftovers)
    if (h->file) h->device->release(h->file);
  std::unique_lock lock(devicesMutex_);
  devices_.clear();
  logInfo("stopped");
}

}  // namespace qaic::emu

namespace qaic::emu {

void Emulator::serveRequests() {
  fuse_buf buf{};
  const int fd = fuse_session_fd(session_);
  while (!fuse_session_exited(session_)) {
    pollfd p{fd, POLLIN, 0};
    int ready = poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) break;
    int rc = fuse_session_receive_buf(session_, &buf);
    if (rc == -EAGAIN || rc == -EINTR) continue;  // another worker took the request
    if (rc <= 0) break;                           // unmounted (ENODEV) or a fatal error
    fuse_session_process_buf(session_, &buf);
  }
  std::free(buf.mem);
  if (liveWorkers_.fetch_sub(1) == 1) serving_.store(false);
}

uint64_t Emulator::addHandle(std::shared_ptr<OpenHandle> handle) {
  std::lock_guard lock(handlesMutex_);
  const uint64_t fh = nextHandle_++;
  handles_[fh] = std::move(handle);
  return fh;
}

std::shared_ptr<OpenHandle> Emulator::handle(uint64_t fh) {
  std::lock_guard lock(handlesMutex_);
  auto it = handles_.find(fh);
  return it == handles_.end() ? nullptr : it->second;
}

std::shared_ptr<OpenHandle> Emulator::takeHandle(uint64_t fh) {
  std::lock_guard lock(handlesMutex_);
  auto it = handles_.find(fh);
  if (it == handles_.end()) return nullptr;
  auto h = std::move(it->second);
  handles_.erase(it);
  return h;
}

}  // namespace qaic::emu
