// SPDX-License-Identifier: Apache-2.0
// The shared protocol helpers: what libqaic encodes, the emulator decodes.
#include <gtest/gtest.h>

#include "driver/DeviceProtocol.hpp"

namespace qaic::driver {
namespace {

TEST(DeviceProtocol, IovaRoundTrips) {
  const uint64_t a = makeIova(0x1234, 0xdeadbeef);
  EXPECT_TRUE(iovaIsHost(a));
  EXPECT_EQ(iovaHandle(a), 0x1234u);
  EXPECT_EQ(iovaOffset(a), 0xdeadbeefu);
  EXPECT_FALSE(iovaIsHost(0x1000));
}

TEST(DeviceProtocol, WindowIsSizedLikeTheMainlineDriver) {
  // ALIGN(nelem * (64 + 4) + 256, 4 KiB) after a 4 KiB register page.
  EXPECT_EQ(fifoAreaBytes(256), 20480u);  // 256 * 68 + 256 = 17664 -> 20480
  EXPECT_EQ(dbcWindowBytes(256), 24576u);
  EXPECT_EQ(requestFifoOffset(256), 4096u);
  EXPECT_EQ(responseFifoOffset(256), 24576u - 256 * 4);
  EXPECT_GE(responseFifoOffset(256), requestFifoOffset(256) + 256 * 64);
}

TEST(DeviceProtocol, RingAccountingKeepsOneSlotFree) {
  EXPECT_EQ(ringFree(0, 0, 8), 7u);
  EXPECT_EQ(ringUsed(6, 2, 8), 4u);
  EXPECT_EQ(ringFree(3, 2, 8), 0u);
}

TEST(DeviceProtocol, SemaphoreWordsDecode) {
  qaic_sem s{0x123, 17, 1, QAIC_SEM_WAIT_GT_EQ, QAIC_SEM_INSYNCFENCE, 0};
  const uint32_t w = encodeSem(s);
  EXPECT_TRUE(semEnabled(w));
  EXPECT_EQ(semVal(w), 0x123);
  EXPECT_EQ(semIndex(w), 17);
  EXPECT_TRUE(semPresync(w));
  EXPECT_EQ(semCmd(w), QAIC_SEM_WAIT_GT_EQ);
  EXPECT_EQ(encodeSem(qaic_sem{5, 1, 0, QAIC_SEM_NOP, 0, 0}), 0u);
}

TEST(DeviceProtocol, ActivateOptionsCarryLoadAndProgram) {
  const uint32_t o = makeActivateOptions(0x00abcdef, 3);
  EXPECT_EQ(activateLoadId(o), 0x00abcdefu);
  EXPECT_EQ(activateProgramIndex(o), 3u);
  EXPECT_EQ(deviceMemoryFileName(0), "memory-accel0");
  EXPECT_EQ(deviceMemoryFileName(100), "memory-accel100");
}

}  // namespace
}  // namespace qaic::driver
