// SPDX-License-Identifier: Apache-2.0
// qaic-emu benchmarks (make bench; never ctest), each with a baseline measured in the same run.
// Here the kernel path: its baseline is the same program run directly over an in-memory IO
// region, so the ratio is the cost the emulated driver and DBC add. The mapped-ring path and its
// futex baseline are in RingRoundTripBench.cpp; scripts/bench.sh prints the ratios.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>

#include "ClientHelpers.hpp"
#include "DeviceProgram.hpp"
#include "EmulatorProcess.hpp"
#include "ReluProgram.hpp"
#include "driver/SysfsNames.hpp"
#include "kernels/format/DeviceFormat.hpp"

namespace qaic::emu::bench {
namespace {

using namespace qaic::testing;

// The relu program with an FP16 DWHC input, so a run includes a device-format conversion.
ReluProgram relu() { return makeReluProgram(1, {1, 8, 2, 2}, {ir::DeviceLayout::DWHC, ir::DType::Float16}); }

// Fills the request descriptor and the device-format input of one relu inference.
void writeRequest(const ReluProgram& c, std::byte* descriptor, std::byte* input) {
  driver::RequestDescriptorHeader h{driver::kRequestDescriptorMagic, 1, 2, 1};
  std::memcpy(descriptor, &h, sizeof h);
  for (uint32_t i = 0; i < 2; ++i) {
    driver::RequestDescriptorEntry e{1, 4, {1, 8, 2, 2}};
    std::memcpy(descriptor + sizeof h + i * sizeof e, &e, sizeof e);
  }
  std::vector<float> x(32, -1.5f);
  kernels::UserBufferView view{"x", ir::DType::Float, ir::UserLayout::NCHW, c.dims};
  kernels::userToDevice(view, std::as_bytes(std::span(x)), c.inFormat, std::span(input, c.inSize));
}

void BM_Baseline_ProgramRunInMemory(benchmark::State& state) {
  auto c = relu();
  auto bytes = LoadBuffer::copyOf(c.bytes);
  std::string error;
  auto program = containerProgramLoader(1)(bytes, 0, error);
  if (!program) return state.SkipWithError(error.c_str());
  std::vector<std::byte> region(c.ioRegionSize);
  writeRequest(c, region.data(), region.data() + c.inOffset);
  for (auto _ : state) benchmark::DoNotOptimize(program->run(region));
}
BENCHMARK(BM_Baseline_ProgramRunInMemory);

// EXECUTE_BO of the four BOs of one inference, then WAIT_BO: the kernel-path round trip.
void BM_ExecuteWaitInference(benchmark::State& state) {
  EmulatorProcess emu(EmulatorOptions{{}, {}, {}, true});
  const std::string shm = emu.attribute(0, driver::sysfs::kEmuShmDir);
  auto c = relu();
  RawDevice dev(emu.nodePath(0));
  uint32_t dbc = 0;
  if (transferAndActivate(dev, c.bytes, 1, 64, 0, dbc) != 0) return state.SkipWithError("activate");
  Bo req, in, out, rsp;
  if (createMappedBo(dev, shm, 4096, req) || createMappedBo(dev, shm, c.inSize, in) ||
      createMappedBo(dev, shm, c.outSize, out) || createMappedBo(dev, shm, 4096, rsp))
    return state.SkipWithError("create BOs");
  writeRequest(c, req.map.data(), in.map.data());
  qaic_attach_slice_entry e{};
  e.size = 4096;
  int rc = attachOneSlice(dev, dbc, req, QAIC_DIR_TO_DEVICE, e);
  e = {};
  e.size = c.inSize;
  e.dev_addr = c.inOffset;
  e.db_addr = c.doorbell;
  e.db_len = 32;
  rc |= attachOneSlice(dev, dbc, in, QAIC_DIR_TO_DEVICE, e);
  e = {};
  e.size = c.outSize;
  e.dev_addr = c.outOffset;
  e.sem0 = {0, 0, 1, QAIC_SEM_WAIT_GT_0, 0, 0};
  rc |= attachOneSlice(dev, dbc, out, QAIC_DIR_FROM_DEVICE, e);
  e = {};
  e.size = 4096;
  e.dev_addr = 4096;
  e.sem0 = {0, 0, 0, QAIC_SEM_DEC, 0, 0};
  rc |= attachOneSlice(dev, dbc, rsp, QAIC_DIR_FROM_DEVICE, e);
  if (rc != 0) return state.SkipWithError("attach slices");
  std::vector<qaic_execute_entry> entries = {{req.handle, QAIC_DIR_TO_DEVICE},
                                             {in.handle, QAIC_DIR_TO_DEVICE},
                                             {out.handle, QAIC_DIR_FROM_DEVICE},
                                             {rsp.handle, QAIC_DIR_FROM_DEVICE}};
  qaic_execute x{{4, dbc}, reinterpret_cast<uint64_t>(entries.data())};
  qaic_wait w{rsp.handle, 5000, dbc, 0};
  for (auto _ : state) {
    if (rawIoctl(dev.fd(), DRM_IOCTL_QAIC_EXECUTE_BO, &x) != 0 || rawIoctl(dev.fd(), DRM_IOCTL_QAIC_WAIT_BO, &w) != 0)
      return state.SkipWithError("execute/wait failed");
  }
}
BENCHMARK(BM_ExecuteWaitInference)->UseRealTime();

// One MANAGE STATUS: the cost of a control ioctl through FUSE and process_vm_readv.
void BM_ManageStatusIoctl(benchmark::State& state) {
  EmulatorProcess emu(EmulatorOptions{{}, {}, {}, true});
  RawDevice dev(emu.nodePath(0));
  std::vector<std::byte> msg;
  for (auto _ : state) {
    msg.clear();
    appendBytes(msg, qaic_manage_trans_status_to_dev{{QAIC_TRANS_STATUS_FROM_USR, 8}});
    uint32_t len = 0, count = 0;
    if (dev.manage(msg, 8, 1, len, count) != 0) return state.SkipWithError("MANAGE failed");
  }
}
BENCHMARK(BM_ManageStatusIoctl)->UseRealTime();

}  // namespace
}  // namespace qaic::emu::bench

BENCHMARK_MAIN();
