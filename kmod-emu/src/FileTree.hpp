// SPDX-License-Identifier: Apache-2.0
// The file tree qaic-emu serves under its root, as numbered nodes the FUSE layer looks up:
// dev/accel/accelN (device nodes); the kernel's device tree, where each card is a PCI function
// sys/devices/pci0000:00/<BDF>/ (the PCI attributes) holding accel/accelN/ (the class
// attributes), reached through the symbolic links udev and a PCI scan follow (sys/class/accel/,
// sys/bus/pci/devices/, sys/bus/pci/drivers/qaic/, sys/dev/char/261:N); partitions as virtual
// devices sys/devices/virtual/accel/accelN; sys/module/qaic/parameters/ (the module's
// parameters) and sys/bus/qaic-emu/ (the emulator's own controls). Devices and partitions
// (derived devices) come and go at run time, so the tree changes while FUSE workers read it:
// every accessor returns a copy taken under the tree's lock, and inode numbers are never reused.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace qaic::emu {

struct TreeNode {
  enum class Kind { Directory, DeviceNode, Attribute, Symlink };
  uint64_t ino = 0;
  uint64_t parent = 0;
  std::string name;
  Kind kind = Kind::Directory;
  int device = -1;         // the device this node belongs to, -1 for shared directories/controls
  uint32_t partition = 0;  // nonzero: the node belongs to this derived device of `device`
  std::string attribute;   // Attribute: the name Device::readAttribute takes
  bool writable = false;
  uint32_t mode = 0;   // Attribute permission bits; 0: 0644 when writable, else 0444
  std::string target;  // Symlink: the relative path it points to, as sysfs writes them
  // Attribute: content that never changes (no device to ask), e.g. the PCI root's uevent.
  std::optional<std::string> fixedContent;
  std::vector<uint64_t> children;
};

class FileTree {
 public:
  static constexpr uint64_t kRootIno = 1;
  FileTree();

  // accel<index>: its node under dev/accel, its PCI function `pciAddress` (the attributes named
  // device/...) with accel/accel<index>/ (the others) under sys/devices/pci0000:00, and the links.
  void addDevice(uint32_t index, const std::string& pciAddress, const std::vector<std::string>& attributes,
                 const std::vector<std::string>& writableAttributes);
  // accel<partitionId> for a partition of device `index` (at `parentPciAddress`): a virtual
  // device whose `device` link leads to its parent's PCI function; device/... names are skipped.
  void addPartition(uint32_t index, uint32_t partitionId, const std::string& parentPciAddress,
                    const std::vector<std::string>& attributes);
  void removePartition(uint32_t partitionId);
  // A writable control file under sys/bus/qaic-emu/.
  void addControl(const std::string& name);
  // sys/module/qaic/parameters/<name> with `mode` (writable when it has an owner write bit);
  // its attribute name is "module/<name>".
  void addModuleParameter(const std::string& name, uint32_t mode);

  std::optional<TreeNode> node(uint64_t ino) const;
  std::optional<TreeNode> child(uint64_t parent, const std::string& name) const;
  std::vector<TreeNode> children(uint64_t parent) const;

 private:
  uint64_t add(uint64_t parent, std::string name, TreeNode::Kind kind, int device, uint32_t partition);
  uint64_t directory(uint64_t parent, const std::string& name, int device, uint32_t partition);
  uint64_t symlink(uint64_t parent, const std::string& name, std::string target, int device, uint32_t partition);
  // Attribute files below `dir`, "a/b/c" as directories a, b and the file c; `attribute` is
  // the name Device::readAttribute takes, `path` where it sits below `dir`.
  void addAttribute(uint64_t dir, const std::string& path, const std::string& attribute, bool writable, int device,
                    uint32_t partition);
  // dev/accel/<name>, the sys/class/accel and sys/dev/char links to `sysPath` (relative to sys/).
  void addAccelLinks(const std::string& name, uint32_t minor, const std::string& sysPath, int device,
                     uint32_t partition);
  const TreeNode* find(uint64_t parent, const std::string& name) const;  // lock held
  void unlink(uint64_t ino);                                             // lock held

  mutable std::shared_mutex mutex_;
  std::unordered_map<uint64_t, TreeNode> nodes_;  // the live nodes, by inode number
  uint64_t nextIno_ = kRootIno;
  uint64_t accelDev_ = 0, accelSys_ = 0, busDir_ = 0, parametersDir_ = 0;
  uint64_t pciRoot_ = 0, pciBusDevices_ = 0, pciDriver_ = 0, devChar_ = 0, virtualAccel_ = 0;
};

}  // namespace qaic::emu
