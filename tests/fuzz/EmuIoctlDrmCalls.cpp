// SPDX-License-Identifier: Apache-2.0
// The DRM core's calls on the node: VERSION / GET_UNIQUE / SET_CLIENT_NAME with their strings
// at any pointer spec, GEM_CLOSE, PRIME export and import (of exports, memfds, the harness's
// other descriptors and arbitrary numbers), and GEM_FLINK / GEM_OPEN. Each keeps the session's
// view of its handles, and checks what the kernel promises: a closed handle is gone, an export
// imported on its own file is its handle, VERSION names qaic.
#include <drm.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "EmuIoctlHarness.hpp"
#include "EmuIoctlSession.hpp"
#include "driver/DeviceProtocol.hpp"

namespace qaic::fuzz {
void EmuIoctlHarness::drmInfo(Session& s, InputReader& in) {
  const uint8_t kind = in.u8() % 3;
  const uint64_t text = pointer(in);
  const uint16_t length = in.u16() % 256;
  if (kind == 0) {
    drm_version v{};
    v.name = reinterpret_cast<char*>(text);
    v.name_len = length;
    v.date = reinterpret_cast<char*>(text + 256);
    v.date_len = length % 3;
    v.desc = reinterpret_cast<char*>(text + 512);
    v.desc_len = length;
    drm_version out{};
    if (ioctl(s, DRM_IOCTL_VERSION, &v, sizeof v, &out, false) != 0) return;
    if (out.name_len != 4 || out.date_len != 1) violated("VERSION reported other lengths than qaic's");
    if (const std::byte* name = arenaAt(text, 4); name != nullptr && length >= 4 && std::memcmp(name, "qaic", 4) != 0)
      violated("VERSION wrote something else than the driver's name");
  } else if (kind == 1) {
    drm_unique u{length, reinterpret_cast<char*>(text)};
    drm_unique out{};
    if (ioctl(s, DRM_IOCTL_GET_UNIQUE, &u, sizeof u, &out, false) == 0 && out.unique_len != 12)
      violated("GET_UNIQUE is not a PCI address");
  } else {
    fillArena(in, text, length);
    struct {
      __u64 len;
      __u64 name;
    } n{length, text};
    ioctl(s, _IOWR('d', 0xD1, decltype(n)), &n, sizeof n, nullptr, false);
  }
}

void EmuIoctlHarness::gemClose(Session& s, InputReader& in) {
  const uint8_t fix = in.u8(), hi = in.u8();
  auto a = in.take<drm_gem_close>();
  if (fix & kFixHandle) a.handle = s.handle(hi, a.handle);
  if (fix & kFixFields) a.pad = 0;
  if (ioctl(s, DRM_IOCTL_GEM_CLOSE, &a, sizeof a, nullptr, isShort(fix)) != 0) return;
  std::erase_if(s.bos, [&](const Bo& b) { return b.handle == a.handle; });
  if (ioctl(s, DRM_IOCTL_GEM_CLOSE, &a, sizeof a, nullptr, false) != EINVAL) violated("a closed handle closed again");
  qaic_mmap_bo m{a.handle, 0, 0};
  if (ioctl(s, DRM_IOCTL_QAIC_MMAP_BO, &m, sizeof m, nullptr, false) != ENOENT)
    violated("a closed handle still names a BO");
}

void EmuIoctlHarness::primeExport(Session& s, InputReader& in) {
  const uint8_t fix = in.u8(), hi = in.u8(), kind = in.u8() % 4;
  auto a = in.take<drm_prime_handle>();
  if (fix & kFixHandle) a.handle = s.handle(hi, a.handle);
  if (fix & kFixFields) a.flags &= DRM_CLOEXEC | DRM_RDWR;
  int opened = -1;
  if (kind == 0) {
    // The protocol: the BO's memory file, opened as the flags say.
    qaic_mmap_bo m{a.handle, 0, 0};
    qaic_mmap_bo out{};
    if (ioctl(s, DRM_IOCTL_QAIC_MMAP_BO, &m, sizeof m, &out, false) != 0) return;
    // The export the kernel would make: device 0's memory file at the BO's offset.
    const std::string path = shm_->path() + "/" + driver::deviceMemoryFileName(0);
    opened = ::open(path.c_str(),
                    ((a.flags & DRM_RDWR) ? O_RDWR : O_RDONLY) | ((a.flags & DRM_CLOEXEC) ? O_CLOEXEC : 0));
    if (opened < 0) violated("a live BO has no memory file");
    if (::lseek(opened, static_cast<off_t>(out.offset), SEEK_SET) < 0) violated("a BO's offset is not seekable");
    a.fd = opened;
  } else if (kind == 1) {
    a.fd = -1;
  } else if (kind == 2) {
    a.fd = eventfd_;
  }  // kind 3: the number the input holds
  drm_prime_handle out{};
  const int rc = ioctl(s, DRM_IOCTL_PRIME_HANDLE_TO_FD, &a, sizeof a, &out, isShort(fix));
  if (kind == 0 && rc == 0 && !isShort(fix)) {
    if (out.fd != opened) violated("HANDLE_TO_FD answered another descriptor");
    s.exports.push_back({opened, a.handle});
    return;
  }
  if (kind == 0 && rc == 0)
    s.exports.push_back({opened, a.handle});
  else if (opened >= 0)
    ::close(opened);
  if (kind == 0 && rc != 0 && !isShort(fix) && (a.flags & ~(DRM_CLOEXEC | DRM_RDWR)) == 0 && rc != ENODEV)
    violated("an export of the BO's own memory file was refused");
}

void EmuIoctlHarness::primeImport(Session& s, InputReader& in) {
  const uint8_t fix = in.u8(), kind = in.u8() % 4, pickIndex = in.u8();
  auto a = in.take<drm_prime_handle>();
  const Session::Export* from = nullptr;
  if (kind == 0 && !s.exports.empty()) {
    from = &s.exports[pickIndex % s.exports.size()];
    a.fd = from->fd;
  } else if (kind == 1) {
    const int fd = ::memfd_create("emu-ioctl", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return;
    s.memfds.push_back(fd);
    if (::ftruncate(fd, 1 + a.handle % kMaxBoBytes) != 0) return;
    if (fix & kFixFields) (void)::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK);
    a.fd = fd;
  } else if (kind == 2) {
    a.fd = eventfd_;
  } else {
    a.fd %= 64;  // some number: the harness's own descriptors, or none
  }
  drm_prime_handle out{};
  if (ioctl(s, DRM_IOCTL_PRIME_FD_TO_HANDLE, &a, sizeof a, &out, isShort(fix)) != 0 || isShort(fix)) return;
  if (from != nullptr) {
    const bool exporterOpen = std::any_of(s.bos.begin(), s.bos.end(),
                                          [&](const Bo& b) { return b.handle == from->handle; });
    if (exporterOpen && out.handle != from->handle) violated("an export imported on its own file got a new handle");
  }
  for (const Bo& b : s.bos)
    if (b.handle == out.handle) return;
  struct stat st {};
  if (::fstat(a.fd, &st) != 0) return;
  s.bos.push_back(Bo{out.handle, static_cast<uint64_t>(st.st_size), std::nullopt, 0});
}

void EmuIoctlHarness::gemFlinkOpen(Session& s, InputReader& in) {
  const uint8_t fix = in.u8(), hi = in.u8();
  auto f = in.take<drm_gem_flink>();
  if (fix & kFixHandle) f.handle = s.handle(hi, f.handle);
  drm_gem_flink named{};
  if (ioctl(s, DRM_IOCTL_GEM_FLINK, &f, sizeof f, &named, false) != 0) return;
  drm_gem_open o{(fix & kFixFields) ? named.name : in.u32(), 0, 0};
  drm_gem_open opened{};
  if (ioctl(s, DRM_IOCTL_GEM_OPEN, &o, sizeof o, &opened, false) != 0) return;
  for (const Bo& b : s.bos)
    if (b.handle == opened.handle) violated("GEM_OPEN returned a handle in use");
  s.bos.push_back(Bo{opened.handle, opened.size, std::nullopt, 0});
}

}  // namespace qaic::fuzz
