#include <qaic/Context.hpp>

#include "ContextImpl.hpp"
#include "DmaBufferImpl.hpp"

namespace qaic::rt {

std::shared_ptr<Context> Context::Factory(const QAicContextProperties* properties,
                                          const std::vector<QID>& devices, LogCallback logCallback,
                                          void* logUserData, ErrorHandler errorHandler,
                                          void* errorUserData) {
  const QAicContextProperties defaults;
  auto impl = std::make_shared<engine::ContextImpl>(
      properties ? *properties : defaults, driver::DeviceRoot::fromEnvironment(),
      std::move(logCallback), logUserData, std::move(errorHandler), errorUserData);
  impl->openDevices(devices);
  return std::shared_ptr<Context>(new Context(std::move(impl)));
}

Context::Context(std::shared_ptr<engine::ContextImpl> impl) : impl_(std::move(impl)) {}
Context::~Context() = default;

void Context::setLogLevel(QLogLevel level) { impl_->setLogLevel(level); }
QLogLevel Context::getLogLevel() const { return impl_->logLevel(); }
QCtxId Context::getId() const { return impl_->id(); }
const std::vector<QID>& Context::getDevices() const { return impl_->devices(); }

std::shared_ptr<DmaBuffer> Context::allocateDmaBuffer(QID device, std::size_t size) {
  if (size == 0) throw Error(QS_INVAL, "allocateDmaBuffer: size 0");
  auto node = impl_->device(device);
  auto bo = driver::BufferObject::create(*node, size);
  if (!bo)
    throw Error(bo.error() == ENOMEM || bo.error() == ENOSPC ? QS_NO_RESOURCES : QS_ERROR,
                "allocateDmaBuffer(" + std::to_string(size) + " bytes) on device " +
                    std::to_string(device) + ": " + bo.message());
  auto buffer = std::make_shared<engine::DmaBufferImpl>(node, std::move(bo.value()), impl_, device);
  impl_->registerDmaBuffer(buffer->fd(), buffer);
  return buffer;
}

}  // namespace qaic::rt
