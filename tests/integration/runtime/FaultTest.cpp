// Faults injected into the emulated device: data-path timeouts with retries, device errors,
// removal. Each ends in a typed status and a call of the error handler, never a hang, and the
// set stays usable where the device does.
#include <mutex>

#include "RuntimeFixture.hpp"
#include "driver/SysfsNames.hpp"

namespace qaic::rt::test {
namespace {

struct Reported {
  std::mutex mutex;
  std::vector<std::pair<QCtxId, QStatus>> errors;
};

class FaultTest : public RuntimeTest {
 protected:
  std::string emulatorConfig() const override { return R"({"semaphore_timeout_ms":400})"; }

  void SetUp() override {
    RuntimeTest::SetUp();
    network_ = compile("relu", reluNetworkIr(16));
    context_ = makeContext(
        nullptr,
        [](QCtxId id, QStatus status, const char*, void* user) {
          auto* reported = static_cast<Reported*>(user);
          std::lock_guard lock(reported->mutex);
          reported->errors.emplace_back(id, status);
        },
        &reported_);
  }

  // The runtime closes its device file before the emulator stops.
  void TearDown() override {
    context_.reset();
    RuntimeTest::TearDown();
  }

  QStatus runOnce(InferenceSet& set, uint64_t id, std::vector<float>& y, std::string* message = nullptr) {
    std::vector<float> x(16, -1.0f);
    x[2] = 4.0f;
    shInferenceHandle h;
    if (set.getAvailable(h, 5'000'000) != QS_SUCCESS) return QS_ERROR;
    h->setBuffers({heapBuffer(x), heapBuffer(y)});
    set.submit(h, id);
    shInferenceHandle done;
    const QStatus status = set.getCompletedId(done, id, 30'000'000);
    if (done) {
      if (message) *message = done->getErrorMessage();
      set.putCompleted(done);
    }
    return status;
  }

  Network network_;
  std::shared_ptr<Context> context_;
  Reported reported_;
};

TEST_F(FaultTest, HungDeviceTimesOutAfterRetriesAndTheSetRecovers) {
  InferenceSetProperties properties;
  properties.programProperties.dataPathTimeoutMs = 150;
  properties.programProperties.submitNumRetries = 1;
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1, &properties);
  writeSysfs(driver::sysfs::kFaultNspHang, "1");
  std::vector<float> y(16);
  std::string message;
  EXPECT_EQ(runOnce(*set, 1, y, &message), QS_TIMEDOUT) << message;
  {
    std::lock_guard lock(reported_.mutex);
    ASSERT_FALSE(reported_.errors.empty());
    EXPECT_EQ(reported_.errors.back().first, context_->getId());
    EXPECT_EQ(reported_.errors.back().second, QS_TIMEDOUT);
  }
  writeSysfs(driver::sysfs::kFaultNspHang, "0");
  // Late answers to the abandoned tries drain first; the next request then completes normally.
  QStatus status = QS_ERROR;
  for (uint64_t id = 2; id < 10 && status != QS_SUCCESS; ++id) status = runOnce(*set, id, y, &message);
  EXPECT_EQ(status, QS_SUCCESS) << message;
  EXPECT_FLOAT_EQ(y[2], 4.0f);
  EXPECT_FLOAT_EQ(y[0], 0.0f);
}

TEST_F(FaultTest, DeviceErrorCompletesTheRequestWithItsCode) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  writeSysfs(driver::sysfs::kFaultDmaFail, "3 1");
  std::vector<float> y(16);
  std::string message;
  EXPECT_EQ(runOnce(*set, 1, y, &message), QS_DEVICE_ERROR);
  EXPECT_NE(message.find("DMA_FAILED"), std::string::npos) << message;
  EXPECT_EQ(runOnce(*set, 2, y, &message), QS_SUCCESS) << message;
  EXPECT_FLOAT_EQ(y[2], 4.0f);
}

TEST_F(FaultTest, RemovedDeviceFailsRequestsInsteadOfHanging) {
  InferenceSetProperties properties;
  properties.programProperties.dataPathTimeoutMs = 300;
  properties.programProperties.submitNumRetries = 0;
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1, &properties);
  std::vector<float> y(16);
  ASSERT_EQ(runOnce(*set, 1, y), QS_SUCCESS);
  writeSysfs(driver::sysfs::kFaultRemove, "1");
  std::string message;
  const QStatus status = runOnce(*set, 2, y, &message);
  EXPECT_TRUE(status == QS_DEV_REMOVED || status == QS_TIMEDOUT || status == QS_CANCELED)
      << statusName(status) << ": " << message;
  EXPECT_NE(status, QS_SUCCESS);
}

// The device's own semaphore timeout stays long here, so only the reset can end the request.
class ResetTest : public FaultTest {
 protected:
  std::string emulatorConfig() const override { return {}; }
};

TEST_F(ResetTest, ResetWhileInFlightIsReportedAsAReset) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  writeSysfs(driver::sysfs::kFaultNspHang, "1");  // keeps the request in flight until the reset
  std::vector<float> x(16, 1.0f), y(16);
  shInferenceHandle h;
  ASSERT_EQ(set->getAvailable(h, 1'000'000), QS_SUCCESS);
  h->setBuffers({heapBuffer(x), heapBuffer(y)});
  set->submit(h, 1);
  EXPECT_EQ(set->waitForCompletion(h, 100'000), QS_TIMEDOUT) << "the device is hung";
  writeSysfs(driver::sysfs::kFaultReset, "1");
  EXPECT_EQ(set->waitForCompletion(h, 10'000'000), QS_DEV_RESET) << h->getErrorMessage();
  std::lock_guard lock(reported_.mutex);
  ASSERT_FALSE(reported_.errors.empty());
  EXPECT_EQ(reported_.errors.back().second, QS_DEV_RESET);
}

}  // namespace
}  // namespace qaic::rt::test
