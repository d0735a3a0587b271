// SPDX-License-Identifier: Apache-2.0
#include "RunLoop.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include <qaic/IoValidation.hpp>

#include "OutputCheck.hpp"

namespace qaic::runner {
namespace {

using namespace qaic::rt;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kAvailablePollUs = 200'000;  // lets the loop notice a failure while waiting

// An output buffer starting on a 64-byte cache line: the runtime converts the device's output
// formats into it and writes whole lines into a buffer that starts on one. Zero-filled.
class OutputBuffer {
 public:
  void resize(std::size_t bytes) {
    storage_.assign(bytes + kLine - 1, 0);
    offset_ = (kLine - reinterpret_cast<uintptr_t>(storage_.data()) % kLine) % kLine;
    size_ = bytes;
  }
  uint8_t* data() { return storage_.data() + offset_; }
  const uint8_t* data() const { return storage_.data() + offset_; }
  std::size_t size() const { return size_; }

 private:
  static constexpr std::size_t kLine = 64;
  std::vector<uint8_t> storage_;
  std::size_t offset_ = 0;
  std::size_t size_ = 0;
};

// The memory and bookkeeping of one inference handle, reused for every IO set it runs.
struct Slot {
  std::vector<OutputBuffer> outputStorage;  // per network buffer (outputs only)
  PreparedSet set;
  uint64_t iteration = 0;
  InferenceSet* owner = nullptr;  // the set the handle belongs to
  Clock::time_point prepared{};   // before its inputs were prepared
  Clock::time_point submitted{};  // just before submit()
};

struct RunState {
  const v2::BufferMappings& mappings;
  std::vector<BufferShapeRules> rules;  // per mapping: element size (one derivation, libqaic's)
  const RunnerOptions& options;
  FileCache& cache;
  const OutputWriter* writer;
  std::atomic<uint64_t>& completed;
  std::mutex mutex;  // guards slots, result
  std::unordered_map<const InferenceHandle*, std::unique_ptr<Slot>> slots;
  RunResult result;
  std::atomic<bool> stop{false};
  Clock::time_point lastCompletion{};
  // The runtime's waitForCompletion covers the inferences, not the notify callbacks still
  // running on its threads; the loop's state must outlive every callback.
  std::condition_variable callbacksDone;
  uint64_t callbacksFinished = 0;
};

bool isInput(const v2::BufferMapping& m) { return m.ioType == BUFFER_IO_TYPE_INPUT; }

std::vector<uint64_t> toUnsigned(const std::vector<int64_t>& dims) { return {dims.begin(), dims.end()}; }

void checkOutputs(RunState& state, const InferenceHandle& handle, const Slot& slot) {
  for (std::size_t b = 0; b < state.mappings.size(); ++b) {
    const std::string& path = slot.set.expectedPaths[b];
    if (path.empty() || !slot.set.present[b]) continue;
    const auto& mapping = state.mappings[b];
    const std::size_t actualBytes = dimsProduct(handle.getOutputDims(static_cast<uint32_t>(b))) *
                                    state.rules[b].elementSize;
    FileBytes expected = state.cache.load(path);
    std::string difference;
    if (actualBytes != expected->size()) {
      difference = "output has " + std::to_string(actualBytes) + " bytes, '" + path + "' has " +
                   std::to_string(expected->size());
    } else if (auto m = compareOutput(mapping.dataType, *expected,
                                      std::span(slot.outputStorage[b].data(), actualBytes))) {
      difference = "first difference at index " + std::to_string(m->index) + ": expected " + m->expected + ", got " +
                   m->actual;
    }
    if (difference.empty()) continue;
    std::lock_guard lock(state.mutex);
    ++state.result.mismatches;
    if (!state.result.mismatch)
      state.result.mismatch = "IO set " + std::to_string(slot.set.setIndex) + ", buffer '" + mapping.bufferName +
                              "' (iteration " + std::to_string(slot.iteration) + "): " + difference;
  }
}

void writeOutputs(RunState& state, const InferenceHandle& handle, const Slot& slot) {
  const auto& o = state.options;
  if (!state.writer || slot.iteration < o.writeOutputStartIter ||
      slot.iteration >= o.writeOutputStartIter + o.writeOutputNumSamples)
    return;
  for (std::size_t b = 0; b < state.mappings.size(); ++b) {
    if (isInput(state.mappings[b]) || !slot.set.present[b]) continue;  // dropped outputs are not written
    const std::size_t bytes = dimsProduct(handle.getOutputDims(static_cast<uint32_t>(b))) * state.rules[b].elementSize;
    try {
      state.writer->write(state.mappings[b].bufferName, slot.iteration, std::span(slot.outputStorage[b].data(), bytes));
    } catch (const OutputWriteError& e) {
      std::lock_guard lock(state.mutex);
      if (!state.result.writeError) state.result.writeError = e.what();
      state.stop = true;
    }
  }
}

uint64_t microsecondsBetween(Clock::time_point from, Clock::time_point to) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(to - from).count());
}

// The runtime's stage names (InferenceHandle::getPerformanceCounts) in the vendor's columns.
LatencySample latencySample(const InferenceHandle& handle, const Slot& slot, Clock::time_point called,
                            Clock::time_point done) {
  LatencySample sample;
  sample.sample = slot.iteration;
  sample.hostRoundTrip = microsecondsBetween(slot.submitted, called);
  sample.totalRoundtripTime = microsecondsBetween(slot.prepared, done);
  for (const auto& [stage, counter] : handle.getPerformanceCounts()) {
    uint64_t* column = nullptr;
    if (stage == "0. queue wait")
      column = &sample.enqTime;
    else if (stage == "1. input preprocessing")
      column = &sample.preProcTime;
    else if (stage == "2. input transfer to a device")
      column = &sample.submitTime;
    else if (stage == "3. execution time")
      column = &sample.execToComplete;
    else if (stage == "4. output transfer from a device")
      column = &sample.exectoVc;
    else if (stage == "5. output postprocessing")
      column = &sample.postProc;
    if (column) *column = static_cast<uint64_t>(std::llround(counter.realTimeUs));
  }
  sample.execTotal = sample.execToComplete + sample.exectoVc;
  return sample;
}

void onComplete(const shInferenceHandle& handle, void* userData) {
  const auto called = Clock::now();
  auto& state = *static_cast<RunState*>(userData);
  Slot* slot;
  {
    std::lock_guard lock(state.mutex);
    slot = state.slots.at(handle.get()).get();
  }
  const QStatus status = handle->getStatus();
  if (status != QS_SUCCESS) {
    std::lock_guard lock(state.mutex);
    if (state.result.failure == QS_SUCCESS) {
      state.result.failure = status;
      state.result.failureMessage = handle->getErrorMessage();
    }
    state.stop = true;
  } else {
    if (state.options.checkOutput) checkOutputs(state, *handle, *slot);
    writeOutputs(state, *handle, *slot);
    const auto done = Clock::now();
    std::lock_guard lock(state.mutex);
    ++state.result.completed;
    state.lastCompletion = done;
    if (state.options.latencyProfiling && isProfiledIteration(state.options, slot->iteration)) {
      for (const auto& [stage, counter] : handle->getPerformanceCounts()) {
        auto& mean = state.result.stages[stage];
        mean.totalUs += counter.realTimeUs;
        ++mean.samples;
      }
      state.result.samples.push_back(latencySample(*handle, *slot, called, done));
    }
  }
  slot->set = PreparedSet{};  // release input bytes before the handle is reused
  state.completed.fetch_add(1);
  slot->owner->putCompleted(handle);
  std::lock_guard lock(state.mutex);
  ++state.callbacksFinished;
  state.callbacksDone.notify_all();  // the last touch of `state` by this callback
}

Slot& slotFor(RunState& state, const InferenceHandle* handle) {
  std::lock_guard lock(state.mutex);
  auto& slot = state.slots[handle];
  if (!slot) {
    slot = std::make_unique<Slot>();
    slot->outputStorage.resize(state.mappings.size());
    for (std::size_t b = 0; b < state.mappings.size(); ++b)
      if (!isInput(state.mappings[b])) slot->outputStorage[b].resize(state.mappings[b].size);
  }
  return *slot;
}

void bindBuffers(RunState& state, InferenceHandle& handle, Slot& slot) {
  std::vector<QBuffer> buffers(state.mappings.size());
  for (std::size_t b = 0; b < state.mappings.size(); ++b) {
    QBuffer& q = buffers[b];
    q.type = QBUFFER_TYPE_HEAP;
    if (isInput(state.mappings[b])) {
      if (const FileBytes& bytes = slot.set.inputs[b]) {
        // The runtime only reads input buffers.
        q.buf = const_cast<uint8_t*>(bytes->data());
        q.size = bytes->size();
      }
    } else {
      q.buf = slot.outputStorage[b].data();
      q.size = slot.outputStorage[b].size();
    }
  }
  handle.setBuffers(buffers);
  for (std::size_t b = 0; b < state.mappings.size(); ++b) {
    const auto index = static_cast<uint32_t>(b);
    const bool present = slot.set.present[b];
    const auto& mapping = state.mappings[b];
    if (mapping.isPartialBufferAllowed && mapping.skipPartialHeader && mapping.allowSkip)
      handle.setBufferSkipped(index, !present);
    if (present)
      handle.setBufferDims(index, slot.set.dims[b] ? *slot.set.dims[b] : toUnsigned(mapping.ioShapes.defaultDims));
  }
}

// --dump-input-buffers: the inputs of the inferences --write-output-dir writes outputs for.
void dumpInputs(RunState& state, const Slot& slot) {
  const auto& o = state.options;
  if (!o.dumpInputBuffers || !state.writer || slot.iteration < o.writeOutputStartIter ||
      slot.iteration >= o.writeOutputStartIter + o.writeOutputNumSamples)
    return;
  for (std::size_t b = 0; b < state.mappings.size(); ++b) {
    const FileBytes& bytes = slot.set.inputs[b];
    if (!isInput(state.mappings[b]) || !slot.set.present[b] || !bytes) continue;
    try {
      state.writer->write(state.mappings[b].bufferName, slot.iteration, std::span(bytes->data(), bytes->size()));
    } catch (const OutputWriteError& e) {
      std::lock_guard lock(state.mutex);
      if (!state.result.writeError) state.result.writeError = e.what();
      state.stop = true;
    }
  }
}

}  // namespace

RunResult runInferences(const std::vector<InferenceSet*>& sets, const v2::BufferMappings& mappings, InputSource& source,
                        const RunnerOptions& options, FileCache& cache, const OutputWriter* writer,
                        std::atomic<uint64_t>& completedCounter) {
  RunState state{mappings, shapeRules(mappings), options, cache, writer, completedCounter, {}, {}, {}, {}, {}, {}, 0};
  const auto start = Clock::now();
  const auto deadline = options.timeSeconds ? start + std::chrono::duration_cast<Clock::duration>(
                                                          std::chrono::duration<double>(*options.timeSeconds))
                                            : Clock::time_point::max();
  for (uint64_t iteration = 0; !state.stop; ++iteration) {
    if (options.timeSeconds ? Clock::now() >= deadline : iteration >= options.numIterations) break;
    InferenceSet& set = *sets[iteration % sets.size()];
    shInferenceHandle handle;
    QStatus status = QS_TIMEDOUT;
    while (!state.stop && status == QS_TIMEDOUT) status = set.getAvailable(handle, kAvailablePollUs);
    if (state.stop) break;
    if (status != QS_SUCCESS) {
      std::lock_guard lock(state.mutex);
      state.result.failure = status;
      state.result.failureMessage = "no inference handle became available (" + std::string(statusName(status)) + ")";
      break;
    }
    Slot& slot = slotFor(state, handle.get());
    slot.prepared = Clock::now();
    slot.set = source.prepare(iteration % source.setCount());
    slot.iteration = iteration;
    slot.owner = &set;
    dumpInputs(state, slot);
    bindBuffers(state, *handle, slot);
    slot.submitted = Clock::now();
    set.submit(handle, onComplete, &state);
    ++state.result.submitted;
  }
  for (InferenceSet* set : sets) set->waitForCompletion(0);
  std::unique_lock lock(state.mutex);
  // Every submitted inference has completed, so its callback has started; bounded regardless.
  const auto callbackDeadline = Clock::now() + std::chrono::seconds(60);
  while (state.callbacksFinished < state.result.submitted) {
    if (state.callbacksDone.wait_until(lock, callbackDeadline) == std::cv_status::timeout) {
      std::fprintf(stderr, "qaic-runner: error: %llu completion callback(s) did not finish within 60 s\n",
                   static_cast<unsigned long long>(state.result.submitted - state.callbacksFinished));
      std::abort();  // their state is on this stack: returning would let them touch freed memory
    }
  }
  RunResult result = state.result;
  std::sort(result.samples.begin(), result.samples.end(),
            [](const LatencySample& a, const LatencySample& b) { return a.sample < b.sample; });
  const auto end = state.lastCompletion == Clock::time_point{} ? Clock::now() : state.lastCompletion;
  result.durationUs = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(end - start).count());
  return result;
}

}  // namespace qaic::runner
