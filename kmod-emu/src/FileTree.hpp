// The file tree qaic-emu serves under its root: dev/accel/accelN (device nodes) and
// sys/class/accel/accelN/... (attributes), as numbered nodes the FUSE layer looks up.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace qaic::emu {

struct TreeNode {
  enum class Kind { Directory, DeviceNode, Attribute };
  uint64_t ino = 0;
  uint64_t parent = 0;
  std::string name;
  Kind kind = Kind::Directory;
  int device = -1;         // the device this node belongs to, -1 for shared directories
  std::string attribute;   // Attribute: the name Device::readAttribute takes
  bool writable = false;
  std::vector<uint64_t> children;
};

class FileTree {
 public:
  static constexpr uint64_t kRootIno = 1;
  // dbcs[i] = DBC count of device i.
  explicit FileTree(const std::vector<uint32_t>& dbcs);

  const TreeNode* node(uint64_t ino) const;
  const TreeNode* child(uint64_t parent, const std::string& name) const;

 private:
  uint64_t add(uint64_t parent, std::string name, TreeNode::Kind kind, int device);
  uint64_t directory(uint64_t parent, const std::string& name, int device);
  std::vector<TreeNode> nodes_;  // index = ino - 1
};

}  // namespace qaic::emu
