// SPDX-License-Identifier: Apache-2.0
// libqaic/runtime/front: the public API's own code, a file for each class or function of
// <qaic/...> (Context, InferenceSet, InferenceSetGroup, ProfilingHandle, DmaBuffer, Qpc, QpcFile,
// Partition, resourcesFor, Util, Errors, IoValidation): the Factory functions that build the
// runtime's objects, and what a public class does itself (Qpc, QpcFile, Partition, Util, the IO
// check submit() runs, which applications may run too). It has no headers: libqaic.so's users,
// and the rest of the runtime where it needs a public function (the IO check, statusName), reach
// it through <qaic/...> alone. It depends on objects/ (the Impl classes its Factory functions
// build), loading/ (the container behind a Qpc), driver/, container/ and the qaicd client. With
// no header of its own, the folder's paragraph is here, where every use of the runtime begins
// (Context::Factory).

#include <qaic/Context.hpp>
#include <qaic/Partition.hpp>

#include <unistd.h>

#include <cstdio>

#include "runtime/objects/ContextImpl.hpp"

namespace qaic::rt {

namespace {

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

std::shared_ptr<Context> Context::Factory(const QAicContextProperties* properties, const std::vector<QID>& devices,
                                          LogCallback logCallback, void* logUserData, ErrorHandler errorHandler,
                                          void* errorUserData) {
  const QAicContextProperties defaults;
  const QAicContextProperties& props = properties ? *properties : defaults;
  auto context = std::make_shared<ContextImpl>(props, driver::DeviceRoot::fromEnvironment(), std::move(logCallback),
                                               logUserData, std::move(errorHandler), errorUserData);
  if (props.partition == nullptr) {
    context->openDevices(devices);
  } else {
    if (devices.size() > 1)
      throw Error(QS_INVAL, "Context::Factory: a partition comes from one device, " + std::to_string(devices.size()) +
                                " were named");
    auto partition = Partition::acquire(
        *props.partition, devices.empty() ? std::nullopt : std::optional<QID>(devices[0]),
        ("context-" + std::to_string(::getpid()) + "-" + std::to_string(context->getId())).substr(0, 31));
    context->holdPartition(partition);
    context->openDevices({partition->id()});
  }
  return context;
}

Context::~Context() = default;

void defaultLogger(QLogLevel level, const char* message, void*) {
  std::fprintf(stderr, "[qaic] %s %s\n", levelName(level), message);
}

void defaultErrorHandler(QCtxId contextId, QStatus status, const char* message, void*) {
  std::fprintf(stderr, "[qaic] context %llu: %s: %s\n", static_cast<unsigned long long>(contextId), statusName(status),
               message);
}

}  // namespace qaic::rt
