// SPDX-License-Identifier: Apache-2.0
#include "FuseOps.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "Emulator.hpp"

namespace qaic::emu {
namespace {

Emulator& emu(fuse_req_t req) { return *static_cast<Emulator*>(fuse_req_userdata(req)); }

// A node is visible unless it belongs to a removed device (a partition's nodes leave the tree
// when it ends).
std::optional<TreeNode> visible(Emulator& e, uint64_t ino) {
  auto n = e.tree().node(ino);
  if (!n) return std::nullopt;
  if (n->device >= 0) {
    Device* d = e.device(static_cast<std::size_t>(n->device));
    if (d == nullptr || d->removed()) return std::nullopt;
  }
  return n;
}

// sysfs belongs to its administrator: root for a root emulator, else the user who runs it.
struct stat attributesOf(Emulator& e, const TreeNode& n) {
  struct stat st {};
  st.st_ino = n.ino;
  st.st_uid = e.administrator();
  st.st_gid = e.administratorGroup();
  switch (n.kind) {
    case TreeNode::Kind::Directory:
      st.st_mode = S_IFDIR | 0755;
      st.st_nlink = 2;
      break;
    case TreeNode::Kind::DeviceNode: {
      // An ended partition's node that is still being looked at: nobody may open it.
      const auto p = e.nodeOwner(n).value_or(ResolvedNodePolicy{0, 0, 0});
      st.st_mode = S_IFREG | p.mode;
      st.st_uid = p.uid;
      st.st_gid = p.gid;
      st.st_nlink = 1;
      break;
    }
    case TreeNode::Kind::Attribute:
      st.st_mode = S_IFREG | (n.mode != 0 ? n.mode : n.writable ? 0644 : 0444);
      st.st_nlink = 1;
      st.st_size = 4096;  // like sysfs: a page, whatever the content
      break;
    case TreeNode::Kind::Symlink:
      st.st_mode = S_IFLNK | 0777;
      st.st_nlink = 1;
      st.st_size = static_cast<off_t>(n.target.size());
      break;
  }
  return st;
}

void opLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Emulator& e = emu(req);
  if (!visible(e, parent)) return void(fuse_reply_err(req, ENOENT));
  auto n = e.tree().child(parent, name);
  if (!n || !visible(e, n->ino)) return void(fuse_reply_err(req, ENOENT));
  fuse_entry_param entry{};
  entry.ino = n->ino;
  entry.attr = attributesOf(e, *n);
  // No caching: attributes change with every ioctl and devices come and go.
  entry.attr_timeout = 0;
  entry.entry_timeout = 0;
  fuse_reply_entry(req, &entry);
}

void opGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  Emulator& e = emu(req);
  auto n = visible(e, ino);
  if (!n) return void(fuse_reply_err(req, ENOENT));
  struct stat st = attributesOf(e, *n);
  fuse_reply_attr(req, &st, 0);
}

// Only truncation (the O_TRUNC of `echo 1 > fault/reset`) reaches here; there is nothing to cut.
void opSetattr(fuse_req_t req, fuse_ino_t ino, struct stat*, int toSet, fuse_file_info* fi) {
  if (toSet & ~(FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
                FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME))
    return void(fuse_reply_err(req, EPERM));
  opGetattr(req, ino, fi);
}

void opReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  Emulator& e = emu(req);
  auto dir = visible(e, ino);
  if (!dir) return void(fuse_reply_err(req, ENOENT));
  if (dir->kind != TreeNode::Kind::Directory) return void(fuse_reply_err(req, ENOTDIR));
  auto parent = e.tree().node(dir->parent);
  std::vector<std::pair<std::string, TreeNode>> entries = {{".", *dir}, {"..", parent.value_or(*dir)}};
  for (const TreeNode& c : e.tree().children(ino))
    if (visible(e, c.ino)) entries.emplace_back(c.name, c);
  std::vector<char> buf(size);
  std::size_t used = 0;
  for (std::size_t i = static_cast<std::size_t>(off); i < entries.size(); ++i) {
    struct stat st = attributesOf(e, entries[i].second);
    std::size_t len = fuse_add_direntry(req, buf.data() + used, size - used, entries[i].first.c_str(), &st,
                                        static_cast<off_t>(i + 1));
    if (len > size - used) break;
    used += len;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void opReadlink(fuse_req_t req, fuse_ino_t ino) {
  Emulator& e = emu(req);
  auto n = visible(e, ino);
  if (!n) return void(fuse_reply_err(req, ENOENT));
  if (n->kind != TreeNode::Kind::Symlink) return void(fuse_reply_err(req, EINVAL));
  fuse_reply_readlink(req, n->target.c_str());
}

void opOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  Emulator& e = emu(req);
  auto n = visible(e, ino);
  if (!n) return void(fuse_reply_err(req, ENOENT));
  fi->direct_io = 1;
  fi->keep_cache = 0;
  if (n->kind == TreeNode::Kind::Directory) return void(fuse_reply_err(req, EISDIR));
  if (n->kind == TreeNode::Kind::Symlink) return void(fuse_reply_err(req, ELOOP));
  if (n->kind == TreeNode::Kind::DeviceNode) {
    Device* dev = e.device(static_cast<std::size_t>(n->device));
    if (dev == nullptr) return void(fuse_reply_err(req, ENODEV));
    const fuse_ctx* ctx = fuse_req_ctx(req);
    int err = 0;
    auto file = dev->open(ctx->uid, ctx->gid, err, n->partition);
    if (!file) return void(fuse_reply_err(req, err));
    // A passthrough open maps the node onto its memory file (mmap of a BO); the kernel allows
    // such an open no FOPEN_NONSEEKABLE. Read, write and ioctl still come here (direct_io).
    const int backing = e.passthroughBacking(*dev, *file);
    fi->nonseekable = backing > 0 ? 0 : 1;
    auto h = std::make_shared<OpenHandle>();
    h->device = dev;
    h->file = std::move(file);
    fi->fh = e.addHandle(h);
    if (backing > 0) e.passthrough().expectOpen(fi->fh, backing);
    if (fuse_reply_open(req, fi) != 0) {
      e.passthrough().forgetOpen(fi->fh);
      if (e.takeHandle(fi->fh)) dev->release(h->file);
    }
    return;
  }
  if ((fi->flags & O_ACCMODE) != O_RDONLY && !n->writable) return void(fuse_reply_err(req, EACCES));
  auto content = e.readAttribute(*n);
  if (!content) return void(fuse_reply_err(req, ENOENT));
  auto h = std::make_shared<OpenHandle>();
  h->content = std::move(*content);
  fi->fh = e.addHandle(std::move(h));
  if (fuse_reply_open(req, fi) != 0) e.takeHandle(fi->fh);
}

void opRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  Emulator& e = emu(req);
  auto h = e.handle(fi->fh);
  if (!h || h->file) return void(fuse_reply_err(req, EINVAL));
  std::unique_lock lock(h->contentMutex);
  if (off == 0 && h->contentRead) {
    // Read again from the start: the value now, as sysfs shows it (ENODEV once the device or
    // partition is gone).
    lock.unlock();
    auto n = visible(e, ino);
    auto content = n ? e.readAttribute(*n) : std::nullopt;
    if (!content) return void(fuse_reply_err(req, ENODEV));
    lock.lock();
    h->content = std::move(*content);
  }
  h->contentRead = true;
  const std::string s = h->content;
  lock.unlock();
  if (off < 0 || static_cast<std::size_t>(off) >= s.size()) return void(fuse_reply_buf(req, nullptr, 0));
  fuse_reply_buf(req, s.data() + off, std::min(size, s.size() - static_cast<std::size_t>(off)));
}

void opWrite(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t, fuse_file_info*) {
  Emulator& e = emu(req);
  auto n = visible(e, ino);
  if (!n) return void(fuse_reply_err(req, ENODEV));
  if (n->kind != TreeNode::Kind::Attribute || !n->writable) return void(fuse_reply_err(req, EINVAL));
  int err = e.writeAttribute(*n, std::string(buf, size));
  if (err != 0) return void(fuse_reply_err(req, err));
  fuse_reply_write(req, size);
}

void opRelease(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  if (auto h = emu(req).takeHandle(fi->fh); h && h->file) h->device->release(h->file);
  fuse_reply_err(req, 0);
}

void opIoctl(fuse_req_t req, fuse_ino_t, unsigned int cmd, void*, fuse_file_info* fi, unsigned flags, const void* inBuf,
             size_t inSize, size_t outSize) {
  if (flags & FUSE_IOCTL_COMPAT) return void(fuse_reply_err(req, ENOSYS));
  auto h = emu(req).handle(fi->fh);
  if (!h) return void(fuse_reply_err(req, EBADF));
  if (!h->file) return void(fuse_reply_err(req, ENOTTY));  // an attribute file
  std::vector<std::byte> out(outSize);
  if (outSize > 0 && inSize > 0) std::memcpy(out.data(), inBuf, std::min(inSize, outSize));
  IoctlCall call;
  call.pid = fuse_req_ctx(req)->pid;
  call.in = inBuf;
  call.inSize = inSize;
  call.out = out.data();
  call.outSize = outSize;
  int err = h->device->ioctl(*h->file, cmd, call);
  if (err != 0) return void(fuse_reply_err(req, err));
  fuse_reply_ioctl(req, 0, outSize ? out.data() : nullptr, outSize);
}

// The kernel's INIT is the first request of a mount: once a worker has taken it, the tree serves.
void opInit(void* userdata, fuse_conn_info*) { static_cast<Emulator*>(userdata)->noteInitialized(); }

fuse_lowlevel_ops makeOps() {
  fuse_lowlevel_ops ops{};
  ops.init = opInit;
  ops.lookup = opLookup;
  ops.getattr = opGetattr;
  ops.setattr = opSetattr;
  ops.readdir = opReaddir;
  ops.readlink = opReadlink;
  ops.open = opOpen;
  ops.read = opRead;
  ops.write = opWrite;
  ops.release = opRelease;
  ops.ioctl = opIoctl;
  return ops;
}

}  // namespace

const fuse_lowlevel_ops& fuseOperations() {
  static const fuse_lowlevel_ops ops = makeOps();
  return ops;
}

}  // namespace qaic::emu
