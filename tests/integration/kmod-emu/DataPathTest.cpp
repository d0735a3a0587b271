// SPDX-License-Identifier: Apache-2.0
// The data path end to end on a real qaic-emu: a real container is loaded and activated, request
// elements go through the DBC ring (directly, and through EXECUTE_BO / WAIT_BO), the emulated NSP
// runs the program, and completions, errors and faults come back as the protocol says.
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

#include "ClientHelpers.hpp"
#include "DeviceAttributes.hpp"
#include "DeviceData.hpp"
#include "EmulatorProcess.hpp"
#include "RawDevice.hpp"
#include "ReluProgram.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace std::chrono_literals;
using driver::RequestElement;

constexpr uint32_t kLoadId = 42;

std::vector<float> inputValues() {
  std::vector<float> v(32);
  for (int i = 0; i < 32; ++i) v[i] = static_cast<float>(i % 2 ? i : -i) * 0.5f;
  return v;
}

class DataPath : public ::testing::Test {
 protected:
  virtual const char* configJson() const { return R"({"semaphore_timeout_ms": 1500})"; }

  void SetUp() override {
    emu_ = std::make_unique<EmulatorProcess>(EmulatorOptions{configJson(), {}, {}, true});
    shm_ = emu_->attribute(0, driver::sysfs::kEmuShmDir);
    program_ = makeReluProgram(4, {1, 8, 2, 2}, {ir::DeviceLayout::DWHC, ir::DType::Float16});
    dev_ = std::make_unique<RawDevice>(emu_->nodePath(0));
    ASSERT_GE(dev_->fd(), 0);
    efd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  }
  void TearDown() override {
    window_.reset();
    dev_.reset();
    // A clean exit (0) also means no leak under LeakSanitizer.
    EXPECT_TRUE(emu_->stop()) << emu_->log();
    emu_.reset();
    if (efd_ >= 0) close(efd_);
  }

  int activate(RawDevice& dev, uint32_t queueSize, uint32_t& dbc, int eventfd) {
    return transferAndActivate(dev, program_.bytes, kLoadId, queueSize, eventfd, dbc);
  }

  void activateAndMap(uint32_t queueSize = 32) {
    ASSERT_EQ(activate(*dev_, queueSize, dbc_, efd_), 0);
    qaic_emu_dbc_info info{};
    info.dbc_id = dbc_;
    ASSERT_EQ(rawIoctl(dev_->fd(), DRM_IOCTL_QAIC_EMU_DBC_INFO, &info), 0);
    EXPECT_EQ(info.nelem, queueSize);
    EXPECT_EQ(info.window_size, driver::dbcWindowBytes(queueSize));
    nelem_ = info.nelem;
    respOffset_ = info.response_offset;
    window_ = std::make_unique<Mapping>();
    ASSERT_TRUE(window_->map(shm_ + "/" + info.name, info.window_size));
  }

  void createBo(Bo& bo, uint64_t size) { ASSERT_EQ(createMappedBo(*dev_, shm_, size, bo), 0); }

  int attach(const Bo& bo, uint32_t dir, qaic_attach_slice_entry entry) {
    return attachOneSlice(*dev_, dbc_, bo, dir, entry);
  }

  // The four BOs of one inference, filled with a request for inputValues().
  void prepareBuffers() {
    createBo(req_, 4096);
    createBo(in_, program_.inSize);
    createBo(out_, program_.outSize);
    createBo(rsp_, 4096);
    driver::RequestDescriptorHeader h{driver::kRequestDescriptorMagic, 1, 2, 7};
    std::memcpy(req_.map.data(), &h, sizeof h);
    for (uint32_t i = 0; i < 2; ++i) {
      driver::RequestDescriptorEntry e{1, 4, {1, 8, 2, 2}};
      std::memcpy(req_.map.data() + sizeof h + i * sizeof e, &e, sizeof e);
    }
    auto values = inputValues();
    kernels::UserBufferView view{"x", ir::DType::Float, ir::UserLayout::NCHW, program_.dims};
    kernels::userToDevice(view, std::as_bytes(std::span(values)), program_.inFormat,
                          std::span(in_.map.data(), in_.size));
  }

  void expectReluOutput() {
    std::vector<float> got(32);
    kernels::UserBufferView view{"y", ir::DType::Float, ir::UserLayout::NCHW, program_.dims};
    kernels::deviceToUser(program_.outFormat, std::span<const std::byte>(out_.map.data(), out_.size), view,
                          std::as_writable_bytes(std::span(got)));
    auto values = inputValues();
    for (int i = 0; i < 32; ++i) EXPECT_FLOAT_EQ(got[i], std::max(values[i], 0.0f)) << i;
    driver::ResponseDescriptorHeader h;
    std::memcpy(&h, rsp_.map.data(), sizeof h);
    EXPECT_EQ(h.magic, driver::kResponseDescriptorMagic);
    EXPECT_EQ(h.status, 0u);
    EXPECT_EQ(h.bufferCount, 2u);
  }

  uint32_t& reg(std::size_t off) { return *reinterpret_cast<uint32_t*>(window_->data() + off); }

  // Writes elements at the request tail and rings the doorbell like libqaic does.
  void submit(const std::vector<RequestElement>& elements) {
    uint32_t tail = std::atomic_ref(reg(driver::kRegRequestTail)).load();
    for (const auto& e : elements) {
      std::memcpy(window_->data() + driver::requestFifoOffset(nelem_) + tail * sizeof e, &e, sizeof e);
      tail = (tail + 1) % nelem_;
    }
    std::atomic_ref(reg(driver::kRegRequestTail)).store(tail);
    std::atomic_ref(reg(driver::kRegDoorbellFutex)).fetch_add(1);
    syscall(SYS_futex, &reg(driver::kRegDoorbellFutex), FUTEX_WAKE, 1, nullptr, nullptr, 0);
  }

  // Waits for the interrupt and pops one response element.
  bool nextResponse(driver::ResponseElement& r, std::chrono::milliseconds timeout = 10s) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const uint32_t head = std::atomic_ref(reg(driver::kRegResponseHead)).load();
      if (head != std::atomic_ref(reg(driver::kRegResponseTail)).load()) {
        std::memcpy(&r, window_->data() + respOffset_ + head * sizeof r, sizeof r);
        std::atomic_ref(reg(driver::kRegResponseHead)).store((head + 1) % nelem_);
        return true;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{efd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) > 0) {
        uint64_t n;
        [[maybe_unused]] ssize_t rd = read(efd_, &n, sizeof n);
      }
    }
  }

  // The elements of one inference over the four BOs (device-protocol.md section 4).
  std::vector<RequestElement> inferenceElements(uint16_t reqId) {
    auto el = [&](uint8_t cmd, uint64_t src, uint64_t dst, uint32_t len) {
      RequestElement e{};
      e.reqId = reqId;
      e.cmd = cmd;
      e.srcAddr = src;
      e.dstAddr = dst;
      e.length = len;
      return e;
    };
    const uint8_t to = driver::kReqCmdToDevice, from = driver::kReqCmdFromDevice;
    std::vector<RequestElement> v = {
        el(to, driver::makeIova(req_.handle, 0), 0, 4096),
        el(to, driver::makeIova(in_.handle, 0), program_.inOffset, program_.inSize),
        el(from, program_.outOffset, driver::makeIova(out_.handle, 0), program_.outSize),
        el(from | driver::kReqCmdCompletion, 4096, driver::makeIova(rsp_.handle, 0), 4096)};
    v[1].dbAddr = program_.doorbell;
    v[1].dbLen = 32;
    v[1].dbData = reqId;
    v[2].semCmd[0] = driver::encodeSem({0, 0, 1, QAIC_SEM_WAIT_GT_0, 0, 0});
    v[3].semCmd[0] = driver::encodeSem({0, 0, 0, QAIC_SEM_DEC, 0, 0});
    return v;
  }

  void attachAllForRing() {
    qaic_attach_slice_entry e{};
    e.size = 4096;
    ASSERT_EQ(attach(req_, QAIC_DIR_TO_DEVICE, e), 0);
    e.size = in_.size;
    e.dev_addr = program_.inOffset;
    ASSERT_EQ(attach(in_, QAIC_DIR_TO_DEVICE, e), 0);
    e.size = out_.size;
    e.dev_addr = program_.outOffset;
    ASSERT_EQ(attach(out_, QAIC_DIR_FROM_DEVICE, e), 0);
    e.size = 4096;
    e.dev_addr = 4096;
    ASSERT_EQ(attach(rsp_, QAIC_DIR_FROM_DEVICE, e), 0);
  }

  // An activation ready for inferences, the nsp_hang fault set, and request 1 submitted.
  void submitWhileHung() {
    activateAndMap();
    prepareBuffers();
    attachAllForRing();
    ASSERT_TRUE(emu_->setAttribute(0, driver::sysfs::kFaultNspHang, "1"));
    submit(inferenceElements(1));
  }

  std::unique_ptr<EmulatorProcess> emu_;
  std::string shm_;
  ReluProgram program_;
  std::unique_ptr<RawDevice> dev_;
  int efd_ = -1;
  uint32_t dbc_ = 0, nelem_ = 0;
  uint64_t respOffset_ = 0;
  std::unique_ptr<Mapping> window_;
  Bo req_, in_, out_, rsp_;
};

TEST_F(DataPath, ActivationClaimsResourcesUntilTheFileCloses) {
  activateAndMap();
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuNspFree), "12");
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuVcFree), "15");
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuNetworksActive), "1");
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::dbcState(dbc_)), "1");
  {
    RawDevice other(emu_->nodePath(0));
    qaic_emu_dbc_info info{};
    info.dbc_id = dbc_;
    EXPECT_EQ(rawIoctl(other.fd(), DRM_IOCTL_QAIC_EMU_DBC_INFO, &info), EPERM);
  }
  dev_->close();
  EXPECT_TRUE(eventually([&] { return emu_->attribute(0, driver::sysfs::kEmuNspFree) == "16"; }));
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuVcFree), "16");
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuNetworksActive), "0");
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuNetworksLoaded), "0");
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuDramFree), emu_->attribute(0, driver::sysfs::kEmuDramTotal));
}

TEST_F(DataPath, ActivationsBeyondTheNspsFailWithEnospc) {
  uint32_t dbc = 0;
  std::vector<std::unique_ptr<RawDevice>> files;
  for (int i = 0; i < 4; ++i) {
    files.push_back(std::make_unique<RawDevice>(emu_->nodePath(0)));
    ASSERT_EQ(activate(*files.back(), 8, dbc, 0), 0) << i;
  }
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuNspFree), "0");
  RawDevice last(emu_->nodePath(0));
  EXPECT_EQ(activate(last, 8, dbc, 0), ENOSPC);
}

TEST_F(DataPath, ActivationTakesOnlyARealEventfd) {
  uint32_t dbc = 0;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  // Separate load ids: a transfer to an existing load would append to it.
  EXPECT_EQ(transferAndActivate(*dev_, program_.bytes, 11, 8, fds[0], dbc), EINVAL);  // a pipe
  EXPECT_EQ(transferAndActivate(*dev_, program_.bytes, 12, 8, 987654, dbc), EBADF);
  close(fds[0]);
  close(fds[1]);
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuNetworksActive), "0");
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuNspFree), "16");
  EXPECT_EQ(transferAndActivate(*dev_, program_.bytes, 13, 8, efd_, dbc), 0);
}

TEST_F(DataPath, InferenceThroughTheRingComputesRelu) {
  activateAndMap();
  prepareBuffers();
  attachAllForRing();
  for (uint16_t id = 1; id <= 3; ++id) {
    std::memset(out_.map.data(), 0, out_.size);
    submit(inferenceElements(id));
    driver::ResponseElement r{};
    ASSERT_TRUE(nextResponse(r));
    EXPECT_EQ(r.reqId, id);
    EXPECT_EQ(r.completionCode, 0) << driver::completionCodeName(r.completionCode);
    expectReluOutput();
  }
}

TEST_F(DataPath, UnattachedAddressCompletesWithBadAddress) {
  activateAndMap();
  prepareBuffers();
  attachAllForRing();
  Bo stray;
  createBo(stray, 4096);
  RequestElement e{};
  e.reqId = 9;
  e.cmd = driver::kReqCmdToDevice | driver::kReqCmdCompletion;
  e.srcAddr = driver::makeIova(stray.handle, 0);
  e.dstAddr = 0;
  e.length = 4096;
  submit({e});
  driver::ResponseElement r{};
  ASSERT_TRUE(nextResponse(r));
  EXPECT_EQ(r.reqId, 9);
  EXPECT_EQ(r.completionCode, driver::DBC_COMPLETION_BAD_ADDRESS);
  // Beyond the IO region is refused too, and the channel keeps serving afterwards.
  e.srcAddr = driver::makeIova(req_.handle, 0);
  e.dstAddr = program_.ioRegionSize - 100;
  submit({e});
  ASSERT_TRUE(nextResponse(r));
  EXPECT_EQ(r.completionCode, driver::DBC_COMPLETION_BAD_ADDRESS);
  submit(inferenceElements(10));
  ASSERT_TRUE(nextResponse(r));
  EXPECT_EQ(r.completionCode, 0);
}

TEST_F(DataPath, BadRequestDescriptorIsReportedNotComputed) {
  activateAndMap();
  prepareBuffers();
  attachAllForRing();
  const uint32_t badMagic = 0x12345678;
  std::memcpy(req_.map.data(), &badMagic, 4);
  submit(inferenceElements(5));
  driver::ResponseElement r{};
  ASSERT_TRUE(nextResponse(r));
  EXPECT_EQ(r.completionCode, driver::DBC_COMPLETION_BAD_REQUEST);
  driver::ResponseDescriptorHeader h;
  std::memcpy(&h, rsp_.map.data(), sizeof h);
  EXPECT_EQ(h.status, driver::DBC_COMPLETION_BAD_REQUEST);
}

TEST_F(DataPath, InjectedDmaFailureCompletesTheNextRequests) {
  activateAndMap();
  prepareBuffers();
  attachAllForRing();
  ASSERT_TRUE(emu_->setAttribute(0, driver::sysfs::kFaultDmaFail, "3 1"));
  driver::ResponseElement r{};
  submit(inferenceElements(1));
  ASSERT_TRUE(nextResponse(r));
  EXPECT_EQ(r.completionCode, driver::DBC_COMPLETION_DMA_FAILED);
  submit(inferenceElements(2));
  ASSERT_TRUE(nextResponse(r));
  EXPECT_EQ(r.completionCode, 0);
  expectReluOutput();
}

TEST_F(DataPath, HungNspTimesOutWithNspHang) {
  submitWhileHung();
  driver::ResponseElement r{};
  EXPECT_FALSE(nextResponse(r, 500ms));  // the client's own timeout fires first
  ASSERT_TRUE(nextResponse(r));          // then the device's semaphore timeout
  EXPECT_EQ(r.completionCode, driver::DBC_COMPLETION_NSP_HANG);
  ASSERT_TRUE(emu_->setAttribute(0, driver::sysfs::kFaultNspHang, "0"));
}

// The hung request fails once, after one semaphore timeout; its program never runs late, so the
// next request's wait for the done semaphore is not satisfied by a stale INC.
TEST_F(DataPath, HungRunIsDroppedAndTheNextRequestComputes) {
  submitWhileHung();
  driver::ResponseElement r{};
  ASSERT_TRUE(nextResponse(r));
  EXPECT_EQ(r.reqId, 1);
  EXPECT_EQ(r.completionCode, driver::DBC_COMPLETION_NSP_HANG);
  ASSERT_TRUE(emu_->setAttribute(0, driver::sysfs::kFaultNspHang, "0"));
  std::memset(out_.map.data(), 0, out_.size);
  submit(inferenceElements(2));
  ASSERT_TRUE(nextResponse(r));
  EXPECT_EQ(r.reqId, 2);
  EXPECT_EQ(r.completionCode, 0) << driver::completionCodeName(r.completionCode);
  expectReluOutput();
  EXPECT_FALSE(nextResponse(r, 300ms)) << "an extra response, reqId " << r.reqId;
}

// A hang that outlasts the test unless lifted, and the one compute thread old configurations
// asked for (accepted and ignored).
class LongHang : public DataPath {
 protected:
  const char* configJson() const override { return R"({"semaphore_timeout_ms": 60000, "compute_threads": 1})"; }
};

// Programs are built on the ACTIVATE's own thread: a hung run elsewhere does not hold it up.
TEST_F(LongHang, ActivateDoesNotWaitBehindAHungRun) {
  submitWhileHung();
  // The doorbell's element is done once the head passes it: the run is being held.
  ASSERT_TRUE(eventually([&] { return std::atomic_ref(reg(driver::kRegRequestHead)).load() == 2; }, 10s));
  RawDevice other(emu_->nodePath(0));
  uint32_t dbc = 0;
  EXPECT_EQ(activate(other, 8, dbc, 0), 0);
  driver::ResponseElement r{};
  EXPECT_FALSE(nextResponse(r, 0ms)) << "the hung request completed, code " << r.completionCode;
  ASSERT_TRUE(emu_->setAttribute(0, driver::sysfs::kFaultNspHang, "0"));
  ASSERT_TRUE(nextResponse(r));
  EXPECT_EQ(r.completionCode, 0) << driver::completionCodeName(r.completionCode);
  expectReluOutput();
}

// Which syscall thread `tid` of this process is blocked in, or -1 while it runs.
long blockedSyscall(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/syscall");
  long nr = -1;
  if (!(f >> nr)) return -1;  // "running"
  return nr;
}

bool eventfdWasWritten(int efd) {
  uint64_t n = 0;
  return read(efd, &n, sizeof n) == sizeof n;
}

// A host thread asleep in FUTEX_WAIT on one word of the window (at most 30 s).
class FutexSleeper {
 public:
  explicit FutexSleeper(uint32_t& word) : word_(word), before_(std::atomic_ref(word).load()) {
    thread_ = std::thread([this] {
      tid_.store(static_cast<pid_t>(syscall(SYS_gettid)));
      timespec limit{30, 0};
      result_ = syscall(SYS_futex, &word_, FUTEX_WAIT, before_, &limit, nullptr, 0);
      errno_ = errno;
    });
  }
  ~FutexSleeper() {
    if (thread_.joinable()) thread_.join();
  }
  // True once the thread sleeps in the futex, so only a FUTEX_WAKE can end its wait.
  bool asleep() {
    return eventually(
        [&] {
          const pid_t tid = tid_.load();
          return tid != 0 && blockedSyscall(tid) == SYS_futex;
        },
        10s);
  }
  // Joins; empty when a FUTEX_WAKE ended the wait and the word had changed, else what happened.
  std::string woken() {
    thread_.join();
    if (result_ != 0) return std::string("FUTEX_WAIT ended with ") + strerror(errno_);
    if (std::atomic_ref(word_).load() == before_) return "the futex word did not change";
    return "";
  }

 private:
  uint32_t& word_;
  const uint32_t before_;
  std::atomic<pid_t> tid_{0};
  long result_ = -1;
  int errno_ = 0;
  std::thread thread_;
};

// kRegHostWaiting nonzero: the completion bumps the response futex and wakes the thread
// sleeping on it, and the eventfd stays quiet (device-protocol.md section 3).
TEST_F(DataPath, WaitingHostIsWokenThroughTheResponseFutex) {
  activateAndMap();
  prepareBuffers();
  attachAllForRing();
  std::atomic_ref(reg(driver::kRegHostWaiting)).store(1);
  FutexSleeper sleeper(reg(driver::kRegResponseFutex));
  const bool asleep = sleeper.asleep();
  if (asleep) submit(inferenceElements(1));
  const std::string woken = sleeper.woken();
  ASSERT_TRUE(asleep) << "the waiter never blocked in FUTEX_WAIT";
  EXPECT_EQ(woken, "");
  EXPECT_FALSE(eventfdWasWritten(efd_)) << "the eventfd was written for a waiting host";
  EXPECT_EQ(errno, EAGAIN);
  std::atomic_ref(reg(driver::kRegHostWaiting)).store(0);
  driver::ResponseElement r{};
  ASSERT_TRUE(nextResponse(r, 0ms));  // already in the FIFO
  EXPECT_EQ(r.reqId, 1);
  EXPECT_EQ(r.completionCode, 0) << driver::completionCodeName(r.completionCode);
  expectReluOutput();
}

// A stopping activation wakes the response futex, so a sleeper reads the status register now.
TEST_F(DataPath, StoppedActivationWakesTheResponseFutex) {
  activateAndMap();
  std::atomic_ref(reg(driver::kRegHostWaiting)).store(1);
  FutexSleeper sleeper(reg(driver::kRegResponseFutex));
  const bool asleep = sleeper.asleep();
  if (asleep) dev_->close();  // releases the file and with it the activation
  const std::string woken = sleeper.woken();
  ASSERT_TRUE(asleep) << "the waiter never blocked in FUTEX_WAIT";
  EXPECT_EQ(woken, "");
  EXPECT_EQ(std::atomic_ref(reg(driver::kRegDeviceStatus)).load(),
            static_cast<uint32_t>(driver::DeviceStatus::Stopped));
}

// kRegHostWaiting zero: the eventfd is the interrupt, as before; the futex word still counts.
TEST_F(DataPath, IdleHostIsInterruptedThroughTheEventfd) {
  activateAndMap();
  prepareBuffers();
  attachAllForRing();
  const uint32_t before = std::atomic_ref(reg(driver::kRegResponseFutex)).load();
  submit(inferenceElements(1));
  pollfd p{efd_, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 10000), 1) << "no eventfd write within 10 s";
  EXPECT_TRUE(eventfdWasWritten(efd_));
  EXPECT_NE(std::atomic_ref(reg(driver::kRegResponseFutex)).load(), before);
  driver::ResponseElement r{};
  ASSERT_TRUE(nextResponse(r, 0ms));
  EXPECT_EQ(r.completionCode, 0) << driver::completionCodeName(r.completionCode);
}

class ExecuteBo : public DataPath {
 protected:
  // Slices that carry the inference's doorbell and semaphores, so EXECUTE_BO builds the same
  // elements the ring test writes by hand.
  void attachForExecute() {
    qaic_attach_slice_entry e{};
    e.size = 4096;
    ASSERT_EQ(attach(req_, QAIC_DIR_TO_DEVICE, e), 0);
    e.size = in_.size;
    e.dev_addr = program_.inOffset;
    e.db_addr = program_.doorbell;
    e.db_len = 32;
    e.db_data = 1;
    ASSERT_EQ(attach(in_, QAIC_DIR_TO_DEVICE, e), 0);
    e = {};
    e.size = out_.size;
    e.dev_addr = program_.outOffset;
    e.sem0 = {0, 0, 1, QAIC_SEM_WAIT_GT_0, 0, 0};
    ASSERT_EQ(attach(out_, QAIC_DIR_FROM_DEVICE, e), 0);
    e = {};
    e.size = 4096;
    e.dev_addr = 4096;
    e.sem0 = {0, 0, 0, QAIC_SEM_DEC, 0, 0};
    ASSERT_EQ(attach(rsp_, QAIC_DIR_FROM_DEVICE, e), 0);
  }
  int execute(std::vector<qaic_execute_entry> entries) {
    qaic_execute x{{static_cast<uint32_t>(entries.size()), dbc_}, reinterpret_cast<uint64_t>(entries.data())};
    return rawIoctl(dev_->fd(), DRM_IOCTL_QAIC_EXECUTE_BO, &x);
  }
  int wait(const Bo& bo, uint32_t ms) {
    qaic_wait w{bo.handle, ms, dbc_, 0};
    return rawIoctl(dev_->fd(), DRM_IOCTL_QAIC_WAIT_BO, &w);
  }
};

TEST_F(ExecuteBo, ExecuteAndWaitComputeRelu) {
  activateAndMap();
  prepareBuffers();
  attachForExecute();
  ASSERT_EQ(execute({{req_.handle, QAIC_DIR_TO_DEVICE},
                     {in_.handle, QAIC_DIR_TO_DEVICE},
                     {out_.handle, QAIC_DIR_FROM_DEVICE},
                     {rsp_.handle, QAIC_DIR_FROM_DEVICE}}),
            0);
  EXPECT_EQ(wait(rsp_, 0), 0);
  EXPECT_EQ(wait(out_, 1000), 0);
  expectReluOutput();
  qaic_perf_stats_entry stats{};
  stats.handle = rsp_.handle;
  qaic_perf_stats ps{{1, 0, dbc_}, reinterpret_cast<uint64_t>(&stats)};
  ASSERT_EQ(rawIoctl(dev_->fd(), DRM_IOCTL_QAIC_PERF_STATS_BO, &ps), 0);
  EXPECT_EQ(stats.num_queue_element, 1u);
  EXPECT_EQ(stats.queue_level_before, 3u);  // the three BOs queued before it in the same call
  // Idle BOs can be detached and re-attached.
  qaic_detach_slice d{out_.handle, 0};
  EXPECT_EQ(rawIoctl(dev_->fd(), DRM_IOCTL_QAIC_DETACH_SLICE_BO, &d), 0);
}

TEST_F(ExecuteBo, BusyBoCannotBeDetachedAndWaitTimesOut) {
  activateAndMap(4);  // room for 3 elements
  prepareBuffers();
  attachForExecute();
  ASSERT_TRUE(emu_->setAttribute(0, driver::sysfs::kFaultNspHang, "1"));
  ASSERT_EQ(
      execute(
          {{req_.handle, QAIC_DIR_TO_DEVICE}, {in_.handle, QAIC_DIR_TO_DEVICE}, {out_.handle, QAIC_DIR_FROM_DEVICE}}),
      0);
  EXPECT_EQ(wait(out_, 200), ETIMEDOUT);
  qaic_detach_slice d{out_.handle, 0};
  EXPECT_EQ(rawIoctl(dev_->fd(), DRM_IOCTL_QAIC_DETACH_SLICE_BO, &d), EBUSY);
  EXPECT_EQ(execute({{out_.handle, QAIC_DIR_FROM_DEVICE}}), EINVAL);  // still queued: mainline's EINVAL
  // The output element waits behind the hung program; with the response BO queued after it the
  // four-slot ring (three usable) has room for one element only.
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(execute({{rsp_.handle, QAIC_DIR_FROM_DEVICE}}), 0);
  EXPECT_EQ(execute({{req_.handle, QAIC_DIR_TO_DEVICE}, {in_.handle, QAIC_DIR_TO_DEVICE}}), EAGAIN);
  ASSERT_TRUE(emu_->setAttribute(0, driver::sysfs::kFaultReset, "1"));
  // The reset ended the activation: mainline's WAIT_BO then answers EPERM (the DBC has no user).
  EXPECT_EQ(wait(out_, 5000), EPERM);
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuStatus), "Ready");
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuNetworksActive), "0");
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuNspFree), "16");
}

}  // namespace
}  // namespace qaic::emu::test
