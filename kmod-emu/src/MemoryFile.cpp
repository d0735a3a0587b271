// SPDX-License-Identifier: Apache-2.0
#include "MemoryFile.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string_view>
#include <system_error>
#include <vector>

#include "base/InstanceLock.hpp"
#include "driver/DeviceProtocol.hpp"

namespace qaic::emu {

MemoryFile::~MemoryFile() {
  if (data_ != nullptr) munmap(data_, size_);
  unlink(path_.c_str());
}

DeviceMemoryFile::~DeviceMemoryFile() { unlink(path_.c_str()); }

std::byte* DeviceMemoryFile::mapRange(uint64_t offset, std::size_t bytes, int& error) const {
  // fallocate reserves the tmpfs pages now, so a full /dev/shm is ENOMEM here, not SIGBUS later.
  if (int rc = posix_fallocate(fd_.get(), static_cast<off_t>(offset), static_cast<off_t>(bytes)); rc != 0) {
    error = rc == ENOSPC ? ENOMEM : rc;
    return nullptr;
  }
  // Populated now, as a device pins a buffer when it is created: the first DMA into a large BO
  // would otherwise take a page fault every 4 KiB inside the inference it serves.
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_.get(),
                    static_cast<off_t>(offset));
  if (data == MAP_FAILED) {
    error = ENOMEM;
    fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
              static_cast<off_t>(bytes));
    return nullptr;
  }
  error = 0;
  return static_cast<std::byte*>(data);
}

void DeviceMemoryFile::releaseRange(std::byte* data, uint64_t offset, std::size_t bytes) const {
  munmap(data, bytes);
  if (keepReleasedPages_.load()) return;
  fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
            static_cast<off_t>(bytes));
}

UniqueFd DeviceMemoryFile::openAt(uint64_t offset, int openFlags, int& error) const {
  UniqueFd file(open(path_.c_str(), openFlags | O_NOFOLLOW));
  if (!file || lseek(file.get(), static_cast<off_t>(offset), SEEK_SET) < 0) {
    error = errno;
    return UniqueFd();
  }
  error = 0;
  return file;
}

namespace {

void removeTree(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") unlink((dir + "/" + name).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

// Instance directories are named qaic-emu.<pid>.XXXXXX; those of dead emulators (killed, or
// crashed) are removed so tmpfs memory does not pile up. A directory whose instance lock is free
// is dead even while its emulator is a zombie not yet reaped (its descriptors closed as it
// exited); one without the lock (an instance being created, or an older emulator's) is dead
// only when no process has its pid.
bool instanceIsDead(const std::string& dir, pid_t pid) {
  if (auto lock = openInstanceLock(dir + "/" + driver::kInstanceLockName)) {
    auto held = instanceLockHeld(lock->get());
    return held && !*held;
  }
  return kill(pid, 0) != 0 && errno == ESRCH;
}

void removeDeadInstances(const std::string& base) {
  DIR* d = opendir(base.c_str());
  if (d == nullptr) return;
  std::vector<std::string> dead;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    constexpr std::string_view prefix = "qaic-emu.";
    if (name.rfind(prefix, 0) != 0) continue;
    const std::size_t dot = name.find('.', prefix.size());
    if (dot == std::string::npos) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (end != name.c_str() + dot || pid <= 0) continue;
    if (instanceIsDead(base + "/" + name, static_cast<pid_t>(pid))) dead.push_back(base + "/" + name);
  }
  closedir(d);
  for (const auto& dir : dead) removeTree(dir);
}

}  // namespace

std::unique_ptr<ShmDirectory> ShmDirectory::create(const std::string& base) {
  removeDeadInstances(base);
  std::string templ = base + "/qaic-emu." + std::to_string(getpid()) + ".XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) throw std::system_error(errno, std::generic_category(), "creating " + templ);
  std::string path(buf.data());
  chmod(path.c_str(), driver::kShmDirMode);
  auto lock = createHeldInstanceLock(path + "/" + driver::kInstanceLockName, driver::kInstanceLockMode);
  if (!lock) {
    removeTree(path);
    throw std::system_error(lock.error(), std::generic_category(), lock.sysError().context);
  }
  return std::unique_ptr<ShmDirectory>(new ShmDirectory(std::move(path), std::move(lock.value())));
}

// Files still present belong to objects that outlived the instance; remove them with it.
ShmDirectory::~ShmDirectory() { removeTree(path_); }

std::unique_ptr<MemoryFile> ShmDirectory::createFile(const std::string& name, std::size_t bytes, uid_t uid, gid_t gid,
                                                     int& error) const {
  const std::string full = path_ + "/" + name;
  int fd = open(full.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, driver::kMemoryFileMode);
  if (fd < 0) {
    error = errno;
    return nullptr;
  }
  auto fail = [&](int err) -> std::unique_ptr<MemoryFile> {
    error = err;
    close(fd);
    unlink(full.c_str());
    return nullptr;
  };
  // Without root the mount admits only our own user (no allow_other), who owns the file already.
  if (geteuid() == 0 && fchown(fd, uid, gid) != 0) return fail(errno);
  if (fchmod(fd, driver::kMemoryFileMode) != 0) return fail(errno);
  struct stat st {};
  if (fstat(fd, &st) != 0) return fail(errno);
  // fallocate reserves the tmpfs pages now, so a full /dev/shm is ENOMEM here, not SIGBUS later.
  if (bytes > 0) {
    int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    if (rc != 0) return fail(rc == ENOSPC ? ENOMEM : rc);
  }
  void* data = nullptr;
  if (bytes > 0) {
    // Populated now, as a device pins a buffer when it is created: the first DMA into a large
    // BO would otherwise take a page fault every 4 KiB inside the inference it serves.
    data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (data == MAP_FAILED) return fail(ENOMEM);
  }
  close(fd);
  return std::unique_ptr<MemoryFile>(new MemoryFile(full, static_cast<std::byte*>(data), bytes, st.st_dev, st.st_ino));
}

std::shared_ptr<DeviceMemoryFile> ShmDirectory::createDeviceMemory(const std::string& name, uid_t uid, gid_t gid,
                                                                   unsigned mode) const {
  const std::string full = path_ + "/" + name;
  const unsigned fileMode = mode & 0666;
  UniqueFd fd(open(full.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, fileMode));
  if (!fd) throw std::system_error(errno, std::generic_category(), "creating " + full);
  struct stat st {};
  // Without root the mount admits only our own user (no allow_other), who owns the file already.
  if ((geteuid() == 0 && fchown(fd.get(), uid, gid) != 0) || fchmod(fd.get(), fileMode) != 0 ||
      fstat(fd.get(), &st) != 0) {
    const int err = errno;
    unlink(full.c_str());
    throw std::system_error(err, std::generic_category(), "setting up " + full);
  }
  return std::shared_ptr<DeviceMemoryFile>(new DeviceMemoryFile(full, std::move(fd), st.st_dev, st.st_ino));
}

}  // namespace qaic::emu
