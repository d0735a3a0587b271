// One client process of the soak (SoakTest.cpp): four threads, each with its own InferenceSet,
// mixing a tiny network (relu over 64 floats, outputs checked exactly) and a real one (the sample
// CNN, examples/smallcnn, with a device-format FP16 input: every output of an input pattern must
// equal the first one), heap and DMA (memfd dma-buf) buffers, callback and polling completion:
//   thread 0: relu, heap, callback (up to 4 in flight)    thread 1: relu, DMA, polling
//   thread 2: relu, heap, callback (up to 4 in flight)    thread 3: CNN, heap, polling
// Faults come from outside (the test writes the emulator's fault files): a request then ends
// with the fault's status (QS_TIMEDOUT for a hang, QS_DEVICE_ERROR for a DMA failure,
// QS_DEV_RESET for a reset), and the thread drains and makes its set again.
// Usage: qaic_soak_client <relu qpc> <cnn qpc> <client index> <seconds> <result file>
// Writes "<result file>.ready" once every set is up, and the counters at the end (key value lines).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
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
  std::shared_ptr<Qpc> relu, cnn;
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

// Threads 0 and 2: up to setSize requests in flight, completions on libqaic's pipeline thread.
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

// Threads 1 and 3: one request at a time, getCompletedId.
void pollingThread(Shared& s, int thread) {
  const bool cnn = thread == 3;
  std::unique_ptr<MemfdBuffer> dmaIn, dmaOut;
  if (!cnn) {
    dmaIn = std::make_unique<MemfdBuffer>(qaic::stress::kElements * sizeof(float));
    dmaOut = std::make_unique<MemfdBuffer>(qaic::stress::kElements * sizeof(float));
  }
  std::vector<float> output(cnn ? kCnnOutputs : qaic::stress::kElements);
  uint64_t seq = 0;
  while (Clock::now() < s.end) {
    auto set = makeSet(s, cnn ? s.cnn : s.relu, 1);
    if (!set) return;
    QStatus status = QS_SUCCESS;
    while (Clock::now() < s.end && status == QS_SUCCESS) {
      shInferenceHandle handle;
      if (set->getAvailable(handle, 5'000'000) != QS_SUCCESS || !handle) break;
      const uint64_t id = qaic::stress::requestId(s.client, static_cast<uint64_t>(thread), seq++);
      const int pattern = static_cast<int>(id % kCnnPatterns);
      std::vector<float> input;
      if (cnn) {
        input = cnnInput(pattern);
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
      if (status == QS_SUCCESS && !cnn)
        right = qaic::stress::matchesRelu(input, std::vector<float>(dmaOut->floats(), dmaOut->floats() + input.size()));
      set->putCompleted(done);
      s.ledger.completed(id, status, right, status == QS_SUCCESS ? std::string() : done->getErrorMessage());
    }
  }
}

int run(const std::string& reluDir, const std::string& cnnDir, uint64_t client, double seconds,
        const std::string& resultFile) {
  Shared s;
  QAicContextProperties properties;
  properties.initialLogLevel = QL_ERROR;
  s.context = Context::Factory(&properties, {});
  s.relu = Qpc::Factory(reluDir);
  s.cnn = Qpc::Factory(cnnDir);
  s.client = client;
  const auto start = Clock::now();
  const auto runFor = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  s.end = start + runFor;
  std::ofstream(resultFile + ".ready") << "ready\n";

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&s, t] { t % 2 == 0 ? callbackThread(s, t) : pollingThread(s, t); });
  std::this_thread::sleep_until(start + runFor / 10);
  const auto first = qaic::testing::sampleUsage(::getpid());
  std::this_thread::sleep_until(start + runFor * 9 / 10);
  const auto last = qaic::testing::sampleUsage(::getpid());
  for (auto& t : threads) t.join();

  std::ofstream out(resultFile);
  s.ledger.write(out);
  out << "sets_made " << s.setsMade.load() << "\nset_failures " << s.setFailures.load() << "\nfd_first " << first.fds
      << "\nfd_last " << last.fds << "\nrss_kb_first " << first.rssKb << "\nrss_kb_last " << last.rssKb << "\n";
  for (int p = 0; p < kCnnPatterns; ++p) {
    // The CNN's output per pattern, so the test can check that every client computed the same.
    uint64_t hash = 1469598103934665603ull;
    for (float f : s.cnnReference[static_cast<std::size_t>(p)]) {
      uint32_t bits = 0;
      std::memcpy(&bits, &f, sizeof bits);
      hash = (hash ^ bits) * 1099511628211ull;
    }
    out << "cnn_output_" << p << " " << (s.cnnReference[static_cast<std::size_t>(p)].empty() ? 0 : hash % 1000000007)
        << "\n";
  }
  out.close();
  return out ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s <relu qpc> <cnn qpc> <client index> <seconds> <result file>\n", argv[0]);
    return 2;
  }
  try {
    return run(argv[1], argv[2], std::strtoull(argv[3], nullptr, 10), std::atof(argv[4]), argv[5]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qaic_soak_client: %s\n", e.what());
    return 1;
  }
}
