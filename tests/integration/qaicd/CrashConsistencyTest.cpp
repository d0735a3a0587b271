// SPDX-License-Identifier: Apache-2.0
// qaicd SIGKILLed at random points while clients create and release partitions, then
// restarted: no partition is leaked or orphaned (each one on the device is tracked by the new
// qaicd and has a live holder; a dead holder's is removed at start) and the device's free counts
// return to its totals once the holders are gone. QAICD_CRASH_ITERATIONS sets the number of
// kills (default 12 in the suite; `make soak` runs 200); QAICD_CRASH_SEED repeats a run.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <set>
#include <thread>

#include "ClientChild.hpp"
#include "DeviceAttributes.hpp"
#include "Process.hpp"
#include "QaicdTest.hpp"

namespace qaic::qaicd::test {
namespace {

using namespace std::chrono_literals;

unsigned fromEnvironment(const char* name, unsigned fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? static_cast<unsigned>(std::strtoul(text, nullptr, 10)) : fallback;
}

class CrashConsistencyTest : public QaicdTest {};

TEST_F(CrashConsistencyTest, SigkillDuringCreateAndReleaseLeavesNoLeakedOrOrphanedPartition) {
  const unsigned iterations = fromEnvironment("QAICD_CRASH_ITERATIONS", 12);
  const unsigned seed = fromEnvironment("QAICD_CRASH_SEED", static_cast<unsigned>(std::random_device{}()));
  SCOPED_TRACE("QAICD_CRASH_SEED=" + std::to_string(seed) + " reproduces this run");
  std::mt19937 random(seed);
  unsigned readopted = 0, removedAtStart = 0;
  for (unsigned i = 0; i < iterations; ++i) {
    SCOPED_TRACE("iteration " + std::to_string(i));
    // Two holders create and release at once; one of them exits with qaicd's kill, so that
    // both kinds of holder (alive, dead) are found at the next start.
    std::vector<std::unique_ptr<ClientChild>> holders;
    for (int h = 0; h < 2; ++h) holders.push_back(std::make_unique<ClientChild>(rootPath(), socketPath()));
    for (auto& holder : holders) {
      const std::string created = holder->command("create 1 1 0");
      ASSERT_EQ(created.rfind("ok ", 0), 0u) << created;
      holder->send("create 1 1 0");
      holder->send("release " + created.substr(3));
      holder->send("create 2 1 0");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 8000)(random)));
    ASSERT_EQ(::kill(qaicd_->pid(), SIGKILL), 0);
    // kill() only queues the signal: until the old qaicd is gone its socket still answers, and
    // the next one would refuse to start beside it.
    ASSERT_TRUE(testing::waitForExit(qaicd_->pid(), 10s)) << "qaicd " << qaicd_->pid() << " outlived SIGKILL";
    for (auto& holder : holders)
      for (int r = 0; r < 3; ++r) (void)holder->reply(10s);  // answered, or refused: the connection broke
    const bool oneExits = std::uniform_int_distribution<int>(0, 1)(random) == 1;
    if (oneExits) holders[0]->kill(SIGKILL), holders[0]->waitExit(10s);

    startQaicd(qaicdArgs());
    // Every partition on the device is tracked by the new qaicd, and its holder lives.
    auto listed = connect().list();
    ASSERT_TRUE(listed) << listed.message();
    std::set<unsigned> tracked;
    for (const auto& p : *listed) {
      tracked.insert(p.id);
      EXPECT_EQ(::kill(p.holderPid, 0), 0) << "partition " << p.id << " kept for dead holder " << p.holderPid;
      EXPECT_TRUE(oneExits ? p.holderPid == holders[1]->pid()
                           : p.holderPid == holders[0]->pid() || p.holderPid == holders[1]->pid())
          << "partition " << p.id << " held by " << p.holderPid;
    }
    const auto nodes = partitionNodes();
    EXPECT_EQ(std::set<unsigned>(nodes.begin(), nodes.end()), tracked) << "untracked (orphaned) partitions";
    readopted += static_cast<unsigned>(tracked.size());
    if (oneExits) removedAtStart += qaicd_->log().find("is gone") != std::string::npos ? 1 : 0;

    // The holders go: every lease they held ends and the device is whole again.
    holders.clear();
    ASSERT_TRUE(testing::eventually([&] { return deviceWhole(0); }, 5s))
        << "device 0 did not get its resources back: nsp_free " << attribute(0, driver::sysfs::kEmuNspFree);
    if (HasFailure()) return;
  }
  std::cout << "seed " << seed << ": " << iterations << " kills, " << readopted << " partitions re-adopted, "
            << removedAtStart << " starts removed a dead holder's partitions\n";
}

}  // namespace
}  // namespace qaic::qaicd::test
