// SPDX-License-Identifier: Apache-2.0
#include "runtime/objects/InferenceHandleImpl.hpp"

#include <time.h>

#include <cstdio>

namespace qaic::rt {

InferenceHandle::~InferenceHandle() = default;

std::string InferenceHandleImpl::requestLabel() const {
  if (!viaNotify) return "request " + std::to_string(requestId);
  char pointer[2 + 2 * sizeof(void*) + 1];
  std::snprintf(pointer, sizeof pointer, "%p", notifyUserData);
  return std::string("callback request (user data ") + pointer + ")";
}

const char* stageName(Stage stage) {
  switch (stage) {
    case Stage::QueueWait: return "0. queue wait";
    case Stage::Preprocess: return "1. input preprocessing";
    case Stage::Upload: return "2. input transfer to a device";
    case Stage::Execute: return "3. execution time";
    case Stage::Download: return "4. output transfer from a device";
    case Stage::Postprocess: return "5. output postprocessing";
    case Stage::Count: break;
  }
  return "?";
}

std::map<std::string, PerfCounter> performanceCounts(const StageDurations& stages) {
  using Microseconds = std::chrono::duration<double, std::micro>;
  std::map<std::string, PerfCounter> counters;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    PerfCounter counter;
    if (stages[s].ran) {
      counter.realTimeUs = std::chrono::duration_cast<Microseconds>(stages[s].real).count();
      counter.cpuUs = std::chrono::duration_cast<Microseconds>(stages[s].cpu).count();
      counter.status = PerfCounter::EXECUTED;
    }
    counters[stageName(static_cast<Stage>(s))] = counter;
  }
  return counters;
}

Clock::duration threadCpuTime() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(now.tv_sec) +
                                                     std::chrono::nanoseconds(now.tv_nsec));
}

InferenceHandleImpl::InferenceHandleImpl(const void* owner, const ProgramLayout& layout, uint32_t index,
                                         uint32_t activation)
    : buffers(layout.buffers.size()),
      dims(layout.buffers.size()),
      skipped(layout.buffers.size(), false),
      owner_(owner),
      layout_(layout),
      index_(index),
      activation_(activation) {}

void InferenceHandleImpl::checkIndex(uint32_t bufferIndex, const char* operation) const {
  if (bufferIndex >= layout_.buffers.size())
    throw Error(QS_INVAL, std::string(operation) + ": buffer index " + std::to_string(bufferIndex) +
                              " (the program has " + std::to_string(layout_.buffers.size()) + " buffers)");
}

void InferenceHandleImpl::setBuffers(const std::vector<QBuffer>& all) {
  std::lock_guard lock(mutex);
  state.requireAcquired("setBuffers");
  if (all.size() != layout_.buffers.size())
    throw Error(QS_INVAL, "setBuffers: " + std::to_string(all.size()) + " buffers given, the program has " +
                              std::to_string(layout_.buffers.size()));
  buffers = all;
}

void InferenceHandleImpl::setInputBuffers(const std::vector<QBuffer>& inputs) { setDirection(true, inputs); }
void InferenceHandleImpl::setOutputBuffers(const std::vector<QBuffer>& outputs) { setDirection(false, outputs); }

void InferenceHandleImpl::setDirection(bool inputs, const std::vector<QBuffer>& given) {
  std::lock_guard lock(mutex);
  const char* operation = inputs ? "setInputBuffers" : "setOutputBuffers";
  state.requireAcquired(operation);
  const std::size_t expected = inputs ? layout_.inputCount() : layout_.outputCount();
  if (given.size() != expected)
    throw Error(QS_INVAL, std::string(operation) + ": " + std::to_string(given.size()) +
                              " buffers given, the program has " + std::to_string(expected));
  std::size_t next = 0;
  for (std::size_t i = 0; i < layout_.buffers.size(); ++i)
    if (layout_.buffers[i].isInput == inputs) buffers[i] = given[next++];
}

std::vector<QBuffer> InferenceHandleImpl::buffersOf(bool inputs) const {
  std::lock_guard lock(mutex);
  std::vector<QBuffer> out;
  for (std::size_t i = 0; i < layout_.buffers.size(); ++i)
    if (layout_.buffers[i].isInput == inputs) out.push_back(buffers[i]);
  return out;
}

void InferenceHandleImpl::setBufferDims(uint32_t bufferIndex, const std::vector<uint64_t>& newDims) {
  std::lock_guard lock(mutex);
  state.requireAcquired("setBufferDims");
  checkIndex(bufferIndex, "setBufferDims");
  dims[bufferIndex] = newDims;
}

void InferenceHandleImpl::setBufferSkipped(uint32_t bufferIndex, bool skip) {
  std::lock_guard lock(mutex);
  state.requireAcquired("setBufferSkipped");
  checkIndex(bufferIndex, "setBufferSkipped");
  skipped[bufferIndex] = skip;
}

std::vector<uint64_t> InferenceHandleImpl::getOutputDims(uint32_t bufferIndex) const {
  std::lock_guard lock(mutex);
  if (bufferIndex >= outputDims.size()) return {};
  return outputDims[bufferIndex];
}

uint64_t InferenceHandleImpl::getId() const {
  std::lock_guard lock(mutex);
  return requestId;
}

QStatus InferenceHandleImpl::getStatus() const {
  std::lock_guard lock(mutex);
  return status;
}

std::string InferenceHandleImpl::getErrorMessage() const {
  std::lock_guard lock(mutex);
  return errorMessage;
}

std::map<std::string, PerfCounter> InferenceHandleImpl::getPerformanceCounts() const {
  std::lock_guard lock(mutex);
  return performanceCounts(stages);
}

TransferCounts InferenceHandleImpl::getTransferCounts() const {
  std::lock_guard lock(mutex);
  return transfers;
}

uint64_t InferenceHandleImpl::getBetweenCardsBytes() const {
  std::lock_guard lock(mutex);
  return betweenCardsBytes;
}

}  // namespace qaic::rt
