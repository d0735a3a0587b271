// SPDX-License-Identifier: Apache-2.0
#include "EmuTest.hpp"

#include <drm.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <stdexcept>

#include "ReluProgram.hpp"

namespace qaic::testing {

std::string EmuTest::config() const {
  return R"({"devices": [{"nsps": 4, "dbcs": 4}],
             "nodes": {"mode": "0600", "owner": "root", "group": "root"},
             "semaphore_timeout_ms": 2000, "compute_threads": 1})";
}

void EmuTest::SetUp() {
  relu_ = reluProgram();
  emu_ = std::make_unique<EmulatorProcess>(EmulatorOptions{config(), arguments(), {}, false});
}

void EmuTest::TearDown() {
  // A clean stop is asserted by EmulatorLifecycle; here only cleanup matters.
  if (emu_) emu_->stop();
  if (HasFailure() && emu_) std::cerr << "--- qaic-emu log ---\n" << emu_->log();
  emu_.reset();
}

driver::DeviceNode EmuTest::openNode() const {
  auto node = driver::DeviceNode::open(root(), 0);
  if (!node) throw std::runtime_error(node.message());
  return std::move(*node);
}

uint64_t EmuTest::attribute(const std::string& name) const {
  auto value = sysfs().readU64(name);
  if (!value) throw std::runtime_error(value.message());
  return *value;
}

uint32_t EmuTest::activateRelu(const driver::DeviceNode& node, uint32_t loadId, uint32_t queueSize, int eventfd) const {
  if (auto loaded = driver::loadProgram(node, relu_, loadId); !loaded) throw std::runtime_error(loaded.message());
  auto dbc = driver::activate(node, loadId, 0, queueSize, eventfd);
  if (!dbc) throw std::runtime_error(dbc.message());
  return *dbc;
}

ReluOnRing EmuTest::activateReluOnRing(uint32_t queueSize) const {
  auto node = openNode();
  auto interrupt = driver::CompletionEvent::create();
  if (!interrupt) throw std::runtime_error("completion eventfd: " + interrupt.message());
  const uint32_t dbc = activateRelu(node, 1, queueSize, interrupt->fd());
  auto window = driver::DbcWindow::map(node, dbc);
  if (!window) throw std::runtime_error(window.message());
  return ReluOnRing{std::move(node), std::move(*interrupt), dbc, std::move(*window)};
}

void BoOnReluTest::SetUp() {
  EmuTest::SetUp();
  node_ = std::make_unique<driver::DeviceNode>(openNode());
  dbc_ = activateRelu(*node_, 1, queueSize_);
  auto bo = driver::BufferObject::create(*node_, kBoBytes);
  ASSERT_TRUE(bo) << bo.message();
  bo_ = std::make_unique<driver::BufferObject>(std::move(*bo));
}

void BoOnReluTest::TearDown() {
  bo_.reset();
  node_.reset();
  EmuTest::TearDown();
}

qaic_attach_slice_hdr BoOnReluTest::header(uint32_t dir) const {
  qaic_attach_slice_hdr hdr{};
  hdr.dbc_id = dbc_;
  hdr.handle = bo_->handle();
  hdr.dir = dir;
  hdr.size = bo_->size();
  return hdr;
}

bool EmuTest::emulatorAlive() const { return emu_ && ::kill(emu_->pid(), 0) == 0; }

driver::ResponseElement awaitOneResponse(const EmuTest& test, driver::DbcWindow& window,
                                         const driver::CompletionEvent& interrupt, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    (void)interrupt.wait(std::chrono::milliseconds(200));
    driver::ResponseElement r[1];
    auto n = window.takeResponses(r);
    if (!n) {
      ADD_FAILURE() << n.message();
      break;
    }
    if (*n == 1) return r[0];
    if (!test.emulatorAlive()) {
      ADD_FAILURE() << "qaic-emu died while a request was on the ring";
      break;
    }
  }
  ADD_FAILURE() << "no response on DBC " << window.dbcId() << " within " << timeout.count() << " ms";
  return {0xffff, 0xffff};
}

int exportBo(const driver::DeviceNode& node, uint32_t handle, uint32_t flags) {
  static_assert((DRM_RDWR | DRM_CLOEXEC) == 0x80002, "the default flags of exportBo");
  auto offset = node.mmapBo(handle);
  if (!offset) return -offset.error();
  // What the kernel would make: the node's memory file, positioned at the BO's offset.
  const int fd = ::open((node.shmDir() / driver::deviceMemoryFileName(node.index())).c_str(),
                        ((flags & DRM_RDWR) ? O_RDWR : O_RDONLY) | ((flags & DRM_CLOEXEC) ? O_CLOEXEC : 0));
  if (fd < 0) return -errno;
  if (::lseek(fd, static_cast<off_t>(*offset), SEEK_SET) < 0) {
    const int err = errno;
    ::close(fd);
    return -err;
  }
  drm_prime_handle p{handle, flags, fd};
  if (auto r = node.rawIoctl(DRM_IOCTL_PRIME_HANDLE_TO_FD, &p, "PRIME_HANDLE_TO_FD"); !r) {
    ::close(fd);
    return -r.error();
  }
  return p.fd;
}

int64_t importFd(const driver::DeviceNode& node, int fd) {
  drm_prime_handle p{0, 0, fd};
  if (auto r = node.rawIoctl(DRM_IOCTL_PRIME_FD_TO_HANDLE, &p, "PRIME_FD_TO_HANDLE"); !r) return -r.error();
  return p.handle;
}

UnreadablePage::UnreadablePage() : page_(::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) {
  if (page_ == MAP_FAILED) throw std::runtime_error("mmap PROT_NONE");
}

UnreadablePage::~UnreadablePage() { ::munmap(page_, 4096); }

}  // namespace qaic::testing
