// SPDX-License-Identifier: Apache-2.0
#include "FileTree.hpp"

#include <algorithm>
#include <mutex>

namespace qaic::emu {

FileTree::FileTree() {
  add(0, "", TreeNode::Kind::Directory, -1, 0);
  accelDev_ = directory(directory(kRootIno, "dev", -1, 0), "accel", -1, 0);
  const uint64_t sys = directory(kRootIno, "sys", -1, 0);
  accelSys_ = directory(directory(sys, "class", -1, 0), "accel", -1, 0);
  busDir_ = directory(directory(sys, "bus", -1, 0), "qaic-emu", -1, 0);
  parametersDir_ = directory(directory(directory(sys, "module", -1, 0), "qaic", -1, 0), "parameters", -1, 0);
}

void FileTree::addDevice(uint32_t index, const std::vector<std::string>& attributes,
                         const std::vector<std::string>& writableAttributes) {
  std::unique_lock lock(mutex_);
  addAccel("accel" + std::to_string(index), static_cast<int>(index), 0, attributes, writableAttributes);
}

void FileTree::addPartition(uint32_t index, uint32_t partitionId, const std::vector<std::string>& attributes) {
  std::unique_lock lock(mutex_);
  addAccel("accel" + std::to_string(partitionId), static_cast<int>(index), partitionId, attributes, {});
}

void FileTree::addAccel(const std::string& name, int device, uint32_t partition,
                        const std::vector<std::string>& attributes,
                        const std::vector<std::string>& writableAttributes) {
  add(accelDev_, name, TreeNode::Kind::DeviceNode, device, partition);
  const uint64_t dir = add(accelSys_, name, TreeNode::Kind::Directory, device, partition);
  for (const std::string& attr : attributes) {
    // "qaic-emu/fault/reset" -> directories qaic-emu, fault, then the file.
    uint64_t parent = dir;
    std::size_t start = 0;
    for (std::size_t slash; (slash = attr.find('/', start)) != std::string::npos; start = slash + 1)
      parent = directory(parent, attr.substr(start, slash - start), device, partition);
    TreeNode& file = nodes_.at(add(parent, attr.substr(start), TreeNode::Kind::Attribute, device, partition));
    file.attribute = attr;
    file.writable = std::find(writableAttributes.begin(), writableAttributes.end(), attr) != writableAttributes.end();
  }
}

void FileTree::removePartition(uint32_t partitionId) {
  std::unique_lock lock(mutex_);
  const std::string name = "accel" + std::to_string(partitionId);
  for (uint64_t parent : {accelDev_, accelSys_}) {
    const TreeNode* n = find(parent, name);
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
