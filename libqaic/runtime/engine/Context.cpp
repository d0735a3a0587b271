#include <qaic/Context.hpp>
#include <qaic/Partition.hpp>

#include <unistd.h>

#include "ContextImpl.hpp"
#include "DmaBufferImpl.hpp"

#include <drm.h>

namespace qaic::rt {

std::shared_ptr<Context> Context::Factory(const QAicContextProperties* properties,
                                          const std::vector<QID>& devices, LogCallback logCallback,
                                          void* logUserData, ErrorHandler errorHandler,
                                          void* errorUserData) {
  const QAicContextProperties defaults;
  const QAicContextProperties& props = properties ? *properties : defaults;
  auto impl = std::make_shared<engine::ContextImpl>(
      props, driver::DeviceRoot::fromEnvironment(), std::move(logCallback), logUserData,
      std::move(errorHandler), errorUserData);
  if (props.partition == nullptr) {
    impl->openDevices(devices);
  } else {
    if (devices.size() > 1)
      throw Error(QS_INVAL, "Context::Factory: a partition comes from one device, " +
                                std::to_string(devices.size()) + " were named");
    auto partition = Partition::acquire(
        *props.partition, devices.empty() ? std::nullopt : std::optional<QID>(devices[0]),
        ("context-" + std::to_string(::getpid()) + "-" + std::to_string(impl->id())).substr(0, 31));
    impl->holdPartition(partition);
    impl->openDevices({partition->id()});
  }
  return std::shared_ptr<Context>(new Context(std::move(impl)));
}

Context::Context(std::shared_ptr<engine::ContextImpl> impl) : impl_(std::move(impl)) {}
Context::~Context() = default;

void Context::setLogLevel(QLogLevel level) { impl_->setLogLevel(level); }
QLogLevel Context::getLogLevel() const { return impl_->logLevel(); }
QCtxId Context::getId() const { return impl_->id(); }
const std::vector<QID>& Context::getDevices() const { return impl_->devices(); }
std::shared_ptr<const Partition> Context::getPartition() const { return impl_->partition(); }

std::shared_ptr<DmaBuffer> Context::allocateDmaBuffer(QID device, std::size_t size) {
  if (size == 0) throw Error(QS_INVAL, "allocateDmaBuffer: size 0");
  auto node = impl_->device(device);
  auto bo = driver::BufferObject::create(*node, size);
  if (!bo)
    throw Error(bo.error() == ENOMEM || bo.error() == ENOSPC ? QS_NO_RESOURCES : QS_ERROR,
                "allocateDmaBuffer(" + std::to_string(size) + " bytes) on device " +
                    std::to_string(device) + ": " + bo.message());
  auto exported = node->primeHandleToFd(bo->handle(), DRM_CLOEXEC | DRM_RDWR);
  if (!exported)
    throw Error(QS_ERROR, "allocateDmaBuffer(" + std::to_string(size) + " bytes) on device " +
                              std::to_string(device) + ": " + exported.message());
  auto buffer = std::make_shared<engine::DmaBufferImpl>(node, std::move(bo.value()),
                                                        std::move(exported.value()), impl_, device);
  impl_->registerDmaBuffer(buffer->fd(), buffer);
  return buffer;
}

}  // namespace qaic::rt
