// SPDX-License-Identifier: Apache-2.0
// Memory files on tmpfs that the emulator and one client both map (docs/device-protocol.md
// section 1): the instance's shared-memory directory and one mapped file in it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/UniqueFd.hpp"

namespace qaic::emu {

// A mapped memory file; unlinks and unmaps itself when destroyed.
class MemoryFile {
 public:
  ~MemoryFile();
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // The file's identity on tmpfs: what a descriptor of it passed back in (PRIME import) shows.
  dev_t device() const { return device_; }
  ino_t inode() const { return inode_; }

 private:
  friend class ShmDirectory;
  MemoryFile(std::string path, std::byte* data, std::size_t size, dev_t device, ino_t inode)
      : path_(std::move(path)), data_(data), size_(size), device_(device), inode_(inode) {}
  std::string path_;
  std::byte* data_;
  std::size_t size_;
  dev_t device_;
  ino_t inode_;
};

// The one sparse memory file of a device node (driver::deviceMemoryFileName): every BO created
// through the node holds the range [offset, offset + bytes) at its MMAP_BO offset, reserved and
// mapped here for the device's view, and punched out again when the BO's last holder goes. Clients
// map the same range through the node (FUSE passthrough onto this file) or, without passthrough,
// from the file itself. Unlinked when destroyed; the descriptor stays open until then.
class DeviceMemoryFile {
 public:
  ~DeviceMemoryFile();
  DeviceMemoryFile(const DeviceMemoryFile&) = delete;
  DeviceMemoryFile& operator=(const DeviceMemoryFile&) = delete;

  // Reserves the pages of [offset, offset + bytes) (ENOMEM when tmpfs is full) and maps them,
  // populated. Returns nullptr and an errno on failure.
  std::byte* mapRange(uint64_t offset, std::size_t bytes, int& error) const;
  // Unmaps a range of mapRange and gives its pages back (a punched hole reads as zeros).
  void releaseRange(std::byte* data, uint64_t offset, std::size_t bytes) const;
  // A new open file description of this file, positioned at `offset` (a PRIME export).
  UniqueFd openAt(uint64_t offset, int openFlags, int& error) const;
  // From now on a released range keeps its pages: once its device stops, the file goes whole
  // with the instance, and a client still mapping a BO reads what the device last wrote there
  // (a removed card's mappings stay valid until munmap) instead of zeros.
  void keepReleasedPages() const { keepReleasedPages_.store(true); }

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }
  dev_t device() const { return device_; }
  ino_t inode() const { return inode_; }

 private:
  friend class ShmDirectory;
  DeviceMemoryFile(std::string path, UniqueFd fd, dev_t device, ino_t inode)
      : path_(std::move(path)), fd_(std::move(fd)), device_(device), inode_(inode) {}
  std::string path_;
  UniqueFd fd_;
  dev_t device_;
  ino_t inode_;
  mutable std::atomic<bool> keepReleasedPages_{false};
};

// /dev/shm/qaic-emu.<pid>.XXXXXX (mode 0711), removed with everything in it when destroyed;
// create() first removes the directories of emulators that no longer run. The instance holds
// its instance lock (driver::kInstanceLockName) from create() until it is destroyed, or dies.
class ShmDirectory {
 public:
  // Throws std::system_error when the directory cannot be created.
  static std::unique_ptr<ShmDirectory> create(const std::string& base = "/dev/shm");
  ~ShmDirectory();

  const std::string& path() const { return path_; }

  // Creates `name` with `bytes` (zero filled), owned by uid/gid with mode 0600, and maps it.
  // Returns nullptr and sets `error` to an errno on failure (ENOMEM when tmpfs is full).
  std::unique_ptr<MemoryFile> createFile(const std::string& name, std::size_t bytes, uid_t uid, gid_t gid,
                                         int& error) const;
  // Creates the empty memory file `name` of a device node, owned by uid/gid with `mode` (the
  // node's read and write bits: whoever may open the node may map its memory). Throws
  // std::system_error when it cannot.
  std::shared_ptr<DeviceMemoryFile> createDeviceMemory(const std::string& name, uid_t uid, gid_t gid,
                                                       unsigned mode) const;

 private:
  ShmDirectory(std::string path, UniqueFd lock) : path_(std::move(path)), lock_(std::move(lock)) {}
  std::string path_;
  UniqueFd lock_;  // closed after the directory is gone
};

}  // namespace qaic::emu
