// SPDX-License-Identifier: Apache-2.0
// One client process of the stress test: drives a relu network through libqaic from several
// threads for a fixed time and writes what it saw (key value lines) to a result file.
// Usage: qaic_stress_client <qpc dir> <client index> <threads> <seconds> <result file>
// QAIC_ROOT names the emulator. "<result file>.ready" appears once the load starts.
// Exit 0 when the run finished and the result file was written.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
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

// One request in flight: its buffers live here until its completion has been checked. The
// callback gets the id (as its userData), so the id must fit a pointer.
static_assert(sizeof(void*) >= sizeof(uint64_t));
struct Request {
  uint64_t id = 0;
  std::vector<float> input;
  std::vector<float> output;
};

// What every thread of this process observed, under one lock.
class Ledger {
 public:
  void submitted(std::unique_ptr<Request> request) {
    std::lock_guard lock(mutex_);
    ++submitted_;
    const uint64_t id = request->id;
    inFlight_.emplace(id, std::move(request));
  }
  // Called from libqaic's pipeline thread once per completion. Takes the id, not the Request:
  // a duplicate completion must be counted, not dereference a request already freed.
  void completed(QStatus status, uint64_t id) {
    std::lock_guard lock(mutex_);
    ++completions_;
    if (status != QS_SUCCESS) ++failed_;
    auto found = inFlight_.find(id);
    if (found == inFlight_.end()) {
      // A second callback for a request already retired, or one never submitted.
      ++duplicatesOrUnknown_;
      return;
    }
    const Request& request = *found->second;
    if (status == QS_SUCCESS && !qaic::stress::matchesRelu(request.input, request.output)) ++wrongOutputs_;
    inFlight_.erase(found);
    cv_.notify_all();
  }
  // Waits until nothing is in flight; false after `timeout`.
  bool drain(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return inFlight_.empty(); });
  }
  void write(std::ostream& out) {
    std::lock_guard lock(mutex_);
    out << "submitted " << submitted_ << "\ncompletions " << completions_ << "\nlost " << inFlight_.size()
        << "\nduplicates_or_unknown " << duplicatesOrUnknown_ << "\nwrong " << wrongOutputs_ << "\nfailed " << failed_
        << "\n";
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<uint64_t, std::unique_ptr<Request>> inFlight_;
  uint64_t submitted_ = 0, completions_ = 0, duplicatesOrUnknown_ = 0, wrongOutputs_ = 0, failed_ = 0;
};

using qaic::testing::heapBuffer;

int run(const std::string& qpcDir, uint64_t client, int threads, double seconds, const std::string& resultFile) {
  QAicContextProperties properties;
  properties.initialLogLevel = QL_ERROR;
  auto context = Context::Factory(&properties, {});
  auto qpc = Qpc::Factory(qpcDir);
  const auto setSize = static_cast<uint32_t>(2 * threads);
  auto set = InferenceSet::Factory(context, qpc, 0, setSize, 1);

  // Tells the test that this client has activated and starts its load now.
  std::ofstream(resultFile + ".ready") << "ready\n";

  Ledger ledger;
  std::atomic<int> acquireTimeouts{0};
  std::atomic<int> submittingThreads{0};  // workers that have submitted at least once
  const auto start = Clock::now();
  const auto runFor = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  const auto end = start + runFor;

  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      uint64_t seq = 0;
      while (Clock::now() < end) {
        shInferenceHandle handle;
        if (set->getAvailable(handle, 5'000'000) != QS_SUCCESS || !handle) {
          ++acquireTimeouts;
          break;
        }
        auto request = std::make_unique<Request>();
        const uint64_t id = qaic::stress::requestId(client, static_cast<uint64_t>(t), seq++);
        request->id = id;
        request->input = qaic::stress::inputFor(request->id);
        request->output.assign(qaic::stress::kElements, -1.0f);
        Request* raw = request.get();
        handle->setBuffers({heapBuffer(raw->input), heapBuffer(raw->output)});
        ledger.submitted(std::move(request));
        // The handle goes back before the ledger hears of it: once the ledger has every
        // completion, the main thread may destroy the set, so nothing may touch it afterwards.
        set->submit(
            handle,
            [&ledger, setPtr = set.get()](const shInferenceHandle& done, void* userData) {
              const QStatus status = done->getStatus();
              setPtr->putCompleted(done);
              ledger.completed(status, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(userData)));
            },
            reinterpret_cast<void*>(static_cast<uintptr_t>(id)));
        if (seq == 1) ++submittingThreads;
      }
    });
  }

  // Resource samples while the workers run: at the end of the first tenth and the start of the
  // last tenth, so start-up and shutdown costs stay out of the comparison. The first also waits
  // (up to half the run) for every worker to have submitted: a thread's first submission opens
  // its io_uring ring, which a worker starved of CPU at start-up may do after the first tenth.
  std::this_thread::sleep_until(start + runFor / 10);
  while (submittingThreads.load() < threads && Clock::now() < start + runFor / 2)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto first = qaic::testing::sampleSettledUsage(::getpid());
  std::this_thread::sleep_until(start + runFor * 9 / 10);
  const auto last = qaic::testing::sampleSettledUsage(::getpid());

  for (auto& w : workers) w.join();
  const bool drained = ledger.drain(std::chrono::seconds(20));
  const QStatus waited = set->waitForCompletion(5'000'000);

  std::ofstream out(resultFile);
  ledger.write(out);
  out << "drained " << (drained ? 1 : 0) << "\nwait_status " << static_cast<int>(waited) << "\nacquire_timeouts "
      << acquireTimeouts.load() << "\nfd_first " << first.fds << "\nfd_last " << last.fds << "\nrss_kb_first "
      << first.rssKb << "\nrss_kb_last " << last.rssKb << "\n";
  out.close();
  set.reset();
  return out ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s <qpc dir> <client index> <threads> <seconds> <result file>\n", argv[0]);
    return 2;
  }
  try {
    return run(argv[1], std::strtoull(argv[2], nullptr, 10), std::atoi(argv[3]), std::atof(argv[4]), argv[5]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qaic_stress_client: %s\n", e.what());
    return 1;
  }
}
