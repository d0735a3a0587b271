// SPDX-License-Identifier: Apache-2.0
// One execution object of an InferenceSet (seed 001): the buffers of one inference, the id it was
// submitted with, its outcome and its per-stage durations. Created only by InferenceSet; a user
// obtains one with getAvailable() and gives it back with putCompleted().
//
// Buffers are indexed like the program's BufferMappings (IO-descriptor order, inputs and outputs
// together); setInputBuffers / setOutputBuffers take only one direction, in mapping order.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <qaic/Errors.hpp>
#include <qaic/QBuffer.hpp>

namespace qaic::rt {

// Seed 002's GetPerformanceCounts entry (InferenceEngineProfileInfo): one pipeline stage of the
// last completed inference, in floating-point microseconds.
struct PerfCounter {
  enum Status : uint32_t {
    NOT_RUN = 0,  // the inference ended before this stage, or skipped it (a request small
                  // enough to run on the submitting thread has no queue wait)
    EXECUTED = 1,
  };
  double realTimeUs = 0;        // wall-clock time of the stage
  double cpuUs = 0;             // CPU time this process's thread spent in it (0 while it only waits:
                                // queue wait, execution on the device; docs/runtime.md)
  uint32_t executionIndex = 0;  // 0 for every stage, as seed 002 gives it; the names carry the order
  Status status = NOT_RUN;
};

// What the last completed inference moved: bytes the runtime copied on the host (converting the
// user's inputs into its staging buffers, the outputs out of them) and bytes the device read or
// wrote in the user's DMA buffers in place, with no copy on the host. (Its layout is part of
// libqaic.so.1's ABI: it is returned by value, so it never grows; later figures get accessors.)
struct TransferCounts {
  uint64_t hostCopiedBytes = 0;
  uint64_t inPlaceBytes = 0;
};

class InferenceHandle {
 public:
  virtual ~InferenceHandle();
  InferenceHandle(const InferenceHandle&) = delete;
  InferenceHandle& operator=(const InferenceHandle&) = delete;

  // All buffers, one per BufferMapping. Throws Error(QS_INVAL) for a wrong count, naming the
  // expected one, and Error(QS_WRONG_STATE) unless the handle is acquired and not submitted.
  virtual void setBuffers(const std::vector<QBuffer>& buffers) = 0;
  virtual void setInputBuffers(const std::vector<QBuffer>& inputs) = 0;
  virtual void setOutputBuffers(const std::vector<QBuffer>& outputs) = 0;
  virtual const std::vector<QBuffer>& getBuffers() const = 0;
  virtual std::vector<QBuffer> getInputBuffers() const = 0;
  virtual std::vector<QBuffer> getOutputBuffers() const = 0;

  // Actual dims of a partial or specialized buffer (default: the mapping's full dims), by
  // mapping index. Validated at submit() against the mapping (see IoValidation.hpp).
  virtual void setBufferDims(uint32_t bufferIndex, const std::vector<uint64_t>& dims) = 0;
  // Selective IO: leave this buffer out of the next submissions (allowed only where the mapping
  // permits dropping it); `skipped` false puts it back.
  virtual void setBufferSkipped(uint32_t bufferIndex, bool skipped) = 0;
  // Dims of each output after completion (partial outputs report what the program produced).
  virtual std::vector<uint64_t> getOutputDims(uint32_t bufferIndex) const = 0;

  virtual uint64_t getId() const = 0;               // the requestId of the last submit()
  virtual uint32_t getActivationIndex() const = 0;  // the activation it runs on (index / setSize)
  virtual QStatus getStatus() const = 0;            // outcome of the last completed inference
  virtual std::string getErrorMessage() const = 0;  // empty on success
  // Stages of the last completed inference: "1. input preprocessing", "2. input transfer to a
  // device" (until the program starts on the device, inputs transferred), "3. execution time" (the
  // program's run on the device), "4. output transfer from a device" (until the outputs and the
  // response are back), "5. output postprocessing", and, an addition to seed 002, "0. queue wait"
  // (submit() until a pipeline thread took it). docs/runtime.md says how each is measured.
  virtual std::map<std::string, PerfCounter> getPerformanceCounts() const = 0;
  // The bytes of the last completed inference that the host copied, and those used in place.
  virtual TransferCounts getTransferCounts() const = 0;
  // The bytes the parts of a multi-device program's last completed inference sent each other
  // card to card, which never pass through the host (0 for a single-device program, and for an
  // inference that failed). Declared last: virtuals are only ever appended, so binaries built
  // against an earlier header keep their vtable slots.
  virtual uint64_t getBetweenCardsBytes() const = 0;

 protected:
  InferenceHandle() = default;
};

using shInferenceHandle = std::shared_ptr<InferenceHandle>;

}  // namespace qaic::rt
