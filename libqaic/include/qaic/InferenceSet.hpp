// SPDX-License-Identifier: Apache-2.0
// Submitting inferences (seed 001): numActivations copies of a program on a device, each with
// setSize InferenceHandles. The pipeline of one inference (seed 002) runs on the set's own
// threads: preprocess -> upload -> doorbell -> infer -> download -> postprocess.
//
// Flow: getAvailable -> handle->setBuffers -> submit -> getCompletedId / waitForCompletion (or a
// notify callback) -> putCompleted. Misuse throws Error (QS_WRONG_STATE, QS_WRONG_SET, ...);
// waits return QS_TIMEDOUT when their time runs out. Every method is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <qaic/Context.hpp>
#include <qaic/InferenceHandle.hpp>

namespace qaic::rt {

class Qpc;
class InferenceSetGroup;

struct ProgramProperties {
  // How long one inference may take on the device before it is retried; 0 means 5000 ms.
  uint32_t dataPathTimeoutMs = 5000;
  // Resubmissions after a data-path timeout before the inference fails with QS_TIMEDOUT.
  uint32_t submitNumRetries = 5;
  // Devices the activations are placed on, round robin (activation i on devMapping[i % n]);
  // empty: all on the `device` argument of Factory. Every entry must be a device of the Context.
  std::vector<QID> devMapping;
};

struct QueueProperties {
  // Pipeline threads per activation (pre/postprocess, upload); at least 1.
  uint32_t numThreadsPerQueue = 4;
};

struct InferenceSetProperties {
  ProgramProperties programProperties;
  QueueProperties queueProperties;
  std::shared_ptr<InferenceSetGroup> inferenceSetGroup;  // over-subscription, see its header
  std::string name;                                      // appears in log and error messages
  uint32_t id = 0;
};

// Called on a pipeline thread when a submitted inference completes (successfully or not: see
// handle->getStatus()). The handle is then Completed; call putCompleted when done with it.
using NotifyFn = std::function<void(const shInferenceHandle& handle, void* userData)>;

class InferenceSet {
 public:
  // Activates the program numActivations times (on `device`, or spread over devMapping).
  // Throws Error: QS_INVAL (setSize or numActivations 0, a bad property), QS_NODEV,
  // QS_NO_RESOURCES (not enough free NSPs: the message says how many are free),
  // QS_INCOMPATIBLE (a container the device rejects).
  static std::shared_ptr<InferenceSet> Factory(std::shared_ptr<Context> context, std::shared_ptr<Qpc> qpc, QID device,
                                               uint32_t setSize, uint32_t numActivations,
                                               const InferenceSetProperties* properties = nullptr);
  virtual ~InferenceSet();
  InferenceSet(const InferenceSet&) = delete;
  InferenceSet& operator=(const InferenceSet&) = delete;

  // Blocks until a handle is free; timeoutUs 0 waits until one is put back (or the set shuts
  // down: QS_CANCELED). QS_TIMEDOUT leaves `handle` empty.
  virtual QStatus getAvailable(shInferenceHandle& handle, uint64_t timeoutUs = 0) = 0;
  // getAvailable for a handle of one activation (0 .. getNumActivations() - 1), so that a sequence
  // of inferences (an LLM's prefill and decode steps) runs on the activation holding its retained
  // state; inferences submitted on one activation run in submission order. Throws Error(QS_INVAL)
  // for an activation the set does not have.
  virtual QStatus getAvailableOnActivation(uint32_t activation, shInferenceHandle& handle, uint64_t timeoutUs = 0) = 0;
  // The next inference submitted on `activation` starts from zeroed retained state (programs
  // compiled with -retained-state; docs/runtime.md). Throws Error(QS_INVAL) for an activation the
  // set does not have.
  virtual void resetRetainedState(uint32_t activation) = 0;
  // Non-blocking. Validates the handle's buffers first (IoValidation.hpp) and throws Error
  // (QS_BUFFER_SIZE, QS_BUFFER_DIMS, QS_INVAL naming the buffer; QS_WRONG_STATE; QS_WRONG_SET).
  virtual void submit(const shInferenceHandle& handle, uint64_t requestId) = 0;
  virtual void submit(const shInferenceHandle& handle, NotifyFn notifyFn, void* userData) = 0;
  // Waits for a submitted inference with this requestId to complete and returns its handle.
  // Returns the inference's status (handle set), or QS_TIMEDOUT with `handle` empty when the
  // wait ran out first. Throws Error(QS_INVAL) when no inference with that id is in flight.
  virtual QStatus getCompletedId(shInferenceHandle& handle, uint64_t requestId, uint64_t timeoutUs = 0) = 0;
  // Gives an acquired or completed handle back. Throws QS_WRONG_STATE (put twice, in flight).
  virtual void putCompleted(const shInferenceHandle& handle) = 0;
  // Waits for this handle's inference; returns its status, or QS_TIMEDOUT (wait ran out).
  // timeoutUs 0: until it completes (bounded by dataPathTimeoutMs x (submitNumRetries + 1)).
  virtual QStatus waitForCompletion(const shInferenceHandle& handle, uint64_t timeoutUs = 0) = 0;
  // Waits until nothing is in flight in the whole set.
  virtual QStatus waitForCompletion(uint64_t timeoutUs = 0) = 0;

  // A DMA buffer on this set's device (Context::allocateDmaBuffer).
  virtual std::shared_ptr<DmaBuffer> allocateDmaBuffer(std::size_t size) = 0;

  virtual const std::string& getName() const = 0;
  virtual uint32_t getId() const = 0;
  virtual uint32_t getNumActivations() const = 0;
  virtual uint32_t getSetSize() const = 0;

 protected:
  InferenceSet() = default;
};

}  // namespace qaic::rt
