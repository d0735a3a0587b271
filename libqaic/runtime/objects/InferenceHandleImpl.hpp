// SPDX-License-Identifier: Apache-2.0
// The state of one InferenceHandle: its life-cycle state, the user's buffers, dims and dropped
// buffers, the outcome and stage durations of its last inference, and its staging buffer
// objects on the device. `mutex` guards everything; the owning set takes its own lock first. The
// life-cycle fields (state, requestId, viaNotify, retrieved) change only under both locks, so the
// set reads them under its own.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <qaic/InferenceSet.hpp>

#include "driver/BufferObject.hpp"
#include "runtime/loading/ProgramLayout.hpp"
#include "runtime/objects/DmaBufferImpl.hpp"
#include "runtime/objects/HandleState.hpp"

namespace qaic::rt {

enum class Stage : uint8_t { QueueWait, Preprocess, Upload, Execute, Download, Postprocess, Count };
const char* stageName(Stage stage);

using Clock = std::chrono::steady_clock;
// One stage of one inference: wall-clock and this process's CPU time, and whether it ran.
struct StageTime {
  Clock::duration real{};
  Clock::duration cpu{};
  bool ran = false;
};
using StageDurations = std::array<StageTime, static_cast<std::size_t>(Stage::Count)>;
// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
Clock::duration threadCpuTime();
// What a stage's CPU time is read from: with `precise`, threadCpuTime(); else the wall clock, for
// the runtime's own non-blocking work on a small request, where the system call behind each
// CPU-time reading (1-3 us in a VM) would cost more than the stage itself.
inline Clock::duration stageCpuClock(bool precise) {
  return precise ? threadCpuTime() : Clock::now().time_since_epoch();
}
// Seed 002's performance-count map of one inference's stage durations.
std::map<std::string, PerfCounter> performanceCounts(const StageDurations& stages);

// A submission's place in an over-subscription group's queue (InferenceSetGroupImpl::tryAdmit).
struct AdmitTicket {
  bool waiting = false;  // counted in the group's waiters
  uint64_t arrival = 0;  // the group's switch count when it started waiting
  Clock::time_point deadline{};
};

class InferenceHandleImpl final : public InferenceHandle {
 public:
  // `owner` identifies the set that created the handle (never called through).
  InferenceHandleImpl(const void* owner, const ProgramLayout& layout, uint32_t index, uint32_t activation);

  // InferenceHandle
  void setBuffers(const std::vector<QBuffer>& buffers) override;
  void setInputBuffers(const std::vector<QBuffer>& inputs) override;
  void setOutputBuffers(const std::vector<QBuffer>& outputs) override;
  const std::vector<QBuffer>& getBuffers() const override { return buffers; }
  std::vector<QBuffer> getInputBuffers() const override { return buffersOf(true); }
  std::vector<QBuffer> getOutputBuffers() const override { return buffersOf(false); }
  void setBufferDims(uint32_t bufferIndex, const std::vector<uint64_t>& dims) override;
  void setBufferSkipped(uint32_t bufferIndex, bool skipped) override;
  std::vector<uint64_t> getOutputDims(uint32_t bufferIndex) const override;
  uint64_t getId() const override;
  uint32_t getActivationIndex() const override { return activation_; }
  QStatus getStatus() const override;
  std::string getErrorMessage() const override;
  std::map<std::string, PerfCounter> getPerformanceCounts() const override;
  TransferCounts getTransferCounts() const override;
  uint64_t getBetweenCardsBytes() const override;

  const void* owner() const { return owner_; }
  uint32_t index() const { return index_; }
  uint32_t activation() const { return activation_; }

  mutable std::mutex mutex;
  HandleStateMachine state;
  // Notified (under the set's lock) when this handle completes or the set shuts down; waited on
  // with the set's mutex by getCompletedId and waitForCompletion(handle).
  std::condition_variable completed;
  // Set when the inference in flight completes (with the state, under `mutex`), cleared when it
  // is submitted: what a spinning waiter reads without the locks.
  std::atomic<bool> concluded{false};

  // User side (Acquired only).
  std::vector<QBuffer> buffers;
  std::vector<std::optional<IoDims>> dims;
  std::vector<bool> skipped;

  // The inference in flight or last completed.
  uint64_t requestId = 0;
  bool viaNotify = false;
  bool retrieved = false;  // claimed by getCompletedId
  bool waitedFor = false;  // returned by waitForCompletion(handle): not discarded by the set-wide wait
  NotifyFn notifyFn;
  void* notifyUserData = nullptr;
  // How logs and the error handler name the request: "request <id>", or for one submitted with
  // a callback (it has no id) "callback request (user data 0x...)", what the callback receives.
  std::string requestLabel() const;
  std::vector<bool> present;  // the submitted IO set
  std::vector<IoDims> submittedDims;
  bool resetState = false;         // the submitted request zeroes the activation's retained state first
  std::vector<IoDims> outputDims;  // after completion
  QStatus status = QS_SUCCESS;
  std::string errorMessage;
  StageDurations stages{};
  TransferCounts transfers{};
  uint64_t betweenCardsBytes = 0;
  Clock::time_point submittedAt{};

  // Written only by the pipeline while the handle is Submitted; InferenceSetImpl::finished
  // publishes it into stages / outputDims under `mutex`.
  struct Work {
    StageDurations stages{};
    std::vector<IoDims> outputDims;
    Clock::time_point preprocessedAt{};
    std::vector<uint64_t> direct;  // zero copy: see RequestPlan::direct
    std::vector<uint64_t> directBytes;
    uint64_t hostCopiedBytes = 0;  // converted into and out of the staging buffers
    // The DMA buffer of each DMA QBuffer, resolved on this activation's device (an import for
    // another device's buffer or a foreign dma-buf), held until the next submission.
    std::vector<std::shared_ptr<DmaBufferImpl>> dma;
  } work;

  // Staging on the device; the BOs live as long as the set's device file.
  std::optional<driver::BufferObject> inputBo;
  std::optional<driver::BufferObject> outputBo;

 private:
  void setDirection(bool inputs, const std::vector<QBuffer>& buffers);
  std::vector<QBuffer> buffersOf(bool inputs) const;
  void checkIndex(uint32_t bufferIndex, const char* operation) const;

  const void* owner_;
  const ProgramLayout& layout_;
  uint32_t index_;
  uint32_t activation_;
};

}  // namespace qaic::rt
