// SPDX-License-Identifier: Apache-2.0
#include "EmuIoctlSeeds.hpp"

#include <drm.h>
#include <fcntl.h>

#include "EmuIoctlInput.hpp"
#include "ReluProgram.hpp"
#include "driver/DeviceProtocol.hpp"
#include "qaic/uapi/qaic_accel.h"

namespace qaic::fuzz {
namespace {

using testing::kReluInputOffset;

constexpr uint8_t kFixAll = kFixHandle | kFixDbc | kFixFields;

InputWriter& manage(InputWriter& w, ManageKind kind) {
  return w.op(Op::WellFormedManage).u8(static_cast<uint8_t>(kind));
}
// The trailer of every well-formed manage call: no byte flipped.
InputWriter& unflipped(InputWriter& w) { return w.u16(0).u8(0); }

// Load the test container as tag 1 in `pieces` DMA transfers (CONT after the first with `cont`)
// and activate it with a queue of `queue` elements; fdKind 1 passes the harness's eventfd.
InputWriter& loadAndActivate(InputWriter& w, uint8_t pieces, bool cont, uint16_t queue, uint8_t fdKind) {
  manage(w, ManageKind::LoadAndActivate).u8(0).u8(static_cast<uint8_t>((pieces - 1) | (cont ? 4 : 0)));
  w.u8(0).u16(queue).u8(fdKind);
  return unflipped(w);
}

InputWriter& createBo(InputWriter& w, uint64_t size) {
  return w.op(Op::CreateBo).u8(kFixFields).put(qaic_create_bo{size, 0, 0});
}

// BO 0 in (doorbell), BO 1 out (waits for the program) on the first DBC.
InputWriter& inferenceSetup(InputWriter& w) {
  loadAndActivate(w, 2, true, 32, 0);
  createBo(w, 64);
  createBo(w, 64);
  w.op(Op::WellFormedAttach).u8(0).u8(0).u8(0).u8(1);
  w.op(Op::WellFormedAttach).u8(1).u8(0).u8(1).u8(1);
  return w;
}

InputWriter& waitBo(InputWriter& w, uint8_t bo) {
  return w.op(Op::WaitBo).u8(kFixAll).u8(bo).u8(0).put(qaic_wait{0, 10, 0, 0});
}

// A raw MANAGE whose message (one STATUS transaction) sits at `kind`/`offset`.
InputWriter& rawStatus(InputWriter& w, PointerKind kind, uint16_t offset) {
  w.op(Op::Manage).u8(kFixFields).put(qaic_manage_msg{0, 0, 0}).pointer(kind, offset);
  return w.u16(8).put(qaic_manage_trans_hdr{QAIC_TRANS_STATUS_FROM_USR, 8});
}

}  // namespace

Seeds emuIoctlSeeds() {
  Seeds seeds;
  auto add = [&](const char* name, const InputWriter& w) { seeds.emplace_back(name, w.data()); };
  {
    InputWriter w;
    unflipped(manage(w, ManageKind::Status));
    add("seed-status", w);
  }
  {
    InputWriter w;
    unflipped(manage(w, ManageKind::Reserve).u8(4).u8(2).u16(8).u8(2).u16(64));
    unflipped(manage(w, ManageKind::QueryGroup).u8(0));
    loadAndActivate(w, 1, false, 0, 0);                    // draws from the group
    unflipped(manage(w, ManageKind::ReleaseGroup).u8(0));  // busy
    unflipped(manage(w, ManageKind::Deactivate).u8(0));
    unflipped(manage(w, ManageKind::ReleaseGroup).u8(0));
    add("seed-resource-group", w);
  }
  {
    InputWriter w;
    loadAndActivate(w, 1, false, 16, 1);
    w.op(Op::DbcInfo).u8(kFixDbc | kFixFields).u8(0).put(qaic_emu_dbc_info{});
    unflipped(manage(w, ManageKind::Deactivate).u8(0));
    unflipped(manage(w, ManageKind::ReleaseLoad).u8(0));
    add("seed-activate-info-deactivate", w);
  }
  {
    InputWriter w;
    unflipped(manage(w, ManageKind::Load).u8(0).u8(3));  // four pieces
    unflipped(manage(w, ManageKind::Activate).u8(0).u8(0).u16(8).u8(0));
    unflipped(manage(w, ManageKind::Activate).u8(0).u8(1).u16(8).u8(0));  // no program 1
    unflipped(manage(w, ManageKind::Load).u8(0).u8(4));                   // sealed: EBUSY
    unflipped(manage(w, ManageKind::Deactivate).u8(0));
    unflipped(manage(w, ManageKind::ReleaseLoad).u8(0));
    add("seed-load-pieces", w);
  }
  {
    InputWriter w;
    inferenceSetup(w);
    w.op(Op::WellFormedExecute).u8(0).u8(0).u8(1).u32(0);
    waitBo(w, 0);
    waitBo(w, 1);
    w.op(Op::PerfStats).u8(kFixAll).u8(0).u8(0).put(qaic_perf_stats{{2, 0, 0}, 0});
    w.pointer(PointerKind::Arena, 30000).u16(0);
    w.op(Op::DetachSlice).u8(kFixAll).u8(0).put(qaic_detach_slice{});
    w.op(Op::MmapBo).u8(kFixAll).u8(1).put(qaic_mmap_bo{});
    add("seed-inference", w);
  }
  {
    // One input BO over the request descriptor and x (device 0 .. 12288 + 64), with a valid
    // descriptor and x = -8 .. 7: the program runs to completion.
    InputWriter w;
    loadAndActivate(w, 1, false, 16, 1);
    createBo(w, kReluInputOffset + 64);
    createBo(w, 64);
    w.op(Op::WriteBo).u8(0).u8(1).u16(static_cast<uint16_t>(kReluInputOffset)).u8(64);
    for (int i = 0; i < 16; ++i) w.put(static_cast<float>(i - 8));
    w.op(Op::WellFormedAttach).u8(0).u8(0).u8(2 << 1).u8(3);  // three slices, doorbell, base 0
    w.op(Op::WellFormedAttach).u8(1).u8(0).u8(1).u8(1);
    w.op(Op::WellFormedExecute).u8(0).u8(0).u8(1).u32(0);
    waitBo(w, 0);
    waitBo(w, 1);
    add("seed-program-runs", w);
  }
  {
    InputWriter w;
    inferenceSetup(w);
    w.op(Op::WellFormedExecute).u8(0).u8(1).u8(1).u32(32);  // partial: half of each
    waitBo(w, 1);
    // kFixFields makes the count 1 + 1 % 4 = 2: both BOs.
    w.op(Op::Execute).u8(kFixAll).u8(0).u8(0).put(qaic_execute{{1, 0}, 0});
    w.pointer(PointerKind::Arena, 40000).u16(0);
    w.op(Op::Execute).u8(kFixAll).u8(0).u8(0).put(qaic_execute{{1, 0}, 0});  // busy
    w.pointer(PointerKind::Arena, 40000).u16(0);
    waitBo(w, 0);
    add("seed-execute-partial", w);
  }
  {
    InputWriter w;
    rawStatus(w, PointerKind::Arena, 100);
    rawStatus(w, PointerKind::Null, 0);
    rawStatus(w, PointerKind::Unmapped, 0);
    rawStatus(w, PointerKind::ArenaEnd, 4);
    rawStatus(w, PointerKind::NonCanonical, 1);
    rawStatus(w, PointerKind::NonCanonical, 2);
    add("seed-manage-pointers", w);
  }
  {
    InputWriter w;
    loadAndActivate(w, 1, false, 0, 0);
    createBo(w, 4096);
    w.op(Op::AttachSlice).u8(kFixAll).u8(0).u8(0);
    w.put(qaic_attach_slice{{1, 0, 0, QAIC_DIR_TO_DEVICE, 4096}, 0}).pointer(PointerKind::Unmapped, 0).u16(0);
    w.op(Op::AttachSlice).u8(kFixAll).u8(0).u8(0);
    w.put(qaic_attach_slice{{1, 0, 0, QAIC_DIR_TO_DEVICE, 4096}, 0}).pointer(PointerKind::Arena, 20000);
    qaic_attach_slice_entry e{};
    e.size = 4096;
    e.dev_addr = 0;
    w.u16(sizeof e).put(e);
    w.op(Op::PerfStats).u8(kFixAll).u8(0).u8(0).put(qaic_perf_stats{{1, 0, 0}, 0});
    w.pointer(PointerKind::ArenaEnd, 10).u16(0);
    add("seed-slice-pointers", w);
  }
  {
    InputWriter w;
    w.op(Op::RawCommand).u32(0xC0106449u).u8(0).u8(16).u64(1).u64(2);
    w.op(Op::RawCommand).u32(DRM_IOCTL_QAIC_MANAGE).u8(0).u8(0);
    w.op(Op::RawCommand).u32(0x5401u).u8(0).u8(0);  // TCGETS
    w.op(Op::CreateBo).u8(kShortArgument).put(qaic_create_bo{4096, 0, 0});
    createBo(w, 0);
    createBo(w, driver::kMaxBoBytes + 1);
    createBo(w, UINT64_MAX - 4095);
    add("seed-raw-and-short", w);
  }
  {
    // A failed transfer, a hang and a reset under a running inference; then removal.
    InputWriter w;
    inferenceSetup(w);
    w.op(Op::Fault).u8(0).u8(3 + 9);  // the next two requests complete with DMA_FAILED
    w.op(Op::WellFormedExecute).u8(0).u8(0).u8(1).u32(0);
    waitBo(w, 1);
    w.op(Op::Fault).u8(1).u8(1);
    w.op(Op::WellFormedExecute).u8(0).u8(0).u8(1).u32(0);
    w.op(Op::Fault).u8(2).u8(0);
    waitBo(w, 1);
    w.op(Op::Fault).u8(1).u8(0);
    w.op(Op::Fault).u8(3).u8(0);
    unflipped(manage(w, ManageKind::Status));
    add("seed-faults", w);
  }
  {
    // GEM_CLOSE of an idle BO and of one that is sliced and queued; VERSION and GET_UNIQUE.
    InputWriter w;
    inferenceSetup(w);
    w.op(Op::WellFormedExecute).u8(0).u8(0).u8(1).u32(0);
    w.op(Op::GemClose).u8(kFixAll).u8(1).put(drm_gem_close{});
    waitBo(w, 0);
    w.op(Op::DrmInfo).u8(0).pointer(PointerKind::Arena, 1000).u16(64);
    w.op(Op::DrmInfo).u8(0).pointer(PointerKind::ArenaEnd, 2).u16(8);
    w.op(Op::DrmInfo).u8(1).pointer(PointerKind::Arena, 2000).u16(12);
    w.op(Op::DrmInfo).u8(2).pointer(PointerKind::Arena, 3000).u16(6);
    w.u8('f').u8('u').u8('z').u8('z').u8('e').u8('r');
    createBo(w, 4096);
    w.op(Op::GemClose).u8(kFixAll).u8(1).put(drm_gem_close{});
    add("seed-gem-close", w);
  }
  {
    // Export a BO, import it back (its handle), import a memfd and slice it as the input.
    InputWriter w;
    loadAndActivate(w, 1, false, 16, 0);
    createBo(w, 64);
    w.op(Op::PrimeExport).u8(kFixAll).u8(0).u8(0).put(drm_prime_handle{0, DRM_RDWR | DRM_CLOEXEC, 0});
    w.op(Op::PrimeImport).u8(kFixFields).u8(0).u8(0).put(drm_prime_handle{});
    w.op(Op::PrimeImport).u8(kFixFields).u8(1).u8(0).put(drm_prime_handle{4095, 0, 0});
    w.op(Op::WellFormedAttach).u8(1).u8(0).u8(0).u8(1);
    w.op(Op::WellFormedExecute).u8(0).u8(0).u8(1).u32(0);
    waitBo(w, 1);
    w.op(Op::PrimeExport).u8(kFixAll).u8(0).u8(1).put(drm_prime_handle{0, DRM_RDWR, 0});
    w.op(Op::PrimeImport).u8(0).u8(3).u8(0).put(drm_prime_handle{0, 0, 2});
    w.op(Op::GemFlinkOpen).u8(kFixAll).u8(0).put(drm_gem_flink{});
    add("seed-prime", w);
  }
  return seeds;
}

}  // namespace qaic::fuzz
