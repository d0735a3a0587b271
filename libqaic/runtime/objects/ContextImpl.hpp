// SPDX-License-Identifier: Apache-2.0
// What a Context owns: one open device node per device (every activation, buffer object and
// DMA buffer of this context lives in that open file), the log level and the two callbacks.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <qaic/Context.hpp>

#include "driver/DeviceNode.hpp"
#include "driver/DeviceRoot.hpp"
#include "runtime/datapath/WorkerPool.hpp"

namespace qaic::rt {

class DmaBufferImpl;

class ContextImpl final : public Context, public std::enable_shared_from_this<ContextImpl> {
 public:
  ContextImpl(const QAicContextProperties& properties, driver::DeviceRoot root, LogCallback logCallback,
              void* logUserData, ErrorHandler errorHandler, void* errorUserData);

  // The implementation behind `context`; throws Error(QS_INVAL) naming `operation` for a null
  // context or one that Context::Factory did not make.
  static std::shared_ptr<ContextImpl> of(const std::shared_ptr<Context>& context, const char* operation);

  // Context
  void setLogLevel(QLogLevel level) override { level_.store(level); }
  QLogLevel getLogLevel() const override { return level_.load(); }
  QCtxId getId() const override { return id_; }
  const std::vector<QID>& getDevices() const override { return deviceIds_; }
  std::shared_ptr<const Partition> getPartition() const override { return partition_; }
  std::shared_ptr<DmaBuffer> allocateDmaBuffer(QID device, std::size_t size) override;

  // Opens every device (all found under the root when `devices` is empty). Throws QS_NODEV.
  void openDevices(const std::vector<QID>& devices);
  // Whether Factory's caller named the devices (a multi-device program's parts then go on them).
  bool namedDevices() const { return namedDevices_; }
  // The open node of `device`; throws Error(QS_INVAL) when it is not part of this context.
  std::shared_ptr<const driver::DeviceNode> device(QID device) const;
  const driver::DeviceRoot& root() const { return root_; }
  // The partition this context runs in and keeps alive (QAicContextProperties::partition).
  void holdPartition(std::shared_ptr<const Partition> partition) { partition_ = std::move(partition); }

  void log(QLogLevel level, const std::string& message) const;
  // A critical error: logged at QL_ERROR and given to the error handler.
  void reportError(QStatus status, const std::string& message) const;

  // Load ids (DeviceProtocol.hpp section 6) are unique per open file, hence per context.
  uint32_t nextLoadId();

  // The threads every pipeline of this context runs its work on.
  WorkerPool& workers() { return workers_; }

  // DMA buffers by export descriptor, so a QBuffer's handle can be resolved and checked.
  void unregisterDmaBuffer(int fd);
  std::shared_ptr<DmaBuffer> findDmaBuffer(int fd) const;
  // The DMA buffer a QBuffer's descriptor stands for on `node` (a set's device): this context's
  // buffer when it is on that node, else the descriptor imported there (PRIME), which reaches
  // the same pages without a copy: a buffer of this context on another device, another
  // device's or process's dma-buf, a memfd. The last kImportsKept imports are kept for the next
  // inferences. Throws Error(QS_INVAL) naming `what` when the descriptor cannot be imported.
  std::shared_ptr<DmaBufferImpl> dmaBufferOn(int fd, const std::shared_ptr<const driver::DeviceNode>& node,
                                             const std::string& what);
  static constexpr std::size_t kImportsKept = 16;

 private:
  // First, so it is released last: after every node opened in it is closed.
  std::shared_ptr<const Partition> partition_;
  QCtxId id_;
  driver::DeviceRoot root_;
  std::atomic<QLogLevel> level_;
  LogCallback logCallback_;
  void* logUserData_;
  ErrorHandler errorHandler_;
  void* errorUserData_;
  std::vector<QID> deviceIds_;
  bool namedDevices_ = false;
  std::map<QID, std::shared_ptr<const driver::DeviceNode>> nodes_;
  std::atomic<uint32_t> nextLoadId_{1};
  mutable std::mutex dmaMutex_;
  std::map<int, std::weak_ptr<DmaBuffer>> dmaBuffers_;
  // Imports, most recently used last: the node they were imported on, the file's identity.
  struct Import {
    const driver::DeviceNode* node;
    dev_t device;
    ino_t inode;
    off_t position;  // an emulated device's exports share one file, each at its BO's offset
    std::shared_ptr<DmaBufferImpl> buffer;
  };
  std::vector<Import> imports_;
  mutable std::mutex callbackMutex_;     // callbacks need not be reentrant
  WorkerPool workers_{"qaic-pipeline"};  // idle (no thread) until a pipeline has work
};

}  // namespace qaic::rt
