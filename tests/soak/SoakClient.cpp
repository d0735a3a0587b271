// SPDX-License-Identifier: Apache-2.0
// One client process of the soak (SoakTest.cpp): four threads, each with its own InferenceSet,
// mixing a tiny network (relu over 64 floats, outputs checked exactly) and real ones (the sample
// CNN, examples/smallcnn, with a device-format FP16 input: every output of an input pattern must
// equal the first one; a torchvision model exported by scripts/gen-models.py with PyTorch's
// input: within 1e-4 of PyTorch's output's largest magnitude, and every output equal to the
// first), heap and DMA (memfd dma-buf) buffers, callback and polling completion:
//   thread 0: relu, heap, callback (up to 4 in flight)    thread 1: relu, DMA, polling
//   thread 2: the torchvision model, heap, polling, about 50 requests a second (a real
//             network's compute would otherwise take the CPU the request count needs)
//   thread 3: CNN, heap, polling
// Faults come from outside (the test writes the emulator's fault files): a request then ends
// with the fault's status (QS_TIMEDOUT for a hang, QS_DEVICE_ERROR for a DMA failure,
// QS_DEV_RESET for a reset), and the thread drains and makes its set again.
// Usage: qaic_soak_client <relu qpc> <cnn qpc> <model qpc> <model input> <model output>
//                         <client index> <seconds> <result file>
// (model input and output: the raw float files gen-models.py wrote, PyTorch's output)
// Writes "<result file>.ready" once every set is up, the counters so far every half second to
// "<result file>.progress", and the counters at the end to <result file> (key value lines).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <qaic/qaic.hpp>

#include "HostBuffers.hpp"
#include "ProcessUsage.hpp"
#include "StressNetwork.hpp"

namespace {

using namespace qaic::rt;
using Clock = std::chrono::steady_clock;

constexpr int kThreads = 4;
constexpr int kModelThread = 2;
constexpr auto kModelPause = std::chrono::milliseconds(20);
constexpr int kCnnInputs = 3 * 16 * 16;
constexpr int kCnnOutputs = 10;
constexpr int kCnnPatterns = 4;

// Every request of the process, by id, from submission to its one completion.
class Ledger {
 public:
  void submitted(uint64_t id) {
    std::lock_guard lock(mutex_);
    ++submitted_;
    inFlight_.insert(id);
  }
  // `right`: the output checked out (only looked at for QS_SUCCESS).
  void completed(uint64_t id, QStatus status, bool right, const std::string& message = {}) {
    std::lock_guard lock(mutex_);
    if (status != QS_SUCCESS && status != QS_TIMEDOUT && status != QS_DEVICE_ERROR && status != QS_DEV_RESET &&
        firstUnexpected_.empty())
      firstUnexpected_ = message.empty() ? "(no message)" : message;
    ++completions_;
    if (inFlight_.erase(id) == 0) {
      ++duplicatesOrUnknown_;
      return;
    }
    if (status == QS_SUCCESS)
      ++(right ? ok_ : wrong_);
    else
      ++byStatus_[status];
    cv_.notify_all();
  }
  void write(std::ostream& out) {
    std::lock_guard lock(mutex_);
    out << "submitted " << submitted_ << "\ncompletions " << completions_ << "\nlost " << inFlight_.size()
        << "\nduplicates_or_unknown " << duplicatesOrUnknown_ << "\nok " << ok_ << "\nwrong " << wrong_ << "\n";
    long unexpected = 0;
    for (const auto& [status, count] : byStatus_) {
      if (status == QS_TIMEDOUT)
        out << "timed_out " << count << "\n";
      else if (status == QS_DEVICE_ERROR)
        out << "device_error " << count << "\n";
      else if (status == QS_DEV_RESET)
        out << "dev_reset " << count << "\n";
      else {
        unexpected += count;
        out << "status_" << status << " " << count << "\n";
      }
    }
    out << "unexpected_status " << unexpected << "\n";
    // Not a key-value line the test reads as a number: the first unexplained failure's message.
    if (!firstUnexpected_.empty()) out << "first_unexpected_message: " << firstUnexpected_ << "\n";
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::set<uint64_t> inFlight_;
  std::map<int, long> byStatus_;
  std::string firstUnexpected_;
  long submitted_ = 0, completions_ = 0, duplicatesOrUnknown_ = 0, ok_ = 0, wrong_ = 0;
};

using qaic::testing::heapBuffer;
using qaic::testing::MemfdBuffer;

struct Shared {
  std::shared_ptr<Context> context;
  std::shared_ptr<Qpc> relu, cnn, model;
  std::vector<float> modelInput, modelTorchOutput;
  std::vector<float> modelReference;  // the first output (model thread only)
  uint64_t client = 0;
  Clock::time_point end;
  Ledger ledger;
  std::atomic<long> setsMade{0}, setFailures{0};
  std::mutex cnnMutex;
  std::vector<std::vector<float>> cnnReference = std::vector<std::vector<float>>(kCnnPatterns);
};

std::shared_ptr<InferenceSet> makeSet(Shared& s, const std::shared_ptr<Qpc>& qpc, uint32_t setSize) {
  InferenceSetProperties properties;
  // A hung NSP is seen within a second (two tries of 400 ms), not after the default 30 s.
  properties.programProperties.dataPathTimeoutMs = 400;
  properties.programProperties.submitNumRetries = 1;
  properties.queueProperties.numThreadsPerQueue = 1;
  // A reset may be under way: the set is made again until the run ends.
  while (Clock::now() < s.end) {
    try {
      auto set = InferenceSet::Factory(s.context, qpc, 0, setSize, 1, &properties);
      ++s.setsMade;
      return set;
    } catch (const Error&) {
      ++s.setFailures;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return nullptr;
}

std::vector<float> cnnInput(int pattern) {
  std::vector<float> v(kCnnInputs);
  for (int i = 0; i < kCnnInputs; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<float>((i * (pattern + 3)) % 17) / 8.0f - 1.0f;
  return v;
}

bool cnnRight(Shared& s, int pattern, const std::vector<float>& output) {
  std::lock_guard lock(s.cnnMutex);
  auto& reference = s.cnnReference[static_cast<std::size_t>(pattern)];
  if (reference.empty()) reference = output;
  return std::memcmp(reference.data(), output.data(), output.size() * sizeof(float)) == 0;
}

// Within 1e-4 of PyTorch's largest magnitude (the suite's tolerance), and bitwise equal to the
// first output: the device computes the same every time.
bool modelRight(Shared& s, const std::vector<float>& output) {
  float largest = 0.0f, worst = 0.0f;
  for (std::size_t i = 0; i < output.size(); ++i) {
    largest = std::max(largest, std::abs(s.modelTorchOutput[i]));
    worst = std::max(worst, std::abs(output[i] - s.modelTorchOutput[i]));
  }
  if (!(worst <= 1e-4f * largest)) return false;
  if (s.modelReference.empty()) s.modelReference = output;
  return std::memcmp(s.modelReference.data(), output.data(), output.size() * sizeof(float)) == 0;
}

// Thread 0: up to setSize requests in flight, completions on libqaic's pipeline thread.
void callbackThread(Shared& s, int thread) {
  constexpr uint32_t kSetSize = 4;
  struct Slot {
    std::vector<float> input, output;
  };
  // Shared with the callbacks, which may run until the set is gone.
  struct InFlight {
    std::mutex mutex;
    std::condition_variable cv;
    std::map<uint64_t, std::unique_ptr<Slot>> slots;
    bool failed = false;
  };
  uint64_t seq = 0;
  while (Clock::now() < s.end) {
    auto set = makeSet(s, s.relu, kSetSize);
    if (!set) return;
    auto state = std::make_shared<InFlight>();
    for (;;) {
      {
        std::lock_guard lock(state->mutex);
        if (state->failed || Clock::now() >= s.end) break;
      }
      shInferenceHandle handle;
      if (set->getAvailable(handle, 5'000'000) != QS_SUCCESS || !handle) break;
      auto slot = std::make_unique<Slot>();
      const uint64_t id = qaic::stress::requestId(s.client, static_cast<uint64_t>(thread), seq++);
      slot->input = qaic::stress::inputFor(id);
      slot->output.assign(qaic::stress::kElements, -1.0f);
      handle->setBuffers({heapBuffer(slot->input), heapBuffer(slot->output)});
      {
        std::lock_guard lock(state->mutex);
        state->slots.emplace(id, std::move(slot));
      }
      s.ledger.submitted(id);
      set->submit(
          handle,
          [&s, state, setPtr = set.get()](const shInferenceHandle& done, void* userData) {
            const QStatus status = done->getStatus();
            const auto doneId = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(userData));
            std::unique_lock lock(state->mutex);
            auto it = state->slots.find(doneId);
            const bool right = it != state->slots.end() && status == QS_SUCCESS &&
                               qaic::stress::matchesRelu(it->second->input, it->second->output);
            setPtr->putCompleted(done);
            s.ledger.completed(doneId, status, right, status == QS_SUCCESS ? std::string() : done->getErrorMessage());
            if (it != state->slots.end()) state->slots.erase(it);
            if (status != QS_SUCCESS) state->failed = true;
            state->cv.notify_all();
          },
          reinterpret_cast<void*>(static_cast<uintptr_t>(id)));
    }
    // Every request of this set ends before the set goes (and before a new one is made).
    std::unique_lock lock(state->mutex);
    state->cv.wait_for(lock, std::chrono::seconds(30), [&] { return state->slots.empty(); });
    lock.unlock();
    (void)set->waitForCompletion(5'000'000);
  }
}

// Threads 1, 2 and 3: one request at a time, getCompletedId.
void pollingThread(Shared& s, int thread) {
  const bool cnn = thread == 3, model = thread == kModelThread;
  std::unique_ptr<MemfdBuffer> dmaIn, dmaOut;
  if (!cnn && !model) {
    dmaIn = std::make_unique<MemfdBuffer>(qaic::stress::kElements * sizeof(float));
    dmaOut = std::make_unique<MemfdBuffer>(qaic::stress::kElements * sizeof(float));
  }
  std::vector<float> output(cnn ? kCnnOutputs : model ? s.modelTorchOutput.size() : qaic::stress::kElements);
  uint64_t seq = 0;
  while (Clock::now() < s.end) {
    auto set = makeSet(s, cnn ? s.cnn : model ? s.model : s.relu, 1);
    if (!set) return;
    QStatus status = QS_SUCCESS;
    while (Clock::now() < s.end && status == QS_SUCCESS) {
      shInferenceHandle handle;
      if (set->getAvailable(handle, 5'000'000) != QS_SUCCESS || !handle) break;
      const uint64_t id = qaic::stress::requestId(s.client, static_cast<uint64_t>(thread), seq++);
      const int pattern = static_cast<int>(id % kCnnPatterns);
      std::vector<float> input;
      if (cnn || model) {
        input = cnn ? cnnInput(pattern) : s.modelInput;
        std::fill(output.begin(), output.end(), -7.0f);
        handle->setBuffers({heapBuffer(input), heapBuffer(output)});
      } else {
        input = qaic::stress::inputFor(id);
        std::memcpy(dmaIn->data(), input.data(), input.size() * sizeof(float));
        std::fill(dmaOut->floats(), dmaOut->floats() + qaic::stress::kElements, -1.0f);
        handle->setBuffers({dmaIn->qbuffer(), dmaOut->qbuffer()});
      }
      s.ledger.submitted(id);
      set->submit(handle, id);
      shInferenceHandle done;
      const QStatus waited = set->getCompletedId(done, id, 30'000'000);
      if (!done) {
        status = waited;  // still in flight: counted lost at the end
        break;
      }
      status = done->getStatus();
      bool right = false;
      if (status == QS_SUCCESS && cnn) right = cnnRight(s, pattern, output);
      if (status == QS_SUCCESS && model) right = modelRight(s, output);
      if (status == QS_SUCCESS && !cnn && !model)
        right = qaic::stress::matchesRelu(input, std::vector<float>(dmaOut->floats(), dmaOut->floats() + input.size()));
      set->putCompleted(done);
      s.ledger.completed(id, status, right, status == QS_SUCCESS ? std::string() : done->getErrorMessage());
      if (model) std::this_thread::sleep_for(kModelPause);
    }
  }
}

std::vector<float> readFloats(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error(path + ": cannot open");
  const auto bytes = static_cast<std::size_t>(in.tellg());
  if (bytes == 0 || bytes % sizeof(float) != 0) throw std::runtime_error(path + ": not a float32 array");
  std::vector<float> values(bytes / sizeof(float));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(bytes)))
    throw std::runtime_error(path + ": short read");
  return values;
}

// FNV-1a over the floats' bits, folded to a positive line value (0 stands for no output).
long outputHash(const std::vector<float>& values) {
  if (values.empty()) return 0;
  uint64_t hash = 1469598103934665603ull;
  for (float f : values) {
    uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    hash = (hash ^ bits) * 1099511628211ull;
  }
  return static_cast<long>(hash % 1000000007) + 1;
}

struct Arguments {
  std::string reluDir, cnnDir, modelDir, modelInput, modelOutput, resultFile;
  uint64_t client = 0;
  double seconds = 0;
};

int run(const Arguments& a) {
  Shared s;
  QAicContextProperties properties;
  properties.initialLogLevel = QL_ERROR;
  s.context = Context::Factory(&properties, {});
  s.relu = Qpc::Factory(a.reluDir);
  s.cnn = Qpc::Factory(a.cnnDir);
  s.model = Qpc::Factory(a.modelDir);
  s.modelInput = readFloats(a.modelInput);
  s.modelTorchOutput = readFloats(a.modelOutput);
  s.client = a.client;
  const auto start = Clock::now();
  const auto runFor = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.seconds));
  s.end = start + runFor;
  std::ofstream(a.resultFile + ".ready") << "ready\n";

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&s, t] { t == 0 ? callbackThread(s, t) : pollingThread(s, t); });
  // The counters so far, every half second: a client the test SIGKILLs counts (and is checked
  // for) the requests it completed before it died.
  auto writeProgress = [&] {
    const std::string partial = a.resultFile + ".progress.partial";
    {
      std::ofstream out(partial);
      s.ledger.write(out);
    }
    std::filesystem::rename(partial, a.resultFile + ".progress");
  };
  std::optional<qaic::testing::ProcessUsage> first, last;
  for (auto now = Clock::now(); now < s.end; now = Clock::now()) {
    std::this_thread::sleep_until(std::min(s.end, now + std::chrono::milliseconds(500)));
    writeProgress();
    now = Clock::now();
    if (!first && now >= start + runFor / 10) first = qaic::testing::sampleUsage(::getpid());
    if (!last && now >= start + runFor * 9 / 10) last = qaic::testing::sampleUsage(::getpid());
  }
  for (auto& t : threads) t.join();
  if (!first) first = qaic::testing::sampleUsage(::getpid());
  if (!last) last = qaic::testing::sampleUsage(::getpid());

  std::ofstream out(a.resultFile);
  s.ledger.write(out);
  out << "sets_made " << s.setsMade.load() << "\nset_failures " << s.setFailures.load() << "\nfd_first " << first->fds
      << "\nfd_last " << last->fds << "\nrss_kb_first " << first->rssKb << "\nrss_kb_last " << last->rssKb << "\n";
  // The real networks' outputs, so the test can check that every client computed the same.
  for (int p = 0; p < kCnnPatterns; ++p)
    out << "cnn_output_" << p << " " << outputHash(s.cnnReference[static_cast<std::size_t>(p)]) << "\n";
  out << "model_output " << outputHash(s.modelReference) << "\n";
  out.close();
  return out ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 9) {
    std::fprintf(stderr,
                 "usage: %s <relu qpc> <cnn qpc> <model qpc> <model input> <model output> <client index> <seconds> "
                 "<result file>\n",
                 argv[0]);
    return 2;
  }
  try {
    return run(Arguments{argv[1], argv[2], argv[3], argv[4], argv[5], argv[8], std::strtoull(argv[6], nullptr, 10),
                         std::atof(argv[7])});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qaic_soak_client: %s\n", e.what());
    return 1;
  }
}
