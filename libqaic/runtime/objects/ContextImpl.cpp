// SPDX-License-Identifier: Apache-2.0
#include "runtime/objects/ContextImpl.hpp"

#include <drm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "driver/DeviceProtocol.hpp"
#include "runtime/objects/DmaBufferImpl.hpp"
#include "runtime/objects/StatusCodes.hpp"

namespace qaic::rt {

namespace {
std::atomic<QCtxId> nextContextId{1};
}  // namespace

ContextImpl::ContextImpl(const QAicContextProperties& properties, driver::DeviceRoot root, LogCallback logCallback,
                         void* logUserData, ErrorHandler errorHandler, void* errorUserData)
    : id_(nextContextId.fetch_add(1)),
      root_(std::move(root)),
      level_(properties.initialLogLevel),
      logCallback_(logCallback ? std::move(logCallback) : LogCallback(defaultLogger)),
      logUserData_(logUserData),
      errorHandler_(errorHandler ? std::move(errorHandler) : ErrorHandler(defaultErrorHandler)),
      errorUserData_(errorUserData) {}

std::shared_ptr<ContextImpl> ContextImpl::of(const std::shared_ptr<Context>& context, const char* operation) {
  if (!context) throw Error(QS_INVAL, std::string(operation) + ": null Context");
  auto impl = std::dynamic_pointer_cast<ContextImpl>(context);
  if (!impl) throw Error(QS_INVAL, std::string(operation) + ": the Context was not made by Context::Factory");
  return impl;
}

void ContextImpl::openDevices(const std::vector<QID>& devices) {
  std::vector<QID> wanted = devices;
  namedDevices_ = !devices.empty();
  if (wanted.empty()) {
    // Partitions are other processes' leases (or this one's, named explicitly), not devices.
    for (unsigned index : root_.listDevices())
      if (index < driver::kFirstPartitionId) wanted.push_back(index);
    if (wanted.empty()) {
      if (const std::string lost = root_.lostServer(); !lost.empty()) throw Error(QS_DEV_REMOVED, lost);
      throw Error(QS_NODEV, "no accel device under " + (root_.path() / "dev/accel").string() +
                                " (is the device or qaic-emu running, is QAIC_ROOT right?)");
    }
  }
  for (QID id : wanted) {
    if (nodes_.count(id)) continue;
    auto node = driver::DeviceNode::open(root_, id);
    if (!node) {
      // ENOTCONN: the emulator behind the root is gone. ENODEV stays QS_ERROR here: it also
      // means a node of another driver.
      const QStatus status = node.error() == ENOENT ? QS_NODEV : node.error() == ENOTCONN ? QS_DEV_REMOVED : QS_ERROR;
      throw Error(status, "device " + std::to_string(id) + ": " + node.message());
    }
    nodes_.emplace(id, std::make_shared<const driver::DeviceNode>(std::move(node.value())));
    deviceIds_.push_back(id);
  }
  log(QL_INFO, "context " + std::to_string(id_) + ": " + std::to_string(deviceIds_.size()) + " device(s) under " +
                   root_.path().string());
}

std::shared_ptr<const driver::DeviceNode> ContextImpl::device(QID device) const {
  auto it = nodes_.find(device);
  if (it == nodes_.end())
    throw Error(QS_INVAL, "device " + std::to_string(device) + " is not part of context " + std::to_string(id_));
  return it->second;
}

std::shared_ptr<DmaBuffer> ContextImpl::allocateDmaBuffer(QID device, std::size_t size) {
  if (size == 0) throw Error(QS_INVAL, "allocateDmaBuffer: size 0");
  auto node = this->device(device);
  auto bo = driver::BufferObject::create(*node, size);
  if (!bo)
    throw Error(statusForBufferObjectErrno(bo.error()), "allocateDmaBuffer(" + std::to_string(size) +
                                                            " bytes) on device " + std::to_string(device) + ": " +
                                                            bo.message());
  auto exported = node->primeHandleToFd(bo->handle(), DRM_CLOEXEC | DRM_RDWR);
  if (!exported)
    throw Error(QS_ERROR, "allocateDmaBuffer(" + std::to_string(size) + " bytes) on device " + std::to_string(device) +
                              ": " + exported.message());
  auto buffer = std::make_shared<DmaBufferImpl>(node, std::move(bo.value()), std::move(exported.value()),
                                                shared_from_this());
  std::lock_guard lock(dmaMutex_);
  dmaBuffers_[buffer->fd()] = buffer;
  return buffer;
}

void ContextImpl::log(QLogLevel level, const std::string& message) const {
  if (level < level_.load()) return;
  std::lock_guard lock(callbackMutex_);
  logCallback_(level, message.c_str(), logUserData_);
}

void ContextImpl::reportError(QStatus status, const std::string& message) const {
  log(QL_ERROR, message);
  std::lock_guard lock(callbackMutex_);
  errorHandler_(id_, status, message.c_str(), errorUserData_);
}

uint32_t ContextImpl::nextLoadId() {
  uint32_t id = nextLoadId_.fetch_add(1) & driver::kLoadIdMask;
  if (id == 0) id = nextLoadId_.fetch_add(1) & driver::kLoadIdMask;  // 0 is not a load id
  return id;
}

void ContextImpl::unregisterDmaBuffer(int fd) {
  std::lock_guard lock(dmaMutex_);
  dmaBuffers_.erase(fd);
}

std::shared_ptr<DmaBuffer> ContextImpl::findDmaBuffer(int fd) const {
  std::lock_guard lock(dmaMutex_);
  auto it = dmaBuffers_.find(fd);
  return it == dmaBuffers_.end() ? nullptr : it->second.lock();
}

std::shared_ptr<DmaBufferImpl> ContextImpl::dmaBufferOn(int fd, const std::shared_ptr<const driver::DeviceNode>& node,
                                                        const std::string& what) {
  if (auto own = std::dynamic_pointer_cast<DmaBufferImpl>(findDmaBuffer(fd)); own && own->node() == node.get())
    return own;
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw Error(QS_INVAL, what + ": DMA handle " + std::to_string(fd) + " is not an open descriptor");
  const off_t position = std::max<off_t>(::lseek(fd, 0, SEEK_CUR), 0);  // a dma-buf has none
  std::lock_guard lock(dmaMutex_);
  for (auto it = imports_.begin(); it != imports_.end(); ++it) {
    if (it->node != node.get() || it->device != st.st_dev || it->inode != st.st_ino || it->position != position)
      continue;
    Import found = std::move(*it);
    imports_.erase(it);
    imports_.push_back(std::move(found));
    return imports_.back().buffer;
  }
  auto bo = driver::BufferObject::import(*node, fd);
  if (!bo)
    throw Error(QS_INVAL,
                what + ": DMA handle " + std::to_string(fd) +
                    " is neither a DMA buffer of this context nor a dma-buf the device imports: " + bo.message());
  auto buffer = std::make_shared<DmaBufferImpl>(node, std::move(*bo));
  if (imports_.size() >= kImportsKept) imports_.erase(imports_.begin());  // in-flight users hold theirs
  imports_.push_back({node.get(), st.st_dev, st.st_ino, position, buffer});
  return buffer;
}

}  // namespace qaic::rt
