#include "ContextImpl.hpp"

#include <sys/stat.h>

#include <cstdio>

#include "DmaBufferImpl.hpp"

#include "driver/DeviceProtocol.hpp"

namespace qaic::rt::engine {
namespace {
std::atomic<QCtxId> nextContextId{1};

const char* levelName(QLogLevel level) {
  switch (level) {
    case QL_DEBUG: return "DEBUG";
    case QL_INFO: return "INFO";
    case QL_WARN: return "WARN";
    case QL_ERROR: return "ERROR";
  }
  return "?";
}
}  // namespace

ContextImpl::ContextImpl(const QAicContextProperties& properties, driver::DeviceRoot root,
                         LogCallback logCallback, void* logUserData, ErrorHandler errorHandler,
                         void* errorUserData)
    : id_(nextContextId.fetch_add(1)),
      root_(std::move(root)),
      level_(properties.initialLogLevel),
      logCallback_(logCallback ? std::move(logCallback) : LogCallback(defaultLogger)),
      logUserData_(logUserData),
      errorHandler_(errorHandler ? std::move(errorHandler) : ErrorHandler(defaultErrorHandler)),
      errorUserData_(errorUserData) {}

void ContextImpl::openDevices(const std::vector<QID>& devices) {
  std::vector<QID> wanted = devices;
  if (wanted.empty()) {
    // Partitions are other processes' leases (or this one's, named explicitly), not devices.
    for (unsigned index : root_.listDevices())
      if (index < driver::kFirstPartitionId) wanted.push_back(index);
    if (wanted.empty())
      throw Error(QS_NODEV, "no accel device under " + (root_.path() / "dev/accel").string() +
                                " (is the device or qaic-emu running, is QAIC_ROOT right?)");
  }
  for (QID id : wanted) {
    if (nodes_.count(id)) continue;
    auto node = driver::DeviceNode::open(root_, id);
    if (!node)
      throw Error(node.error() == ENOENT ? QS_NODEV : QS_ERROR,
                  "device " + std::to_string(id) + ": " + node.message());
    nodes_.emplace(id, std::make_shared<const driver::DeviceNode>(std::move(node.value())));
    deviceIds_.push_back(id);
  }
  log(QL_INFO, "context " + std::to_string(id_) + ": " + std::to_string(deviceIds_.size()) +
                   " device(s) under " + root_.path().string());
}

std::shared_ptr<const driver::DeviceNode> ContextImpl::device(QID device) const {
  auto it = nodes_.find(device);
  if (it == nodes_.end())
    throw Error(QS_INVAL, "device " + std::to_string(device) + " is not part of context " +
                              std::to_string(id_));
  return it->second;
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

void ContextImpl::registerDmaBuffer(int fd, std::weak_ptr<DmaBuffer> buffer) {
  std::lock_guard lock(dmaMutex_);
  dmaBuffers_[fd] = std::move(buffer);
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

std::shared_ptr<DmaBufferImpl> ContextImpl::dmaBufferOn(int fd,
                                                       const std::shared_ptr<const driver::DeviceNode>& node,
                                                       const std::string& what) {
  if (auto own = std::dynamic_pointer_cast<DmaBufferImpl>(findDmaBuffer(fd)); own && own->node() == node.get())
    return own;
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw Error(QS_INVAL, what + ": DMA handle " + std::to_string(fd) + " is not an open descriptor");
  std::lock_guard lock(dmaMutex_);
  for (auto it = imports_.begin(); it != imports_.end(); ++it) {
    if (it->node != node.get() || it->device != st.st_dev || it->inode != st.st_ino) continue;
    Import found = std::move(*it);
    imports_.erase(it);
    imports_.push_back(std::move(found));
    return imports_.back().buffer;
  }
  auto bo = driver::BufferObject::import(*node, fd);
  if (!bo)
    throw Error(QS_INVAL, what + ": DMA handle " + std::to_string(fd) +
                              " is neither a DMA buffer of this context nor a dma-buf the device imports: " +
                              bo.message());
  auto buffer = std::make_shared<DmaBufferImpl>(node, std::move(*bo), static_cast<QID>(node->index()));
  if (imports_.size() >= kImportsKept) imports_.erase(imports_.begin());  // in-flight users hold theirs
  imports_.push_back({node.get(), st.st_dev, st.st_ino, buffer});
  return buffer;
}

}  // namespace qaic::rt::engine

namespace qaic::rt {

void defaultLogger(QLogLevel level, const char* message, void*) {
  std::fprintf(stderr, "[qaic] %s %s\n", engine::levelName(level), message);
}

void defaultErrorHandler(QCtxId contextId, QStatus status, const char* message, void*) {
  std::fprintf(stderr, "[qaic] context %llu: %s: %s\n", static_cast<unsigned long long>(contextId),
               statusName(status), message);
}

}  // namespace qaic::rt
