// SPDX-License-Identifier: Apache-2.0
// The element sequence of one request (docs/device-protocol.md section 4) and the descriptors.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "runtime/datapath/RequestBuilder.hpp"

namespace qaic::rt {
namespace {

StagedBuffer staged(std::string name, bool input, uint64_t deviceOffset, uint64_t stagingOffset) {
  StagedBuffer b;
  b.name = std::move(name);
  b.isInput = input;
  b.deviceFormat = {ir::DeviceLayout::Flat, ir::DType::Float};
  b.deviceOffset = deviceOffset;
  b.deviceSize = 4096;
  b.stagingOffset = stagingOffset;
  return b;
}

ProgramLayout layout() {
  ProgramLayout l;
  l.doorbellAddress = 0x100;
  l.doneSemaphore = 3;
  l.requestDescriptorOffset = 0;
  l.responseDescriptorOffset = 4096;
  l.buffers = {staged("in0", true, 8192, 4096), staged("in1", true, 12288, 8192), staged("out0", false, 16384, 0)};
  for (uint32_t i = 0; i < l.buffers.size(); ++i) l.buffers[i].mappingIndex = i;
  l.responseDescriptorStaging = 4096;
  l.elementsPerRequest = 5;
  return l;
}

RequestPlan plan(std::vector<bool> present) {
  RequestPlan p;
  p.sequence = 77;
  p.inputBo = 5;
  p.outputBo = 6;
  p.present = std::move(present);
  p.dims = {{16}, {16}, {16}};
  return p;
}

TEST(RequestBuilder, ElementsFollowTheProtocolOrder) {
  const auto l = layout();
  const auto e = buildRequest(l, plan({true, true, true}));
  ASSERT_EQ(e.size(), 5u);
  for (const auto& element : e) EXPECT_EQ(element.reqId, 0);  // RequestRing::submit stamps its own
  // Request descriptor from the input BO's start to device offset 0.
  EXPECT_EQ(e[0].cmd, driver::kReqCmdToDevice);
  EXPECT_EQ(e[0].srcAddr, driver::makeIova(5, 0));
  EXPECT_EQ(e[0].dstAddr, 0u);
  EXPECT_EQ(e[0].length, driver::kDescriptorBytes);
  // Inputs: 16 floats each; the last one rings the doorbell with the sequence.
  EXPECT_EQ(e[1].srcAddr, driver::makeIova(5, 4096));
  EXPECT_EQ(e[1].dstAddr, 8192u);
  EXPECT_EQ(e[1].length, 64u);
  EXPECT_EQ(e[1].dbLen, 0);
  EXPECT_EQ(e[2].dbAddr, 0x100u);
  EXPECT_EQ(e[2].dbLen, 32);
  EXPECT_EQ(e[2].dbData, 77u);
  // Output then response descriptor: wait for the done semaphore first, release it last.
  EXPECT_EQ(e[3].cmd, driver::kReqCmdFromDevice);
  EXPECT_EQ(e[3].srcAddr, 16384u);
  EXPECT_EQ(e[3].dstAddr, driver::makeIova(6, 0));
  EXPECT_TRUE(driver::semEnabled(e[3].semCmd[0]));
  EXPECT_TRUE(driver::semPresync(e[3].semCmd[0]));
  EXPECT_EQ(driver::semCmd(e[3].semCmd[0]), QAIC_SEM_WAIT_GT_0);
  EXPECT_EQ(driver::semIndex(e[3].semCmd[0]), 3);
  EXPECT_EQ(e[4].srcAddr, 4096u);
  EXPECT_EQ(e[4].dstAddr, driver::makeIova(6, 4096));
  EXPECT_EQ(e[4].cmd, driver::kReqCmdFromDevice | driver::kReqCmdCompletion);
  EXPECT_EQ(driver::semCmd(e[4].semCmd[1]), QAIC_SEM_DEC);
  EXPECT_FALSE(driver::semPresync(e[4].semCmd[1]));
  EXPECT_EQ(e[3].cmd & driver::kReqCmdCompletion, 0);
}

TEST(RequestBuilder, DroppedBuffersSendNothingAndTheDoorbellMoves) {
  const auto l = layout();
  auto e = buildRequest(l, plan({true, false, true}));
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[1].dstAddr, 8192u);
  EXPECT_EQ(e[1].dbLen, 32);
  e = buildRequest(l, plan({false, false, false}));
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].dbLen, 32) << "no inputs: the descriptor element starts the program";
  EXPECT_EQ(driver::semCmd(e[1].semCmd[0]), QAIC_SEM_WAIT_GT_0);
  EXPECT_EQ(driver::semCmd(e[1].semCmd[1]), QAIC_SEM_DEC);
  EXPECT_NE(e[1].cmd & driver::kReqCmdCompletion, 0);
}

TEST(RequestBuilder, DirectBuffersAreAddressedInTheUsersOwnBufferObject) {
  const auto l = layout();
  auto p = plan({true, true, true});
  p.direct = {driver::makeIova(40, 128), 0, driver::makeIova(41, 0)};
  p.directBytes = {0, 0, 48};
  const auto e = buildRequest(l, p);
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[1].srcAddr, driver::makeIova(40, 128));
  EXPECT_EQ(e[2].srcAddr, driver::makeIova(5, 8192)) << "not direct: staged";
  EXPECT_EQ(e[3].dstAddr, driver::makeIova(41, 0));
  EXPECT_EQ(e[3].length, 48u) << "only the user's bytes come back into the user's buffer";
}

TEST(RequestBuilder, RequestDescriptorListsEveryBuffer) {
  const auto l = layout();
  auto p = plan({true, false, true});
  p.dims = {{2, 8}, {}, {16}};
  std::vector<std::byte> bytes(driver::kDescriptorBytes, std::byte{0xee});
  writeRequestDescriptor(bytes, l, p);
  driver::RequestDescriptorHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  EXPECT_EQ(h.magic, driver::kRequestDescriptorMagic);
  EXPECT_EQ(h.bufferCount, 3u);
  EXPECT_EQ(h.sequence, 77u);
  driver::RequestDescriptorEntry entries[3];
  std::memcpy(entries, bytes.data() + sizeof h, sizeof entries);
  EXPECT_EQ(entries[0].present, 1u);
  EXPECT_EQ(entries[0].rank, 2u);
  EXPECT_EQ(entries[0].dims[1], 8u);
  EXPECT_EQ(entries[1].present, 0u);
  EXPECT_EQ(entries[2].dims[0], 16u);
  EXPECT_EQ(bytes.back(), std::byte{0}) << "the rest of the page is cleared";
}

TEST(RequestBuilder, ResponseDescriptorIsCheckedBeforeUse) {
  const auto l = layout();
  std::vector<std::byte> bytes(driver::kDescriptorBytes);
  driver::ResponseDescriptorHeader h{driver::kResponseDescriptorMagic, driver::kDescriptorVersion, 0, 3};
  std::memcpy(bytes.data(), &h, sizeof h);
  driver::ResponseDescriptorEntry out{};
  out.present = 1;
  out.rank = 1;
  out.dims[0] = 12;
  std::memcpy(bytes.data() + sizeof h + 2 * sizeof out, &out, sizeof out);
  auto info = readResponseDescriptor(bytes, l);
  EXPECT_EQ(info.status, 0);
  EXPECT_TRUE(info.present[2]);
  EXPECT_EQ(info.dims[2], (IoDims{12}));
  EXPECT_FALSE(info.programRun) << "a device that does not report program times";

  // The program's times after the entries, in steady_clock nanoseconds; an end before the start
  // is not believed.
  driver::ResponseTimestamps times{5'000'000'000, 5'000'250'000};
  std::memcpy(bytes.data() + driver::kResponseTimestampsOffset, &times, sizeof times);
  info = readResponseDescriptor(bytes, l);
  ASSERT_TRUE(info.programRun);
  EXPECT_EQ(info.programRun->first.time_since_epoch(), std::chrono::seconds(5));
  EXPECT_EQ(info.programRun->second - info.programRun->first, std::chrono::microseconds(250));
  times.programEndNs = 4'000'000'000;
  std::memcpy(bytes.data() + driver::kResponseTimestampsOffset, &times, sizeof times);
  EXPECT_FALSE(readResponseDescriptor(bytes, l).programRun);

  out.rank = 9;
  std::memcpy(bytes.data() + sizeof h + 2 * sizeof out, &out, sizeof out);
  EXPECT_THROW(readResponseDescriptor(bytes, l), Error);
  h.bufferCount = 4;
  std::memcpy(bytes.data(), &h, sizeof h);
  EXPECT_THROW(readResponseDescriptor(bytes, l), Error);
  h.magic = 0;
  std::memcpy(bytes.data(), &h, sizeof h);
  try {
    readResponseDescriptor(bytes, l);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), QS_DEVICE_ERROR);
  }
}

}  // namespace
}  // namespace qaic::rt
