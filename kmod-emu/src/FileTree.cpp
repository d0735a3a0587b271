#include "FileTree.hpp"

#include "Device.hpp"

namespace qaic::emu {

FileTree::FileTree(const std::vector<uint32_t>& dbcs) {
  add(0, "", TreeNode::Kind::Directory, -1);
  const uint64_t accelDev = directory(directory(kRootIno, "dev", -1), "accel", -1);
  const uint64_t accelSys =
      directory(directory(directory(kRootIno, "sys", -1), "class", -1), "accel", -1);
  for (std::size_t d = 0; d < dbcs.size(); ++d) {
    const int dev = static_cast<int>(d);
    const std::string name = "accel" + std::to_string(d);
    add(accelDev, name, TreeNode::Kind::DeviceNode, dev);
    const uint64_t dir = add(accelSys, name, TreeNode::Kind::Directory, dev);
    for (const std::string& attr : Device::attributeNames(dbcs[d])) {
      // "device/fault/reset" -> directories device, fault, then the file.
      uint64_t parent = dir;
      std::size_t start = 0;
      for (std::size_t slash; (slash = attr.find('/', start)) != std::string::npos;
           start = slash + 1)
        parent = directory(parent, attr.substr(start, slash - start), dev);
      const uint64_t ino = add(parent, attr.substr(start), TreeNode::Kind::Attribute, dev);
      nodes_[ino - 1].attribute = attr;
      nodes_[ino - 1].writable = Device::attributeWritable(attr);
    }
  }
}

uint64_t FileTree::add(uint64_t parent, std::string name, TreeNode::Kind kind, int device) {
  TreeNode n;
  n.ino = nodes_.size() + 1;
  n.parent = parent == 0 ? n.ino : parent;
  n.name = std::move(name);
  n.kind = kind;
  n.device = device;
  nodes_.push_back(std::move(n));
  if (parent != 0) nodes_[parent - 1].children.push_back(nodes_.back().ino);
  return nodes_.back().ino;
}

uint64_t FileTree::directory(uint64_t parent, const std::string& name, int device) {
  if (const TreeNode* existing = child(parent, name)) return existing->ino;
  return add(parent, name, TreeNode::Kind::Directory, device);
}

const TreeNode* FileTree::node(uint64_t ino) const {
  if (ino == 0 || ino > nodes_.size()) return nullptr;
  return &nodes_[ino - 1];
}

const TreeNode* FileTree::child(uint64_t parent, const std::string& name) const {
  const TreeNode* p = node(parent);
  if (p == nullptr) return nullptr;
  for (uint64_t c : p->children)
    if (nodes_[c - 1].name == name) return &nodes_[c - 1];
  return nullptr;
}

}  // namespace qaic::emu
