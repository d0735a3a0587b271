// SPDX-License-Identifier: Apache-2.0
#include "FileTree.hpp"

#include <algorithm>
#include <mutex>
#include <string_view>
#include <utility>

#include "driver/SysfsNames.hpp"

namespace qaic::emu {

namespace {
constexpr const char* kPciRootName = "pci0000:00";
constexpr const char* kPciPrefix = "device/";  // attribute names of the PCI function
}  // namespace

FileTree::FileTree() {
  add(0, "", TreeNode::Kind::Directory, -1, 0);
  accelDev_ = directory(directory(kRootIno, "dev", -1, 0), "accel", -1, 0);
  const uint64_t sys = directory(kRootIno, "sys", -1, 0);
  accelSys_ = directory(directory(sys, "class", -1, 0), "accel", -1, 0);
  const uint64_t bus = directory(sys, "bus", -1, 0);
  busDir_ = directory(bus, "qaic-emu", -1, 0);
  parametersDir_ = directory(directory(directory(sys, "module", -1, 0), "qaic", -1, 0), "parameters", -1, 0);
  const uint64_t pciBus = directory(bus, "pci", -1, 0);
  pciBusDevices_ = directory(pciBus, "devices", -1, 0);
  pciDriver_ = directory(directory(pciBus, "drivers", -1, 0), "qaic", -1, 0);
  const uint64_t devices = directory(sys, "devices", -1, 0);
  pciRoot_ = directory(devices, kPciRootName, -1, 0);
  // udev takes a directory under sys/devices for a device only when it has a uevent file.
  nodes_.at(add(pciRoot_, "uevent", TreeNode::Kind::Attribute, -1, 0)).fixedContent = "";
  virtualAccel_ = directory(directory(devices, "virtual", -1, 0), "accel", -1, 0);
  devChar_ = directory(directory(sys, "dev", -1, 0), "char", -1, 0);
}

// The layout and the links are those a real card's driver leaves, relative as the kernel makes
// them, so a program that resolves them (udev, libpci, realpath) lands where it would on a host.
void FileTree::addDevice(uint32_t index, const std::string& pciAddress, const std::vector<std::string>& attributes,
                         const std::vector<std::string>& writableAttributes) {
  std::unique_lock lock(mutex_);
  const int device = static_cast<int>(index);
  const std::string name = "accel" + std::to_string(index);
  const uint64_t pci = add(pciRoot_, pciAddress, TreeNode::Kind::Directory, device, 0);
  const uint64_t accel = directory(directory(pci, "accel", device, 0), name, device, 0);
  for (const std::string& attr : attributes) {
    const bool writable = std::find(writableAttributes.begin(), writableAttributes.end(), attr) !=
                          writableAttributes.end();
    if (attr.starts_with(kPciPrefix))
      addAttribute(pci, attr.substr(std::string_view(kPciPrefix).size()), attr, writable, device, 0);
    else
      addAttribute(accel, attr, attr, writable, device, 0);
  }
  symlink(pci, "driver", "../../../bus/pci/drivers/qaic", device, 0);
  symlink(pci, "subsystem", "../../../bus/pci", device, 0);
  symlink(accel, "device", "../../../" + pciAddress, device, 0);
  symlink(accel, "subsystem", "../../../../../class/accel", device, 0);
  symlink(pciBusDevices_, pciAddress, "../../../devices/" + std::string(kPciRootName) + "/" + pciAddress, device, 0);
  symlink(pciDriver_, pciAddress, "../../../../devices/" + std::string(kPciRootName) + "/" + pciAddress, device, 0);
  addAccelLinks(name, index, "devices/" + std::string(kPciRootName) + "/" + pciAddress + "/accel/" + name, device, 0);
}

void FileTree::addPartition(uint32_t index, uint32_t partitionId, const std::string& parentPciAddress,
                            const std::vector<std::string>& attributes) {
  std::unique_lock lock(mutex_);
  const int device = static_cast<int>(index);
  const std::string name = "accel" + std::to_string(partitionId);
  const uint64_t dir = add(virtualAccel_, name, TreeNode::Kind::Directory, device, partitionId);
  // Its PCI attributes are its parent's, through the `device` link.
  for (const std::string& attr : attributes)
    if (!attr.starts_with(kPciPrefix)) addAttribute(dir, attr, attr, false, device, partitionId);
  symlink(dir, "device", "../../../" + std::string(kPciRootName) + "/" + parentPciAddress, device, partitionId);
  symlink(dir, "subsystem", "../../../../class/accel", device, partitionId);
  addAccelLinks(name, partitionId, "devices/virtual/accel/" + name, device, partitionId);
}

void FileTree::addAttribute(uint64_t dir, const std::string& path, const std::string& attribute, bool writable,
                            int device, uint32_t partition) {
  // "qaic-emu/fault/reset" -> directories qaic-emu, fault, then the file.
  uint64_t parent = dir;
  std::size_t start = 0;
  for (std::size_t slash; (slash = path.find('/', start)) != std::string::npos; start = slash + 1)
    parent = directory(parent, path.substr(start, slash - start), device, partition);
  TreeNode& file = nodes_.at(add(parent, path.substr(start), TreeNode::Kind::Attribute, device, partition));
  file.attribute = attribute;
  file.writable = writable;
}

void FileTree::addAccelLinks(const std::string& name, uint32_t minor, const std::string& sysPath, int device,
                             uint32_t partition) {
  add(accelDev_, name, TreeNode::Kind::DeviceNode, device, partition);
  symlink(accelSys_, name, "../../" + sysPath, device, partition);
  symlink(devChar_, std::to_string(driver::sysfs::kAccelMajor) + ":" + std::to_string(minor), "../../" + sysPath,
          device, partition);
}

void FileTree::removePartition(uint32_t partitionId) {
  std::unique_lock lock(mutex_);
  const std::string name = "accel" + std::to_string(partitionId);
  const std::string charName = std::to_string(driver::sysfs::kAccelMajor) + ":" + std::to_string(partitionId);
  for (auto [parent, entry] : {std::pair{accelDev_, name}, std::pair{accelSys_, name}, std::pair{virtualAccel_, name},
                               std::pair{devChar_, charName}}) {
    const TreeNode* n = find(parent, entry);
    if (n != nullptr && n->partition == partitionId) unlink(n->ino);
  }
}

void FileTree::addControl(const std::string& name) {
  std::unique_lock lock(mutex_);
  TreeNode& file = nodes_.at(add(busDir_, name, TreeNode::Kind::Attribute, -1, 0));
  file.attribute = name;
  file.writable = true;
}

void FileTree::addModuleParameter(const std::string& name, uint32_t mode) {
  std::unique_lock lock(mutex_);
  TreeNode& file = nodes_.at(add(parametersDir_, name, TreeNode::Kind::Attribute, -1, 0));
  file.attribute = "module/" + name;
  file.writable = (mode & 0200) != 0;
  file.mode = mode;
}

uint64_t FileTree::add(uint64_t parent, std::string name, TreeNode::Kind kind, int device, uint32_t partition) {
  TreeNode n;
  n.ino = nextIno_++;
  n.parent = parent == 0 ? n.ino : parent;
  n.name = std::move(name);
  n.kind = kind;
  n.device = device;
  n.partition = partition;
  const uint64_t ino = n.ino;
  nodes_.emplace(ino, std::move(n));
  if (parent != 0) nodes_.at(parent).children.push_back(ino);
  return ino;
}

uint64_t FileTree::directory(uint64_t parent, const std::string& name, int device, uint32_t partition) {
  if (const TreeNode* existing = find(parent, name)) return existing->ino;
  return add(parent, name, TreeNode::Kind::Directory, device, partition);
}

uint64_t FileTree::symlink(uint64_t parent, const std::string& name, std::string target, int device,
                           uint32_t partition) {
  const uint64_t ino = add(parent, name, TreeNode::Kind::Symlink, device, partition);
  nodes_.at(ino).target = std::move(target);
  return ino;
}

// A removed subtree goes from nodes_ (its inode numbers are never handed out again, so a
// kernel that still names one gets ENOENT), and with it the memory it took: a partition's
// directory is some 11 kB, and qaicd makes and removes partitions all day.
void FileTree::unlink(uint64_t ino) {
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  const std::vector<uint64_t> children = std::move(it->second.children);
  const uint64_t parent = it->second.parent;
  nodes_.erase(it);
  for (uint64_t c : children) unlink(c);
  if (auto p = nodes_.find(parent); p != nodes_.end()) std::erase(p->second.children, ino);
}

const TreeNode* FileTree::find(uint64_t parent, const std::string& name) const {
  auto p = nodes_.find(parent);
  if (p == nodes_.end()) return nullptr;
  for (uint64_t c : p->second.children)
    if (const TreeNode& n = nodes_.at(c); n.name == name) return &n;
  return nullptr;
}

std::optional<TreeNode> FileTree::node(uint64_t ino) const {
  std::shared_lock lock(mutex_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return std::nullopt;
  return it->second;
}

std::optional<TreeNode> FileTree::child(uint64_t parent, const std::string& name) const {
  std::shared_lock lock(mutex_);
  const TreeNode* n = find(parent, name);
  if (n == nullptr) return std::nullopt;
  return *n;
}

std::vector<TreeNode> FileTree::children(uint64_t parent) const {
  std::shared_lock lock(mutex_);
  std::vector<TreeNode> out;
  auto p = nodes_.find(parent);
  if (p == nodes_.end()) return out;
  for (uint64_t c : p->second.children) out.push_back(nodes_.at(c));
  return out;
}

}  // namespace qaic::emu
