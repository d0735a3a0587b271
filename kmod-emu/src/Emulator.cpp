#include "Emulator.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "FuseOps.hpp"
#include "Log.hpp"
#include "driver/DeviceProtocol.hpp"

namespace qaic::emu {
namespace {

// Runs fusermount3 -u -z for users without CAP_SYS_ADMIN; true on success.
bool fusermountUnmount(const std::string& dir) {
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    execlp("fusermount3", "fusermount3", "-u", "-q", "-z", dir.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

bool recoverStaleMount(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) == 0 || errno != ENOTCONN) return false;
  logInfo("lazily unmounting a stale mount at " + dir);
  if (geteuid() == 0 && umount2(dir.c_str(), MNT_DETACH) == 0) return true;
  return fusermountUnmount(dir);
}

Emulator::Emulator(EmuConfig config, ProgramLoader loader)
    : config_(std::move(config)), nextMmapOffset_(driver::kFirstMmapOffset) {
  policy_ = resolveNodePolicy(config_.nodes);
  try {
    shm_ = ShmDirectory::create();
  } catch (const std::exception& e) {
    throw StartError(std::string("shared-memory directory: ") + e.what());
  }
  pool_ = std::make_unique<NspPool>(config_.computeThreads);
  if (!loader) loader = containerProgramLoader(1);
  std::vector<uint32_t> dbcs;
  for (std::size_t i = 0; i < config_.devices.size(); ++i) {
    DeviceContext ctx;
    ctx.shm = shm_.get();
    ctx.pool = pool_.get();
    ctx.loader = loader;
    ctx.nextMmapOffset = &nextMmapOffset_;
    ctx.semaphoreTimeout = std::chrono::milliseconds(config_.semaphoreTimeoutMs);
    devices_.push_back(std::make_unique<Device>(static_cast<uint32_t>(i), config_.devices[i], ctx));
    dbcs.push_back(config_.devices[i].dbcs);
  }
  tree_ = std::make_unique<FileTree>(dbcs);
}

Emulator::~Emulator() { stop(); }

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
    throw StartError(root_ + ": mounting the FUSE file system failed (is /dev/fuse usable?)");
  }
  // Our own workers instead of fuse_session_loop_mt: they poll a non-blocking /dev/fuse with a
  // timeout, so stop() ends them without sending a request to our own mount (a request nobody
  // answers would hang its sender in the kernel for good).
  const int fd = fuse_session_fd(session_);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  serving_.store(true);
  liveWorkers_.store(kFuseWorkers);
  for (unsigned i = 0; i < kFuseWorkers; ++i) workers_.emplace_back([this] { serveRequests(); });
  logInfo("serving " + std::to_string(devices_.size()) + " device(s) at " + root_ +
          " (shm " + shm_->path() + ")");
}

void Emulator::stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& d : devices_) d->shutdown();
  if (session_ != nullptr) {
    fuse_session_exit(session_);
    for (auto& w : workers_)
      if (w.joinable()) w.join();
    workers_.clear();
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
  pool_->stop();
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
