// SPDX-License-Identifier: Apache-2.0
// The ten commands with their fixed arguments taken from the input, the fields named by the
// "fix" byte replaced with values the device accepts, and any other command number.
#include <sys/ioctl.h>

#include <algorithm>
#include <cstring>

#include "EmuIoctlHarness.hpp"
#include "EmuIoctlSession.hpp"
#include "driver/DeviceProtocol.hpp"

namespace qaic::fuzz {
namespace {

// Numbers whose handlers follow pointers or take descriptors of the caller (the device matches
// a number, whatever size and direction the command claims, as drm_ioctl() does): the DRM core's
// VERSION, GET_UNIQUE, PRIME and SET_CLIENT_NAME, the driver's ioctls and the emulator's one.
bool followsPointers(unsigned cmd) {
  if (_IOC_TYPE(cmd) != 'd') return false;
  const unsigned nr = _IOC_NR(cmd);
  return nr == 0x00 || nr == 0x01 || nr == 0x2d || nr == 0x2e || nr == 0xd1 || (nr >= 0x40 && nr <= 0x48) || nr == 0x60;
}

}  // namespace

void EmuIoctlHarness::rawManage(Session& s, InputReader& in) {
  const uint8_t fix = in.u8();
  auto m = in.take<qaic_manage_msg>();
  // The device writes its answer where `data` points: never at an address the input chose.
  m.data = pointer(in);
  const uint16_t n = in.u16() % (QAIC_MANAGE_MAX_MSG_LENGTH + 1);
  fillArena(in, m.data, n);
  if (fix & kFixFields) {
    m.len = n == 0 ? 1 : n;
    m.count = 1 + m.count % 8;
  }
  if (isShort(fix)) {
    ioctl(s, DRM_IOCTL_QAIC_MANAGE, &m, sizeof m, nullptr, true);
    return;
  }
  sendManage(s, m.data, m.len, m.count);
}

void EmuIoctlHarness::createBo(Session& s, InputReader& in) {
  const uint8_t fix = in.u8();
  auto a = in.take<qaic_create_bo>();
  if (a.size != 0 && a.size <= driver::kMaxBoBytes) a.size = 1 + a.size % kMaxBoBytes;
  if (fix & kFixFields) a.pad = 0;
  qaic_create_bo out{};
  if (ioctl(s, DRM_IOCTL_QAIC_CREATE_BO, &a, sizeof a, &out, isShort(fix)) != 0) return;
  for (const Bo& b : s.bos)
    if (b.handle == out.handle) violated("CREATE_BO returned a handle twice");
  s.bos.push_back(Bo{out.handle, a.size, std::nullopt, 0});
}

void EmuIoctlHarness::mmapBo(Session& s, InputReader& in) {
  const uint8_t fix = in.u8(), hi = in.u8();
  auto a = in.take<qaic_mmap_bo>();
  if (fix & kFixHandle) a.handle = s.handle(hi, a.handle);
  if (fix & kFixFields) a.pad = 0;
  qaic_mmap_bo out{};
  if (ioctl(s, DRM_IOCTL_QAIC_MMAP_BO, &a, sizeof a, &out, isShort(fix)) != 0) return;
  if (out.offset < driver::kFirstMmapOffset || out.offset % driver::kPageSize != 0)
    violated("MMAP_BO returned an offset that is not a page of the mmap space");
}

void EmuIoctlHarness::attachSlice(Session& s, InputReader& in) {
  const uint8_t fix = in.u8(), hi = in.u8(), di = in.u8();
  auto a = in.take<qaic_attach_slice>();
  a.data = pointer(in);
  fillArena(in, a.data, in.u16() % 2048);
  if (fix & kFixHandle) a.hdr.handle = s.handle(hi, a.hdr.handle);
  if (fix & kFixDbc) a.hdr.dbc_id = pick(s.dbcs, di, a.hdr.dbc_id);
  if (fix & kFixFields) {
    a.hdr.count = 1 + a.hdr.count % 4;
    a.hdr.dir = 1 + (a.hdr.dir & 1);
  }
  if (ioctl(s, DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &a, sizeof a, nullptr, isShort(fix)) != 0) return;
  for (Bo& b : s.bos) {
    if (b.handle != a.hdr.handle) continue;
    b.dbc = a.hdr.dbc_id;
    b.dir = a.hdr.dir;
  }
}

void EmuIoctlHarness::execute(Session& s, InputReader& in, bool partial) {
  const uint8_t fix = in.u8(), hi = in.u8(), di = in.u8();
  auto a = in.take<qaic_execute>();
  a.data = pointer(in);
  fillArena(in, a.data, in.u16() % 512);
  if (fix & kFixDbc) a.hdr.dbc_id = pick(s.dbcs, di, a.hdr.dbc_id);
  if (fix & kFixFields) a.hdr.count = 1 + a.hdr.count % 4;
  const std::size_t entrySize = partial ? sizeof(qaic_partial_execute_entry) : sizeof(qaic_execute_entry);
  if ((fix & kFixHandle) && !s.bos.empty() && a.hdr.count <= 16) {
    for (uint32_t i = 0; i < a.hdr.count; ++i) {
      std::byte* entry = arenaAt(a.data + i * entrySize, entrySize);
      if (entry == nullptr) break;
      const Bo& b = *s.bo(static_cast<uint8_t>(hi + i));
      qaic_execute_entry e{b.handle, b.dir};
      std::memcpy(entry, &e, sizeof e);
    }
  }
  ioctl(s, partial ? DRM_IOCTL_QAIC_PARTIAL_EXECUTE_BO : DRM_IOCTL_QAIC_EXECUTE_BO, &a, sizeof a, nullptr,
        isShort(fix));
}

void EmuIoctlHarness::waitBo(Session& s, InputReader& in) {
  const uint8_t fix = in.u8(), hi = in.u8(), di = in.u8();
  auto a = in.take<qaic_wait>();
  a.timeout = 1 + a.timeout % kMaxWaitMs;
  if (fix & kFixHandle) a.handle = s.handle(hi, a.handle);
  if (fix & kFixDbc) a.dbc_id = pick(s.dbcs, di, a.dbc_id);
  if (fix & kFixFields) a.pad = 0;
  ioctl(s, DRM_IOCTL_QAIC_WAIT_BO, &a, sizeof a, nullptr, isShort(fix));
}

void EmuIoctlHarness::perfStats(Session& s, InputReader& in) {
  const uint8_t fix = in.u8(), hi = in.u8(), di = in.u8();
  auto a = in.take<qaic_perf_stats>();
  // The device writes the statistics back where `data` points.
  a.data = pointer(in);
  fillArena(in, a.data, in.u16() % 1024);
  if (fix & kFixDbc) a.hdr.dbc_id = pick(s.dbcs, di, a.hdr.dbc_id);
  if (fix & kFixFields) {
    a.hdr.count = static_cast<uint16_t>(1 + a.hdr.count % 4);
    a.hdr.pad = 0;
  }
  if ((fix & kFixHandle) && !s.bos.empty() && a.hdr.count <= 16) {
    for (uint32_t i = 0; i < a.hdr.count; ++i) {
      std::byte* entry = arenaAt(a.data + i * sizeof(qaic_perf_stats_entry), sizeof(qaic_perf_stats_entry));
      if (entry == nullptr) break;
      const uint32_t handle = s.bo(static_cast<uint8_t>(hi + i))->handle;
      std::memcpy(entry, &handle, sizeof handle);
    }
  }
  qaic_perf_stats out{};
  ioctl(s, DRM_IOCTL_QAIC_PERF_STATS_BO, &a, sizeof a, &out, isShort(fix));
}

void EmuIoctlHarness::detachSlice(Session& s, InputReader& in) {
  const uint8_t fix = in.u8(), hi = in.u8();
  auto a = in.take<qaic_detach_slice>();
  if (fix & kFixHandle) a.handle = s.handle(hi, a.handle);
  if (fix & kFixFields) a.pad = 0;
  if (ioctl(s, DRM_IOCTL_QAIC_DETACH_SLICE_BO, &a, sizeof a, nullptr, isShort(fix)) != 0) return;
  for (Bo& b : s.bos)
    if (b.handle == a.handle) b.dbc.reset();
}

void EmuIoctlHarness::dbcInfo(Session& s, InputReader& in) {
  const uint8_t fix = in.u8(), di = in.u8();
  auto a = in.take<qaic_emu_dbc_info>();
  if (fix & kFixDbc) a.dbc_id = pick(s.dbcs, di, a.dbc_id);
  if (fix & kFixFields) a.pad = 0;
  qaic_emu_dbc_info out{};
  if (ioctl(s, DRM_IOCTL_QAIC_EMU_DBC_INFO, &a, sizeof a, &out, isShort(fix)) != 0) return;
  if (std::memchr(out.name, 0, sizeof out.name) == nullptr)
    violated("EMU_DBC_INFO returned a window name without its NUL");
  if (out.request_offset + uint64_t{out.nelem} * driver::kRequestElementBytes > out.response_offset ||
      out.response_offset + uint64_t{out.nelem} * driver::kResponseElementBytes > out.window_size)
    violated("EMU_DBC_INFO returned FIFOs outside the window");
}

void EmuIoctlHarness::rawCommand(Session& s, InputReader& in) {
  unsigned cmd = in.u32();
  const uint8_t fix = in.u8();
  // Such a command would have its embedded pointers followed: those go through the ops above.
  if (followsPointers(cmd)) cmd ^= 0x80;
  std::vector<std::byte> arg(_IOC_SIZE(cmd));
  std::vector<std::byte> bytes(in.u8());
  in.bytes(bytes.data(), bytes.size());
  if (!arg.empty() && !bytes.empty()) std::memcpy(arg.data(), bytes.data(), std::min(arg.size(), bytes.size()));
  const int rc = ioctl(s, cmd, arg.data(), arg.size(), nullptr, isShort(fix));
  // Another ioctl type is not the DRM's; its DRM core commands (GET_CAP, GEM_CLOSE, ...) may
  // well succeed.
  if (_IOC_TYPE(cmd) != 'd' && rc != ENOTTY && rc != ENODEV) violated("a foreign ioctl type did something");
}

}  // namespace qaic::fuzz
