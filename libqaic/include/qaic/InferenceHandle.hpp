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

namespace engine {
class HandleImpl;
}

// Seed 002's GetPerformanceCounts entry: microseconds spent in one pipeline stage of the last
// completed inference.
struct PerfCounter {
  uint64_t realTimeUs = 0;
  uint32_t executionIndex = 0;  // the stage's position in the pipeline
};

// What the last completed inference moved: bytes the runtime copied on the host (converting the
// user's inputs into its staging buffers, the outputs out of them) and bytes the device read or
// wrote in the user's DMA buffers in place, with no copy on the host.
struct TransferCounts {
  uint64_t hostCopiedBytes = 0;
  uint64_t inPlaceBytes = 0;
};

class InferenceHandle {
 public:
  ~InferenceHandle();
  InferenceHandle(const InferenceHandle&) = delete;
  InferenceHandle& operator=(const InferenceHandle&) = delete;

  // All buffers, one per BufferMapping. Throws Error(QS_INVAL) for a wrong count, naming the
  // expected one, and Error(QS_WRONG_STATE) unless the handle is acquired and not submitted.
  void setBuffers(const std::vector<QBuffer>& buffers);
  void setInputBuffers(const std::vector<QBuffer>& inputs);
  void setOutputBuffers(const std::vector<QBuffer>& outputs);
  const std::vector<QBuffer>& getBuffers() const;
  std::vector<QBuffer> getInputBuffers() const;
  std::vector<QBuffer> getOutputBuffers() const;

  // Actual dims of a partial or specialized buffer (default: the mapping's full dims), by
  // mapping index. Validated at submit() against the mapping (see IoValidation.hpp).
  void setBufferDims(uint32_t bufferIndex, const std::vector<uint64_t>& dims);
  // Selective IO: leave this buffer out of the next submissions (allowed only where the mapping
  // permits dropping it); `skipped` false puts it back.
  void setBufferSkipped(uint32_t bufferIndex, bool skipped);
  // Dims of each output after completion (partial outputs report what the program produced).
  std::vector<uint64_t> getOutputDims(uint32_t bufferIndex) const;

  uint64_t getId() const;              // the requestId of the last submit()
  QStatus getStatus() const;           // outcome of the last completed inference
  std::string getErrorMessage() const; // empty on success
  // Stages of the last completed inference: "1. input preprocessing", "2. input transfer to a
  // device", "3. execution time", "4. output transfer from a device", "5. output postprocessing"
  // and "0. queue wait" (submit() until a pipeline thread took it).
  std::map<std::string, PerfCounter> getPerformanceCounts() const;
  // The bytes of the last completed inference that the host copied, and those used in place.
  TransferCounts getTransferCounts() const;

  engine::HandleImpl& impl() const { return *impl_; }
  explicit InferenceHandle(std::unique_ptr<engine::HandleImpl> impl);

 private:
  std::unique_ptr<engine::HandleImpl> impl_;
};

using shInferenceHandle = std::shared_ptr<InferenceHandle>;

}  // namespace qaic::rt
