// SPDX-License-Identifier: Apache-2.0
// ATTACH_SLICE_BO, EXECUTE_BO, PARTIAL_EXECUTE_BO, WAIT_BO, PERF_STATS_BO and DETACH_SLICE_BO:
// every argument check with mainline's errno, and the state rules (unattached, busy, full ring,
// timeout, another file's DBC). docs/emulator.md, "Errors against mainline", names these cases.
#include <cstring>

#include "DeviceClient.hpp"
#include "EmuTest.hpp"
#include "InferenceRig.hpp"
#include "ReluProgram.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;

class SliceTest : public BoOnReluTest {
 protected:
  SliceTest() : BoOnReluTest(4) {}  // 3 usable ring slots: ExecuteIsEagainWhenTheRingLacksRoom

  static qaic_attach_slice_entry slice(uint64_t offset, uint64_t size, uint64_t devAddr) {
    qaic_attach_slice_entry e{};
    e.offset = offset;
    e.size = size;
    e.dev_addr = devAddr;
    return e;
  }
  void expectAttachFails(const qaic_attach_slice_hdr& hdr, const qaic_attach_slice_entry& e, int expected,
                         const char* why) {
    auto r = node_->attachSlices(hdr, std::span(&e, 1));
    ASSERT_FALSE(r) << why;
    EXPECT_EQ(r.error(), expected) << why << ": " << r.message();
  }
};

TEST_F(SliceTest, AttachAcceptsSlicesInsideTheBo) {
  const qaic_attach_slice_entry two[] = {slice(0, 4096, kReluInputOffset), slice(4096, 4096, kReluInputOffset)};
  auto r = node_->attachSlices(header(), two);
  EXPECT_TRUE(r) << r.message();
}

TEST_F(SliceTest, AttachRejectsBadArguments) {
  const auto good = slice(0, 4096, kReluInputOffset);
  expectAttachFails(header(), slice(4096, 8192, 0), EINVAL, "slice past the end of the BO");
  expectAttachFails(header(), slice(UINT64_MAX - 10, 4096, 0), EINVAL, "offset overflowing");
  auto hdr = header(0);
  expectAttachFails(hdr, good, EINVAL, "direction 0");
  hdr = header(3);
  expectAttachFails(hdr, good, EINVAL, "direction 3");
  hdr = header();
  hdr.dbc_id = kTestDbcs;
  expectAttachFails(hdr, good, EINVAL, "DBC out of range");
  hdr = header();
  hdr.dbc_id = (dbc_ + 1) % kTestDbcs;
  expectAttachFails(hdr, good, EINVAL, "DBC not activated by this file");
  hdr = header();
  hdr.handle = 4242;
  expectAttachFails(hdr, good, ENOENT, "unknown handle");
  hdr = header();
  hdr.size = bo_->size() * 2;
  expectAttachFails(hdr, good, EINVAL, "header size beyond the BO");
  auto padded = good;
  padded.sem0.pad = 1;
  expectAttachFails(header(), padded, EINVAL, "nonzero semaphore pad");
  auto badCmd = good;
  badCmd.sem0.cmd = 7;
  expectAttachFails(header(), badCmd, EINVAL, "semaphore command 7");
  auto badDb = good;
  badDb.db_len = 24;
  expectAttachFails(header(), badDb, EINVAL, "doorbell length 24");

  auto none = node_->attachSlices(header(), {});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error(), EINVAL) << "count 0";

  UnreadablePage page;
  qaic_attach_slice arg{};
  arg.hdr = header();
  arg.hdr.count = 1;
  arg.data = page.address();
  EXPECT_TRUE(failsWith(node_->rawIoctl(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &arg, "ATTACH_SLICE_BO"), EFAULT));
  arg.data = 0;
  EXPECT_TRUE(failsWith(node_->rawIoctl(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &arg, "ATTACH_SLICE_BO"), EINVAL))
      << "a null entry array";

  // None of the failures left the BO half attached.
  auto r = node_->attachSlices(header(), std::span(&good, 1));
  EXPECT_TRUE(r) << r.message();
}

// More requests than the DBC's ring holds (queue_size 4 here, one request per slice) could never
// be queued: ENOSPC, as mainline answers.
TEST_F(SliceTest, AttachRefusesMoreSlicesThanTheRingHolds) {
  std::vector<qaic_attach_slice_entry> five;
  for (uint64_t i = 0; i < 5; ++i) five.push_back(slice(i * 1024, 1024, kReluInputOffset));
  auto r = node_->attachSlices(header(), five);
  ASSERT_FALSE(r) << "5 slices on a ring of 4";
  EXPECT_EQ(r.error(), ENOSPC) << r.message();
  five.pop_back();
  auto four = node_->attachSlices(header(), five);
  EXPECT_TRUE(four) << four.message();
}

TEST_F(SliceTest, AttachingTwiceIsRefusedUntilDetached) {
  const auto s = slice(0, 4096, kReluInputOffset);
  ASSERT_TRUE(node_->attachSlices(header(), std::span(&s, 1)));
  expectAttachFails(header(), s, EINVAL, "already attached");
  ASSERT_TRUE(node_->detachSlice(bo_->handle()));
  auto again = node_->attachSlices(header(), std::span(&s, 1));
  EXPECT_TRUE(again) << again.message();
}

TEST_F(SliceTest, ExecuteRejectsUnattachedBoAndBadEntries) {
  const qaic_execute_entry unattached[] = {{bo_->handle(), QAIC_DIR_TO_DEVICE}};
  EXPECT_TRUE(failsWith(node_->execute(dbc_, unattached), EINVAL)) << "executed a BO without slices";

  const auto s = slice(0, 4096, kReluInputOffset);
  ASSERT_TRUE(node_->attachSlices(header(), std::span(&s, 1)));
  const qaic_execute_entry wrongDir[] = {{bo_->handle(), QAIC_DIR_FROM_DEVICE}};
  EXPECT_TRUE(failsWith(node_->execute(dbc_, wrongDir), EINVAL));
  const qaic_execute_entry unknown[] = {{777, QAIC_DIR_TO_DEVICE}};
  EXPECT_TRUE(failsWith(node_->execute(dbc_, unknown), ENOENT));
  const qaic_execute_entry good[] = {{bo_->handle(), QAIC_DIR_TO_DEVICE}};
  EXPECT_TRUE(failsWith(node_->execute(kTestDbcs, good), EINVAL)) << "DBC out of range";
  EXPECT_TRUE(failsWith(node_->execute(dbc_, {}), EINVAL)) << "count 0";

  UnreadablePage page;
  qaic_execute arg{};
  arg.hdr = {1, dbc_};
  arg.data = page.address();
  EXPECT_TRUE(failsWith(node_->rawIoctl(DRM_IOCTL_QAIC_EXECUTE_BO, &arg, "EXECUTE_BO"), EFAULT));

  const qaic_partial_execute_entry tooLong[] = {{bo_->handle(), QAIC_DIR_TO_DEVICE, 16384}};
  EXPECT_TRUE(failsWith(node_->partialExecute(dbc_, tooLong), EINVAL)) << "resize beyond the BO";
}

TEST_F(SliceTest, WaitBoChecksItsArguments) {
  EXPECT_TRUE(failsWith(node_->waitBo(bo_->handle(), dbc_, 10), EINVAL)) << "a BO never sliced";
  EXPECT_TRUE(failsWith(node_->waitBo(31337, dbc_, 10), ENOENT));
  EXPECT_TRUE(failsWith(node_->waitBo(bo_->handle(), kTestDbcs, 10), EINVAL)) << "DBC out of range";
  EXPECT_TRUE(failsWith(node_->waitBo(31337, (dbc_ + 1) % kTestDbcs, 10), EPERM))
      << "a DBC nobody activated, checked before the handle";
  qaic_wait padded{bo_->handle(), 10, dbc_, 1};
  EXPECT_TRUE(failsWith(node_->rawIoctl(DRM_IOCTL_QAIC_WAIT_BO, &padded, "WAIT_BO"), EINVAL));
}

// EXECUTE_BO, PARTIAL_EXECUTE_BO and WAIT_BO on a DBC that another open file activated: EPERM,
// as mainline answers a file that is not the DBC's user (ATTACH_SLICE_BO says EINVAL there).
TEST_F(SliceTest, AnotherFilesDbcIsEperm) {
  const auto s = slice(0, 4096, kReluInputOffset);
  ASSERT_TRUE(node_->attachSlices(header(), std::span(&s, 1)));
  auto other = driver::DeviceNode::open(root(), 0);
  ASSERT_TRUE(other) << other.message();
  auto otherBo = driver::BufferObject::create(*other, kBoBytes);
  ASSERT_TRUE(otherBo) << otherBo.message();
  const qaic_execute_entry exec[] = {{otherBo->handle(), QAIC_DIR_TO_DEVICE}};
  EXPECT_TRUE(failsWith(other->execute(dbc_, exec), EPERM)) << "EXECUTE_BO";
  const qaic_partial_execute_entry partial[] = {{otherBo->handle(), QAIC_DIR_TO_DEVICE, 0}};
  EXPECT_TRUE(failsWith(other->partialExecute(dbc_, partial), EPERM)) << "PARTIAL_EXECUTE_BO";
  EXPECT_TRUE(failsWith(other->waitBo(otherBo->handle(), dbc_, 10), EPERM)) << "WAIT_BO";
  auto hdr = header();
  hdr.handle = otherBo->handle();
  auto attached = other->attachSlices(hdr, std::span(&s, 1));
  ASSERT_FALSE(attached) << "ATTACH_SLICE_BO";
  EXPECT_EQ(attached.error(), EINVAL) << attached.message();
  // The owner's own calls still work.
  qaic_perf_stats_entry stats{};
  stats.handle = bo_->handle();
  EXPECT_TRUE(node_->perfStats(dbc_, std::span(&stats, 1)));
}

// A request whose outputs wait for a program that never ran (no input, so no doorbell):
// WAIT_BO times out, the BO is busy, and the device ends it with a semaphore error (EIO).
TEST_F(SliceTest, WaitTimesOutAndBusyBoCannotBeDetached) {
  auto image = container::QpcImage::fromBytes(relu_, "relu");
  InferenceRig rig(*node_, *image, 0, dbc_);
  rig.attachAll();
  const uint32_t output = rig.slot("y").bo.handle();
  const qaic_execute_entry outputs[] = {{output, QAIC_DIR_FROM_DEVICE}, {rig.lastHandle(), QAIC_DIR_FROM_DEVICE}};
  ASSERT_TRUE(node_->execute(dbc_, outputs));
  EXPECT_TRUE(failsWith(node_->waitBo(output, dbc_, 100), ETIMEDOUT));
  EXPECT_TRUE(failsWith(node_->detachSlice(output), EBUSY)) << "detached a BO with a queued transfer";
  // Mainline answers a BO already queued with EINVAL (only DETACH_SLICE_BO says EBUSY).
  EXPECT_TRUE(failsWith(node_->execute(dbc_, std::span(outputs, 1)), EINVAL)) << "queued a BO that is still queued";
  // The device's semaphore timeout (2 s in this suite's config) ends the request with an error.
  EXPECT_TRUE(failsWith(node_->waitBo(output, dbc_, 10000), EIO))
      << "a request whose program never ran completed successfully";
  auto detached = node_->detachSlice(output);
  EXPECT_TRUE(detached) << detached.message();
}

TEST_F(SliceTest, ExecuteIsEagainWhenTheRingLacksRoom) {
  // queue_size 4 holds 3 elements; the relu request needs 4 (descriptors, input, output).
  auto image = container::QpcImage::fromBytes(relu_, "relu");
  InferenceRig rig(*node_, *image, 0, dbc_);
  rig.attachAll();
  EXPECT_TRUE(failsWith(node_->execute(dbc_, rig.executeEntries()), EAGAIN));
  // Nothing was queued: every BO is idle and detachable.
  for (const auto& e : rig.executeEntries()) EXPECT_TRUE(node_->detachSlice(e.handle));
}

// PERF_STATS_BO checks what mainline checks: the DBC's range and each handle. An unsliced BO, a
// BO on another DBC (or one nobody activated) and a count of 0 are answered, with zeros for what
// the BO has not done.
TEST_F(SliceTest, PerfStatsChecksItsArguments) {
  qaic_perf_stats_entry entry{};
  entry.handle = bo_->handle();
  entry.queue_level_before = entry.num_queue_element = entry.submit_latency_us = entry.device_latency_us = 77;
  auto unsliced = node_->perfStats(dbc_, std::span(&entry, 1));
  ASSERT_TRUE(unsliced) << "an unsliced BO: " << unsliced.message();
  EXPECT_EQ(entry.queue_level_before, 0u);
  EXPECT_EQ(entry.num_queue_element, 0u);
  EXPECT_EQ(entry.submit_latency_us, 0u);
  EXPECT_EQ(entry.device_latency_us, 0u);
  auto otherDbc = node_->perfStats((dbc_ + 1) % kTestDbcs, std::span(&entry, 1));
  EXPECT_TRUE(otherDbc) << "a DBC this file did not activate: " << otherDbc.message();
  EXPECT_TRUE(failsWith(node_->perfStats(kTestDbcs, std::span(&entry, 1)), EINVAL)) << "DBC out of range";
  auto none = node_->perfStats(dbc_, {});
  EXPECT_TRUE(none) << "count 0: " << none.message();
  qaic_perf_stats nothing{};
  nothing.hdr = {0, 0, dbc_};
  nothing.data = 0;
  EXPECT_TRUE(node_->rawIoctl(DRM_IOCTL_QAIC_PERF_STATS_BO, &nothing, "PERF_STATS_BO")) << "count 0, no array";
  entry.handle = 9999;
  EXPECT_TRUE(failsWith(node_->perfStats(dbc_, std::span(&entry, 1)), ENOENT));
  UnreadablePage page;
  qaic_perf_stats arg{};
  arg.hdr = {1, 0, dbc_};
  arg.data = page.address();
  EXPECT_TRUE(failsWith(node_->rawIoctl(DRM_IOCTL_QAIC_PERF_STATS_BO, &arg, "PERF_STATS_BO"), EFAULT));
}

}  // namespace
}  // namespace qaic::emu::test
