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
    const uint64_t ino = add(parent, attr.substr(start), TreeNode::Kind::Attribute, device, partition);
    nodes_[ino - 1].attribute = attr;
    nodes_[ino - 1].writable = std::find(writableAttributes.begin(), writableAttributes.end(), attr) !=
                               writableAttributes.end();
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
  const uint64_t ino = add(busDir_, name, TreeNode::Kind::Attribute, -1, 0);
  nodes_[ino - 1].attribute = name;
  nodes_[ino - 1].writable = true;
}

void FileTree::addModuleParameter(const std::string& name, uint32_t mode) {
  std::unique_lock lock(mutex_);
  const uint64_t ino = add(parametersDir_, name, TreeNode::Kind::Attribute, -1, 0);
  nodes_[ino - 1].attribute = "module/" + name;
  nodes_[ino - 1].writable = (mode & 0200) != 0;
  nodes_[ino - 1].mode = mode;
}

uint64_t FileTree::add(uint64_t parent, std::string name, TreeNode::Kind kind, int device, uint32_t partition) {
  TreeNode n;
  n.ino = nodes_.size() + 1;
  n.parent = parent == 0 ? n.ino : parent;
  n.name = std::move(name);
  n.kind = kind;
  n.device = device;
  n.partition = partition;
  nodes_.push_back(std::move(n));
  if (parent != 0) nodes_[parent - 1].children.push_back(nodes_.back().ino);
  return nodes_.back().ino;
}

uint64_t FileTree::directory(uint64_t parent, const std::string& name, int device, uint32_t partition) {
  if (const TreeNode* existing = find(parent, name)) return existing->ino;
  return add(parent, name, TreeNode::Kind::Directory, device, partition);
}

// A removed subtree stays in nodes_ (its inode numbers are never handed out again) but is no
// longer alive nor reachable from its parent.
void FileTree::unlink(uint64_t ino) {
  TreeNode& n = nodes_[ino - 1];
  n.alive = false;
  for (uint64_t c : n.children) unlink(c);
  auto& siblings = nodes_[n.parent - 1].children;
  std::erase(siblings, ino);
}

const TreeNode* FileTree::find(uint64_t parent, const std::string& name) const {
  if (parent == 0 || parent > nodes_.size()) return nullptr;
  for (uint64_t c : nodes_[parent - 1].children)
    if (nodes_[c - 1].name == name) return &nodes_[c - 1];
  return nullptr;
}

std::optional<TreeNode> FileTree::node(uint64_t ino) const {
  std::shared_lock lock(mutex_);
  if (ino == 0 || ino > nodes_.size() || !nodes_[ino - 1].alive) return std::nullopt;
  return nodes_[ino - 1];
}

std::optional<TreeNode> FileTree::child(uint64_t parent, const std::string& name) const {
  std::shared_lock lock(mutex_);
  if (parent == 0 || parent > nodes_.size() || !nodes_[parent - 1].alive) return std::nullopt;
  const TreeNode* n = find(parent, name);
  if (n == nullptr) return std::nullopt;
  return *n;
}

std::vector<TreeNode> FileTree::children(uint64_t parent) const {
  std::shared_lock lock(mutex_);
  std::vector<TreeNode> out;
  if (parent == 0 || parent > nodes_.size() || !nodes_[parent - 1].alive) return out;
  for (uint64_t c : nodes_[parent - 1].children) out.push_back(nodes_[c - 1]);
  return out;
}

}  // namespace qaic::emu
