// SPDX-License-Identifier: Apache-2.0
// Calls the harness builds itself from a few input bytes: manage messages written by
// libqaic/driver's builder (one byte flipped on request), slices laid over the test program's IO
// region, executes of the attached BOs, BO contents, and fault-file writes.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "EmuIoctlHarness.hpp"
#include "EmuIoctlSession.hpp"
#include "ReluProgram.hpp"
#include "driver/DeviceProtocol.hpp"
#include "driver/ManageMessage.hpp"
#include "driver/SysfsNames.hpp"

namespace qaic::fuzz {
namespace {

using testing::kReluDoorbell;
using testing::kReluInputOffset;
using testing::kReluOutputOffset;

}  // namespace

void EmuIoctlHarness::wellFormedManage(Session& s, InputReader& in) {
  driver::ManageMessageBuilder b;
  const auto kind = static_cast<ManageKind>(in.u8() % static_cast<uint8_t>(ManageKind::Count));
  auto load = [&](uint32_t tag) {
    const uint8_t shape = in.u8();
    const std::size_t pieces = 1 + (shape & 3);
    const std::size_t step = container_.size() / pieces;
    for (std::size_t i = 0; i < pieces; ++i) {
      const std::size_t from = i * step, to = i + 1 == pieces ? container_.size() : from + step;
      b.dmaTransfer(tag, reinterpret_cast<uint64_t>(container_.data() + from), to - from);
    }
    return (shape & 4) != 0;  // send the later pieces as DMA_XFER_CONT
  };
  auto activate = [&](uint32_t tag) {
    const uint8_t program = in.u8() % 2;  // 1 names a program the container lacks
    const uint16_t queue = in.u16();
    const uint8_t fdKind = in.u8() % 4;
    const int fds[] = {0, eventfd_, STDERR_FILENO, 0x7fffffff};
    b.activate(queue, static_cast<uint32_t>(fds[fdKind]), driver::makeActivateOptions(tag, program));
  };
  bool continuation = false;
  driver::ResourceGroupRequest group{driver::kResourceGroupMagic, driver::kResourceGroupVersion, 0, 0, {}};
  switch (kind) {
    case ManageKind::Status: b.status(); break;
    case ManageKind::Reserve:
      group.op = static_cast<uint32_t>(driver::ResourceGroupOp::Reserve);
      group.resources.numNsp = in.u8() % 20;
      group.resources.numMcid = in.u8() % 30;
      group.resources.numSem = in.u16() % 600;
      group.resources.numVc = in.u8() % 20;
      group.resources.ddrSize = uint64_t{in.u16()} << 20;
      b.resourceGroup(group);
      break;
    case ManageKind::ReleaseGroup:
    case ManageKind::QueryGroup:
      group.op = static_cast<uint32_t>(kind == ManageKind::ReleaseGroup ? driver::ResourceGroupOp::Release
                                                                        : driver::ResourceGroupOp::Query);
      group.groupId = pick(s.groups, in.u8(), 1);
      b.resourceGroup(group);
      break;
    case ManageKind::Load: continuation = load(1 + in.u8() % 4); break;
    case ManageKind::ReleaseLoad: b.dmaTransfer(1 + in.u8() % 4, 0, 0); break;
    case ManageKind::Activate: activate(1 + in.u8() % 4); break;
    case ManageKind::LoadAndActivate: {
      const uint32_t tag = 1 + in.u8() % 4;
      continuation = load(tag);
      activate(tag);
      break;
    }
    case ManageKind::Deactivate: b.deactivate(pick(s.dbcs, in.u8(), 0)); break;
    case ManageKind::Count: break;
  }
  driver::ManageBuffer msg = b.take();
  if (continuation) {
    // Every DMA transaction after the first of the load becomes a continuation.
    for (std::size_t off = sizeof(qaic_manage_trans_dma_xfer); off < msg.len;
         off += sizeof(qaic_manage_trans_dma_xfer)) {
      qaic_manage_trans_hdr hdr;
      std::memcpy(&hdr, msg.data() + off, sizeof hdr);
      if (hdr.type != QAIC_TRANS_DMA_XFER_FROM_USR) break;
      hdr.type = QAIC_TRANS_DMA_XFER_CONT;
      std::memcpy(msg.data() + off, &hdr, sizeof hdr);
    }
  }
  // One flipped byte keeps the rest of the message valid.
  const uint16_t at = in.u16();
  const uint8_t flip = in.u8();
  if (msg.len > 0) msg.bytes[at % msg.len] ^= std::byte{flip};
  std::memcpy(arena_ + kManageAt, msg.bytes.data(), msg.bytes.size());
  sendManage(s, reinterpret_cast<uint64_t>(arena_ + kManageAt), msg.len, msg.count);
}

void EmuIoctlHarness::wellFormedAttach(Session& s, InputReader& in) {
  const uint8_t hi = in.u8(), di = in.u8(), shape = in.u8(), flags = in.u8();
  Bo* bo = s.bo(hi);
  if (bo == nullptr) return;
  const uint32_t dbc = pick(s.dbcs, di, 0);
  const bool toDevice = (shape & 1) == 0;
  uint32_t count = 1 + ((shape >> 1) & 3);
  if (bo->size < count) count = 1;
  // Inputs land on the program's input (or, with flag 2, over the request descriptor); outputs
  // come from its output. The last input slice rings the program's doorbell with flag 1; the
  // outputs then wait for its done semaphore and take it back.
  const uint64_t deviceBase = toDevice ? ((flags & 2) ? 0 : kReluInputOffset) : kReluOutputOffset;
  std::vector<qaic_attach_slice_entry> entries(count);
  const uint64_t step = bo->size / count;
  for (uint32_t i = 0; i < count; ++i) {
    auto& e = entries[i];
    e.offset = i * step;
    e.size = i + 1 == count ? bo->size - e.offset : step;
    e.dev_addr = deviceBase + e.offset;
    const bool last = i + 1 == count;
    if (toDevice && last && (flags & 1)) {
      e.db_addr = kReluDoorbell;
      e.db_len = 32;
      e.db_data = 1;
    }
    if (!toDevice && (flags & 1)) {
      if (i == 0) e.sem0 = {0, 0, 1, QAIC_SEM_WAIT_GT_0, 0, 0};
      if (last) e.sem1 = {1, 0, 0, QAIC_SEM_DEC, 0, 0};
    }
  }
  std::memcpy(arena_ + kSlicesAt, entries.data(), entries.size() * sizeof entries[0]);
  qaic_attach_slice a{};
  a.hdr = {count, dbc, bo->handle, static_cast<uint32_t>(toDevice ? QAIC_DIR_TO_DEVICE : QAIC_DIR_FROM_DEVICE),
           bo->size};
  a.data = reinterpret_cast<uint64_t>(arena_ + kSlicesAt);
  if (ioctl(s, DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &a, sizeof a, nullptr, false) != 0) return;
  bo->dbc = dbc;
  bo->dir = a.hdr.dir;
}

void EmuIoctlHarness::wellFormedExecute(Session& s, InputReader& in) {
  const uint8_t di = in.u8(), flags = in.u8(), count = in.u8();
  const uint32_t resize = in.u32();
  const uint32_t dbc = pick(s.dbcs, di, 0);
  const bool partial = flags & 1;
  std::vector<qaic_partial_execute_entry> entries;
  for (const Bo& b : s.bos) {
    if (b.dbc != dbc || entries.size() > count % 4u) continue;
    entries.push_back({b.handle, b.dir, partial ? resize % (b.size + 1) : 0});
  }
  if (entries.empty()) return;
  std::byte* at = arena_ + kEntriesAt;
  for (const auto& e : entries) {
    if (partial) {
      std::memcpy(at, &e, sizeof e);
      at += sizeof e;
    } else {
      qaic_execute_entry plain{e.handle, e.dir};
      std::memcpy(at, &plain, sizeof plain);
      at += sizeof plain;
    }
  }
  qaic_execute a{};
  a.hdr = {static_cast<uint32_t>(entries.size()), dbc};
  a.data = reinterpret_cast<uint64_t>(arena_ + kEntriesAt);
  ioctl(s, partial ? DRM_IOCTL_QAIC_PARTIAL_EXECUTE_BO : DRM_IOCTL_QAIC_EXECUTE_BO, &a, sizeof a, nullptr, false);
}

// What a client does through its mapping of the BO, done through the BO's memory file.
void EmuIoctlHarness::writeBo(Session& s, InputReader& in) {
  const uint8_t hi = in.u8(), flags = in.u8();
  const uint16_t offset = in.u16();
  std::vector<std::byte> bytes(in.u8());
  in.bytes(bytes.data(), bytes.size());
  Bo* bo = s.bo(hi);
  if (bo == nullptr) return;
  qaic_mmap_bo a{bo->handle, 0, 0};
  qaic_mmap_bo out{};
  if (ioctl(s, DRM_IOCTL_QAIC_MMAP_BO, &a, sizeof a, &out, false) != 0) return;  // removed device
  const std::string path = shm_->path() + "/" + driver::deviceMemoryFileName(0);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) violated("a live BO has no memory file");
  if (flags & 1) {
    // The test program's request: both buffers present, x at its full dims [1, 16].
    struct {
      driver::RequestDescriptorHeader header;
      driver::RequestDescriptorEntry entries[2];
    } request{{driver::kRequestDescriptorMagic, driver::kDescriptorVersion, 2, 1}, {{1, 2, {1, 16}}, {1, 2, {1, 16}}}};
    if (sizeof request <= bo->size) (void)!::pwrite(fd, &request, sizeof request, static_cast<off_t>(out.offset));
  }
  if (offset < bo->size && !bytes.empty())
    (void)!::pwrite(fd, bytes.data(), std::min<uint64_t>(bytes.size(), bo->size - offset),
                    static_cast<off_t>(out.offset + offset));
  ::close(fd);
}

// The fault files an operator writes through sysfs, so that the ioctls also run against a
// device whose transfers fail, whose NSPs hang, that was reset or that is gone.
void EmuIoctlHarness::fault(Session& s, InputReader& in) {
  const uint8_t kind = in.u8() % 4, value = in.u8();
  switch (kind) {
    case 0:
      s.device->writeAttribute(driver::sysfs::kFaultDmaFail,
                               std::to_string(value % 9) + " " + std::to_string(1 + value / 9 % 4));
      break;
    case 1: s.device->writeAttribute(driver::sysfs::kFaultNspHang, (value & 1) ? "1" : "0"); break;
    case 2: s.device->writeAttribute(driver::sysfs::kFaultReset, "1"); break;
    case 3: s.device->writeAttribute(driver::sysfs::kFaultRemove, "1"); break;
  }
}

}  // namespace qaic::fuzz
