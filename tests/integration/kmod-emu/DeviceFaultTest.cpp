// SPDX-License-Identifier: Apache-2.0
// The device itself fails mid-flight: a reset (qaic-runner must end with a clear error, the
// device returns to Ready and serves a new run) and a removal (every libqaic call on the set
// answers QS_DEV_REMOVED instead of hanging).
#include <gmock/gmock.h>
#include <stdlib.h>

#include <mutex>
#include <vector>

#include <qaic/qaic.hpp>

#include "DeviceAttributes.hpp"
#include "FaultRig.hpp"

namespace qaic::faults::test {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

TEST_F(LiveFaultTest, ResetMidFlightEndsTheRunnerAndTheDeviceServesAgain) {
  auto runner = startRunner({"--time", "30", "--submit-timeout", "1000", "--submit-retry-count", "0"});
  ASSERT_TRUE(waitUntilActive(*runner));
  writeSysfs(driver::sysfs::kFaultReset, "1");

  const ExitStatus e = runner->wait(10s);
  ASSERT_TRUE(e.ended) << "the runner hung after the reset";
  ASSERT_TRUE(e.exited) << "the runner died of signal " << e.signal;
  EXPECT_EQ(e.code, 4) << runner->output();  // the runner's "device gone" exit code
  EXPECT_THAT(runner->errorOutput(), HasSubstr("qaic-runner: error: inference failed (QS_DEV_RESET): "));
  RecordProperty("runner_error", runner->errorOutput());

  EXPECT_TRUE(testing::eventually([&] { return readSysfs(driver::sysfs::kEmuStatus) == "Ready"; }, 5s))
      << readSysfs(driver::sysfs::kEmuStatus).value_or("?");
  EXPECT_TRUE(newRunSucceeds());
}

struct Reported {
  std::mutex mutex;
  std::vector<rt::QStatus> statuses;
};

TEST_F(LiveFaultTest, RemovedDeviceAnswersDevRemovedToInferenceSetCalls) {
  ASSERT_EQ(::setenv("QAIC_ROOT", root().c_str(), 1), 0);
  Reported reported;
  auto quiet = [](rt::QLogLevel, const char*, void*) {};
  auto record = [](rt::QCtxId, rt::QStatus status, const char*, void* user) {
    auto* r = static_cast<Reported*>(user);
    std::lock_guard lock(r->mutex);
    r->statuses.push_back(status);
  };
  auto context = rt::Context::Factory(nullptr, {0}, quiet, nullptr, record, &reported);
  rt::InferenceSetProperties properties;
  properties.programProperties.dataPathTimeoutMs = 5000;  // only the removal can end a request early
  properties.programProperties.submitNumRetries = 0;
  auto set = rt::InferenceSet::Factory(context, rt::Qpc::Factory(qpcDir().string()), 0, 1, 1, &properties);

  std::vector<int32_t> in0 = {1, -2, 3, 40000}, out(4);
  std::vector<float> in1 = {0.5f, -1, 2, 3};
  auto buffer = [](auto& v) {
    rt::QBuffer b;
    b.buf = reinterpret_cast<uint8_t*>(v.data());
    b.size = v.size() * sizeof(v[0]);
    return b;
  };
  rt::shInferenceHandle h;
  ASSERT_EQ(set->getAvailable(h, 1'000'000), rt::QS_SUCCESS);
  h->setBuffers({buffer(in0), buffer(in1), buffer(out)});
  set->submit(h, 1);
  ASSERT_EQ(set->waitForCompletion(h, 10'000'000), rt::QS_SUCCESS) << h->getErrorMessage();
  EXPECT_EQ(out, (std::vector<int32_t>{2, -4, 6, 80000}));
  set->putCompleted(h);
  ASSERT_EQ(set->getAvailable(h, 1'000'000), rt::QS_SUCCESS);

  writeSysfs(driver::sysfs::kFaultNspHang, "1");  // keeps the next request in flight until the removal
  set->submit(h, 2);
  ASSERT_EQ(set->waitForCompletion(h, 200'000), rt::QS_TIMEDOUT) << "the device is hung";
  writeSysfs(driver::sysfs::kFaultRemove, "1");
  EXPECT_EQ(set->waitForCompletion(h, 10'000'000), rt::QS_DEV_REMOVED) << h->getErrorMessage();
  EXPECT_FALSE(h->getErrorMessage().empty());
  RecordProperty("removed_error", h->getErrorMessage());
  set->putCompleted(h);

  // A request submitted after the removal fails the same way, at submission or completion.
  ASSERT_EQ(set->getAvailable(h, 1'000'000), rt::QS_SUCCESS);
  rt::QStatus late = rt::QS_SUCCESS;
  try {
    set->submit(h, 3);
    rt::shInferenceHandle done;
    late = set->getCompletedId(done, 3, 10'000'000);
    if (done) set->putCompleted(done);
  } catch (const rt::Error& e) {
    late = e.status();
  }
  EXPECT_EQ(late, rt::QS_DEV_REMOVED) << rt::statusName(late);

  std::lock_guard lock(reported.mutex);
  ASSERT_FALSE(reported.statuses.empty());
  EXPECT_EQ(reported.statuses.front(), rt::QS_DEV_REMOVED) << rt::statusName(reported.statuses.front());
}

}  // namespace
}  // namespace qaic::faults::test
