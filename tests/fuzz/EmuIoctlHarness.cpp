// SPDX-License-Identifier: Apache-2.0
// EmuIoctlHarness: the device it builds per input, the arena and pointer rules, and how one
// ioctl is passed (the calls themselves are in EmuIoctlRawCalls.cpp and EmuIoctlBuiltCalls.cpp).
#include "EmuIoctlHarness.hpp"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "EmuIoctlSession.hpp"
#include "ReluProgram.hpp"
#include "driver/DeviceProtocol.hpp"
#include "driver/ManageMessage.hpp"

namespace qaic::fuzz {

EmuIoctlHarness::EmuIoctlHarness() : nextMmapOffset_(driver::kFirstMmapOffset) {
  shm_ = emu::ShmDirectory::create();
  loader_ = emu::containerProgramLoader(1);
  container_ = testing::reluProgram(1);
  void* region = mmap(nullptr, kArenaBytes + kGuardBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) throw std::runtime_error("emu_ioctl: cannot map the arena");
  arena_ = static_cast<std::byte*>(region);
  if (mprotect(arena_ + kArenaBytes, kGuardBytes, PROT_NONE) != 0)
    throw std::runtime_error("emu_ioctl: cannot protect the guard");
  eventfd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

EmuIoctlHarness::~EmuIoctlHarness() {
  if (eventfd_ >= 0) close(eventfd_);
  munmap(arena_, kArenaBytes + kGuardBytes);
}

void EmuIoctlHarness::run(const uint8_t* data, std::size_t size) {
  std::memset(arena_, 0, kArenaBytes);
  Session s;
  emu::DeviceConfig config;
  config.dbcs = 4;  // each activation runs a channel thread
  // A DMA_XFER copies as much as the caller's memory yields, up to the device's DDR: mutated
  // addresses can land in ASan's terabytes of readable shadow, so a small DDR bounds each copy.
  config.ddrMb = 64;
  emu::DeviceContext ctx;
  ctx.shm = shm_.get();
  ctx.loader = loader_;
  ctx.nextMmapOffset = &nextMmapOffset_;
  ctx.semaphoreTimeout = kSemaphoreTimeout;
  s.device = std::make_unique<emu::Device>(0, config, ctx);
  int error = 0;
  s.file = s.device->open(getuid(), getgid(), error);
  if (!s.file) violated("a fresh device refused open");
  InputReader in(data, size);
  for (std::size_t calls = 0; !in.done() && calls < kMaxCalls; ++calls) call(s, in);
  s.device->release(s.file);
  s.file.reset();  // release() joined the channel threads, which run the programs
  s.device.reset();
}

void EmuIoctlHarness::call(Session& s, InputReader& in) {
  switch (static_cast<Op>(in.u8() % static_cast<uint8_t>(Op::Count))) {
    case Op::Manage: return rawManage(s, in);
    case Op::CreateBo: return createBo(s, in);
    case Op::MmapBo: return mmapBo(s, in);
    case Op::AttachSlice: return attachSlice(s, in);
    case Op::Execute: return execute(s, in, false);
    case Op::PartialExecute: return execute(s, in, true);
    case Op::WaitBo: return waitBo(s, in);
    case Op::PerfStats: return perfStats(s, in);
    case Op::DetachSlice: return detachSlice(s, in);
    case Op::DbcInfo: return dbcInfo(s, in);
    case Op::RawCommand: return rawCommand(s, in);
    case Op::WellFormedManage: return wellFormedManage(s, in);
    case Op::WellFormedAttach: return wellFormedAttach(s, in);
    case Op::WellFormedExecute: return wellFormedExecute(s, in);
    case Op::WriteBo: return writeBo(s, in);
    case Op::Fault: return fault(s, in);
    case Op::DrmInfo: return drmInfo(s, in);
    case Op::GemClose: return gemClose(s, in);
    case Op::PrimeExport: return primeExport(s, in);
    case Op::PrimeImport: return primeImport(s, in);
    case Op::GemFlinkOpen: return gemFlinkOpen(s, in);
    case Op::Count: break;
  }
}

// The argument travels in heap buffers of exactly the size FUSE would pass, so that ASan sees
// any access past it.
int EmuIoctlHarness::ioctl(Session& s, unsigned cmd, const void* arg, std::size_t size, void* out, bool shortArgument) {
  const std::size_t passed = shortArgument && size > 0 ? size - 1 : size;
  std::vector<std::byte> inCopy(passed), outCopy(passed);
  if (passed) std::memcpy(inCopy.data(), arg, passed);
  emu::IoctlCall c;
  c.pid = static_cast<pid_t>(syscall(SYS_gettid));
  c.in = inCopy.data();
  c.inSize = passed;
  c.out = outCopy.data();
  c.outSize = passed;
  const int rc = s.device->ioctl(*s.file, cmd, c);
  // EMU_IOCTL_TRACE=1 shows what an input does (when writing seeds or reading a reproducer).
  static const bool trace = std::getenv("EMU_IOCTL_TRACE") != nullptr;
  if (trace) std::fprintf(stderr, "emu_ioctl: cmd 0x%08x size %zu -> %s\n", cmd, passed, rc ? std::strerror(rc) : "ok");
  if (out != nullptr && passed) std::memcpy(out, outCopy.data(), passed);
  return rc;
}

uint64_t EmuIoctlHarness::pointer(InputReader& in) {
  const auto kind = static_cast<PointerKind>(in.u8() % static_cast<uint8_t>(PointerKind::Count));
  const uint16_t offset = in.u16();
  const auto base = reinterpret_cast<uint64_t>(arena_);
  switch (kind) {
    case PointerKind::Arena: return base + offset % kArenaBytes;
    case PointerKind::Null: return 0;
    case PointerKind::Unmapped: return base + kArenaBytes + offset % kGuardBytes;
    case PointerKind::ArenaEnd: return base + kArenaBytes - 1 - offset % 512;
    case PointerKind::NonCanonical:
      // Kernel half of the address space, or close enough to the top that address + size wraps.
      return offset & 1 ? UINT64_MAX - offset : 0xffff800000000000ull + uint64_t{offset} * 4096;
    case PointerKind::Count: break;
  }
  return 0;
}

std::byte* EmuIoctlHarness::arenaAt(uint64_t address, std::size_t n) {
  const auto base = reinterpret_cast<uint64_t>(arena_);
  if (address < base || address >= base + kArenaBytes || n > base + kArenaBytes - address) return nullptr;
  return arena_ + (address - base);
}

void EmuIoctlHarness::fillArena(InputReader& in, uint64_t address, std::size_t n) {
  if (n == 0) return;
  std::vector<std::byte> bytes(n);
  in.bytes(bytes.data(), n);
  const auto base = reinterpret_cast<uint64_t>(arena_);
  if (address < base || address >= base + kArenaBytes) return;
  const std::size_t room = base + kArenaBytes - address;
  std::memcpy(arena_ + (address - base), bytes.data(), std::min(n, room));
}

int EmuIoctlHarness::sendManage(Session& s, uint64_t address, uint32_t len, uint32_t count) {
  qaic_manage_msg m{len, count, address};
  qaic_manage_msg out{};
  const int rc = ioctl(s, DRM_IOCTL_QAIC_MANAGE, &m, sizeof m, &out, false);
  if (rc != 0) return rc;
  // A reply the device wrote must be one that libqaic's parser accepts.
  const std::byte* reply = arenaAt(address, out.len);
  if (reply == nullptr) return rc;
  std::vector<driver::ManageReply> replies;
  try {
    replies = driver::parseManageReply(std::span(reply, out.len), out.count);
  } catch (const driver::ManageMessageError& e) {
    std::fprintf(stderr, "emu_ioctl: %s\n", e.what());
    violated("the device wrote a manage reply libqaic cannot parse");
  }
  for (const auto& r : replies) {
    if (const auto* a = std::get_if<driver::ActivateReply>(&r)) {
      s.dbcs.push_back(a->dbcId);
    } else if (const auto* d = std::get_if<driver::DeactivateReply>(&r)) {
      std::erase(s.dbcs, d->dbcId);
    } else if (const auto* p = std::get_if<driver::PassthroughReply>(&r)) {
      if (auto g = p->resourceGroup(); g && g->status == 0 && g->groupId != 0) s.groups.push_back(g->groupId);
    }
  }
  return rc;
}

}  // namespace qaic::fuzz
