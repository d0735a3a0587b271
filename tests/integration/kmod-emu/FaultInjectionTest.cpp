// SPDX-License-Identifier: Apache-2.0
// The fault files under sys/class/accel/accelN/qaic-emu/fault/: a hung NSP, failed DMA, a reset
// and a surprise removal, each seen by the client as a timeout, a completion code or an errno.
#include <unistd.h>

#include <cstring>

#include "DeviceAttributes.hpp"
#include "DeviceClient.hpp"
#include "EmuTest.hpp"
#include "InferenceRig.hpp"
#include "ReluProgram.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;
using namespace std::chrono_literals;

class FaultTest : public EmuTest {
 protected:
  void SetUp() override {
    EmuTest::SetUp();
    if (HasFatalFailure()) return;
    node_ = std::make_unique<DeviceNode>(openNode());
    auto interrupt = CompletionEvent::create();
    ASSERT_TRUE(interrupt);
    interrupt_ = std::make_unique<CompletionEvent>(std::move(*interrupt));
    dbc_ = activateRelu(*node_, 1, 16, interrupt_->fd());
    image_ = container::QpcImage::fromBytes(relu_, "relu");
    rig_ = std::make_unique<InferenceRig>(*node_, *image_, 0, dbc_);
    rig_->attachAll();
    rig_->writeRequestDescriptor(1);
    std::memset(rig_->buffer("x").data(), 0, rig_->buffer("x").size());
  }
  void TearDown() override {
    rig_.reset();
    node_.reset();
    EmuTest::TearDown();
  }
  // `file` is one of the fault files (driver::sysfs::kFault...).
  void fault(const char* file, const std::string& value) {
    auto r = sysfs().write(file, value);
    ASSERT_TRUE(r) << r.message();
  }
  // A request kept in flight by a hung NSP, then `file` written 1: the activation ends with it, so
  // the DBC is no longer this file's and WAIT_BO and EXECUTE_BO on it are EPERM, as mainline
  // answers once release_dbc took the DBC from its user.
  void expectRequestInFlightLostTo(const char* file) {
    fault(driver::sysfs::kFaultNspHang, "1");
    ASSERT_TRUE(node_->execute(dbc_, rig_->executeEntries()));
    fault(file, "1");
    EXPECT_TRUE(failsWith(node_->waitBo(rig_->lastHandle(), dbc_, 10000), EPERM))
        << "a request in flight survived " << file;
    EXPECT_TRUE(failsWith(node_->execute(dbc_, rig_->executeEntries()), EPERM)) << "the DBC outlived " << file;
  }

  std::unique_ptr<DeviceNode> node_;
  std::unique_ptr<CompletionEvent> interrupt_;
  std::unique_ptr<container::QpcImage> image_;
  std::unique_ptr<InferenceRig> rig_;
  uint32_t dbc_ = 0;
};

TEST_F(FaultTest, HungNspMakesTheClientTimeOut) {
  fault(driver::sysfs::kFaultNspHang, "1");
  ASSERT_TRUE(node_->execute(dbc_, rig_->executeEntries()));
  EXPECT_TRUE(failsWith(node_->waitBo(rig_->lastHandle(), dbc_, 300), ETIMEDOUT))
      << "a request completed on a hung NSP";
  // The outputs wait on a program that never finishes: the device's semaphore timeout (2 s
  // here) completes the request with NSP_HANG, which WAIT_BO reports as EIO.
  const uint32_t output = rig_->slot("y").bo.handle();
  EXPECT_TRUE(failsWith(node_->waitBo(output, dbc_, 10000), EIO));
  fault(driver::sysfs::kFaultNspHang, "0");
}

TEST_F(FaultTest, DmaFailureIsACompletionCode) {
  auto window = DbcWindow::map(*node_, dbc_);
  ASSERT_TRUE(window) << window.message();
  fault(driver::sysfs::kFaultDmaFail, std::to_string(DBC_COMPLETION_DMA_FAILED) + " 1");
  ASSERT_TRUE(window->submit(rig_->ringElements(1)));
  ResponseElement response = awaitOneResponse(*this, *window, *interrupt_, 20s);
  EXPECT_EQ(response.reqId, 1u);
  EXPECT_EQ(response.completionCode, DBC_COMPLETION_DMA_FAILED) << completionCodeName(response.completionCode);

  // One failure was asked for: the next request succeeds.
  ASSERT_TRUE(window->submit(rig_->ringElements(2)));
  response = awaitOneResponse(*this, *window, *interrupt_, 20s);
  EXPECT_EQ(response.reqId, 2u);
  EXPECT_EQ(response.completionCode, DBC_COMPLETION_SUCCESS) << completionCodeName(response.completionCode);
}

TEST_F(FaultTest, ResetEndsActivationsAndTheDeviceComesBack) {
  auto window = DbcWindow::map(*node_, dbc_);
  ASSERT_TRUE(window) << window.message();
  expectRequestInFlightLostTo(driver::sysfs::kFaultReset);
  EXPECT_EQ(window->deviceStatus(), DeviceStatus::Resetting);
  auto status = sysfs().read(driver::sysfs::kEmuStatus);
  ASSERT_TRUE(status);
  EXPECT_EQ(*status, "Ready");
  auto hang = sysfs().read(driver::sysfs::kFaultNspHang);
  ASSERT_TRUE(hang);
  EXPECT_EQ(*hang, "0") << "faults are cleared by a reset";
  // After a reset every activation is gone; a new client gets the whole device.
  for (int i = 0; i < 500 && attribute(driver::sysfs::kEmuNspFree) != kTestNsps; ++i) ::usleep(10000);
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps);
  auto fresh = openNode();
  auto dbc = [&]() -> Result<uint32_t> {
    if (auto r = loadProgram(fresh, relu_, 2); !r) return r.sysError();
    return activate(fresh, 2, 0, 16, 0);
  }();
  EXPECT_TRUE(dbc) << "no activation after reset: " << dbc.message();
}

TEST_F(FaultTest, ErrorHoldsTheDeviceUntilClearedOrReset) {
  expectRequestInFlightLostTo(driver::sysfs::kFaultError);
  EXPECT_EQ(sysfs().read(driver::sysfs::kEmuStatus).value(), "Error");
  EXPECT_EQ(sysfs().read(driver::sysfs::kFaultError).value(), "1");
  auto refused = [&]() -> Result<uint32_t> {
    if (auto r = loadProgram(*node_, relu_, 2); !r) return r.sysError();
    return activate(*node_, 2, 0, 16, 0);
  }();
  ASSERT_FALSE(refused) << "an activation started on a device in error";
  EXPECT_EQ(refused.error(), EAGAIN) << refused.message();

  fault(driver::sysfs::kFaultError, "0");
  EXPECT_EQ(sysfs().read(driver::sysfs::kEmuStatus).value(), "Ready");
  fault(driver::sysfs::kFaultError, "1");
  fault(driver::sysfs::kFaultReset, "1");
  EXPECT_EQ(sysfs().read(driver::sysfs::kEmuStatus).value(), "Ready") << "a reset ends the error";
  EXPECT_EQ(sysfs().read(driver::sysfs::kFaultError).value(), "0");
  EXPECT_TRUE(failsWith(sysfs().write(driver::sysfs::kFaultError, "2"), EINVAL));
}

TEST_F(FaultTest, RemovedDeviceAnswersEnodev) {
  auto window = DbcWindow::map(*node_, dbc_);
  ASSERT_TRUE(window) << window.message();
  fault(driver::sysfs::kFaultRemove, "1");
  EXPECT_TRUE(failsWith(node_->execute(dbc_, rig_->executeEntries()), ENODEV)) << "EXECUTE_BO on a removed device";
  EXPECT_TRUE(failsWith(queryStatus(*node_), ENODEV));
  EXPECT_EQ(window->deviceStatus(), DeviceStatus::Removed);
  EXPECT_TRUE(failsWith(window->submit(rig_->ringElements(3)), ENODEV));
  EXPECT_TRUE(root().listDevices().empty()) << "accel0 is still listed after removal";
  EXPECT_FALSE(std::filesystem::exists(root().sysfsPath(0)));
  EXPECT_TRUE(failsWith(DeviceNode::open(root(), 0), ENOENT));
}

}  // namespace
}  // namespace qaic::emu::test
