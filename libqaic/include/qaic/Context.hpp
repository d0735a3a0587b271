// SPDX-License-Identifier: Apache-2.0
// The runtime's root object (seed 001): the devices a client uses, its logging and its error
// handler. Everything else (InferenceSet, DMA buffers) is created against a Context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <qaic/Errors.hpp>
#include <qaic/QBuffer.hpp>
#include <qaic/Resources.hpp>

namespace qaic::rt {

class Partition;

using QID = uint32_t;     // a device index: $QAIC_ROOT/dev/accel/accel<QID>
using QCtxId = uint64_t;  // unique per Context in this process, passed to the error handler

enum QLogLevel : int { QL_DEBUG = 0, QL_INFO = 1, QL_WARN = 2, QL_ERROR = 3 };

using LogCallback = std::function<void(QLogLevel level, const char* message, void* userData)>;
// Called for critical errors that no API call can return (an inference that failed on the
// device or timed out after its retries, a device that went away).
using ErrorHandler = std::function<void(QCtxId contextId, QStatus status, const char* message, void* userData)>;

// Writes "[qaic] LEVEL message" to stderr.
void defaultLogger(QLogLevel level, const char* message, void* userData);
// Logs nothing itself beyond one stderr line; the error reaches the caller through the status of
// the API call or the inference handle as well.
void defaultErrorHandler(QCtxId contextId, QStatus status, const char* message, void* userData);

struct QAicContextProperties {
  QLogLevel initialLogLevel = QL_WARN;
  // Non-null: the context runs inside a partition with these resources that it asks qaicd for
  // (on the one device Factory's `devices` names, or any device when it is empty) and holds
  // until the context and everything created from it are gone. Read only during Factory.
  // Null (the default): whole devices, first come first served, qaicd or not.
  const ResourceRequest* partition = nullptr;
};

// Created only by Factory; the runtime's own implementation stands behind this interface.
class Context {
 public:
  // `devices` empty means every device found under $QAIC_ROOT (unset: the real /dev and /sys),
  // partitions (accel100 and up) excluded; a partition's id may be named explicitly.
  // Throws Error(QS_NODEV) naming the missing node, or when no device exists at all; with
  // properties->partition, whatever Partition::acquire throws (QS_NO_RESOURCES naming the
  // resource, QS_NODEV when qaicd is not running) and QS_INVAL for more than one device.
  static std::shared_ptr<Context> Factory(const QAicContextProperties* properties, const std::vector<QID>& devices,
                                          LogCallback logCallback = defaultLogger, void* logUserData = nullptr,
                                          ErrorHandler errorHandler = defaultErrorHandler,
                                          void* errorUserData = nullptr);
  virtual ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  virtual void setLogLevel(QLogLevel level) = 0;
  virtual QLogLevel getLogLevel() const = 0;
  virtual QCtxId getId() const = 0;
  virtual const std::vector<QID>& getDevices() const = 0;
  // The partition this context acquired through QAicContextProperties::partition, or null.
  virtual std::shared_ptr<const Partition> getPartition() const = 0;

  // A device buffer object of `size` bytes on `device`, mapped into this process. Pass its
  // qbuffer() (type DMA) to an InferenceHandle: inputs are read and outputs written in place.
  // Throws Error(QS_INVAL) for size 0 or a device not in this context, QS_NO_RESOURCES when the
  // device refuses the allocation.
  virtual std::shared_ptr<DmaBuffer> allocateDmaBuffer(QID device, std::size_t size) = 0;

 protected:
  Context() = default;
};

}  // namespace qaic::rt
