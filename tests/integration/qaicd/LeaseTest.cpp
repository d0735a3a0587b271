// SPDX-License-Identifier: Apache-2.0
// Leases with real client processes: a holder's exit (even SIGKILL) returns everything within a
// second, qaicd restarts without disturbing holders, several clients reserve and release at
// once with the device's totals consistent at every barrier.
#include <signal.h>
#include <unistd.h>

#include <map>
#include <set>

#include "ClientChild.hpp"
#include "DeviceAttributes.hpp"
#include "QaicdTest.hpp"

namespace qaic::qaicd::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class LeaseTest : public QaicdTest {};

TEST_F(LeaseTest, SigkillOfTheHolderReturnsEverythingWithinOneSecond) {
  ClientChild holder(rootPath(), socketPath());
  const std::string created = holder.command("create 4 2");
  const unsigned id = okNumber(created);
  ASSERT_GE(id, 100u) << created;
  // An activation inside the partition goes with it.
  const std::string activated = holder.command("activate " + std::to_string(id) + " 1");
  ASSERT_GT(okNumber(activated) + 1, 0u);
  ASSERT_EQ(activated.rfind("ok", 0), 0u) << activated;
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps - 4);
  EXPECT_EQ(attribute(id, driver::sysfs::kEmuNetworksActive), 1u);

  holder.kill(SIGKILL);
  const auto killed = Clock::now();
  ASSERT_TRUE(testing::eventually([&] { return deviceWhole(); }, 10s)) << "the partition was not returned";
  const auto elapsed = Clock::now() - killed;
  EXPECT_LT(elapsed, 1s) << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count() << " ms";
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNetworksActive), 0u);
  auto listed = connect().list();
  ASSERT_TRUE(listed);
  EXPECT_TRUE(listed->empty());
}

TEST_F(LeaseTest, ClosingTheConnectionReleasesItsPartitionsOnly) {
  auto keeper = connect();
  auto kept = keeper.createPartition(Resources{1, 0, 0, 1, 0});
  ASSERT_TRUE(kept) << kept.message();
  {
    auto leaving = connect();
    ASSERT_TRUE(leaving.createPartition(Resources{2, 0, 0, 1, 0}));
    ASSERT_TRUE(leaving.createPartition(Resources{3, 0, 0, 1, 0}));
    EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps - 6);
  }
  ASSERT_TRUE(testing::eventually([&] { return attribute(0, driver::sysfs::kEmuNspFree) == kDeviceNsps - 1; }, 10s));
  EXPECT_EQ(partitionNodes(), std::vector<unsigned>{kept->id});
  // Another connection of the same process does not hold the lease.
  auto other = connect();
  EXPECT_TRUE(other.release(kept->id)) << "uid 0 may release any partition";
}

TEST_F(LeaseTest, RestartLeavesPartitionsAndHoldersAndTheHolderExitStillReleases) {
  ClientChild adopter(rootPath(), socketPath());
  ClientChild watcher(rootPath(), socketPath());
  const unsigned adopted = okNumber(adopter.command("create 2 1"));
  const unsigned watched = okNumber(watcher.command("create 3 1"));
  ASSERT_GE(adopted, 100u);
  ASSERT_GE(watched, 100u);

  ASSERT_TRUE(stopQaicd()) << "SIGTERM did not stop qaicd in time";
  EXPECT_EQ(partitionNodes(), (std::vector<unsigned>{adopted, watched}));
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps - 5);
  EXPECT_EQ(attribute(adopted, driver::sysfs::kPartitionHolderPid), static_cast<uint64_t>(adopter.pid()));

  startQaicd();
  auto listed = connect().list();
  ASSERT_TRUE(listed) << listed.message();
  std::map<uint32_t, int32_t> holders;
  for (const auto& p : *listed) holders[p.id] = p.holderPid;
  EXPECT_EQ(holders, (std::map<uint32_t, int32_t>{{adopted, adopter.pid()}, {watched, watcher.pid()}}));

  // One holder reconnects and binds its lease again; the other only lives on.
  ASSERT_EQ(adopter.command("reconnect"), "ok");
  ASSERT_EQ(okNumber(adopter.command("adopt " + std::to_string(adopted))), adopted);
  // Another process may not adopt it.
  ASSERT_EQ(watcher.command("reconnect"), "ok");
  EXPECT_EQ(errNumber(watcher.command("adopt " + std::to_string(adopted))), EPERM);
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps - 5);

  // The watched holder exits: released through its pidfd, within a second.
  watcher.send("exit");
  ASSERT_TRUE(watcher.waitExit(10s));
  const auto exited = Clock::now();
  ASSERT_TRUE(testing::eventually([&] { return attribute(0, driver::sysfs::kEmuNspFree) == kDeviceNsps - 2; }, 10s));
  EXPECT_LT(Clock::now() - exited, 1s);
  EXPECT_EQ(partitionNodes(), std::vector<unsigned>{adopted});

  // The adopted lease now ends with its new connection.
  ASSERT_EQ(adopter.command("reconnect"), "ok");
  ASSERT_TRUE(testing::eventually([&] { return deviceWhole(); }, 10s));
}

TEST_F(LeaseTest, PartitionsOfHoldersThatDiedWhileQaicdWasDownAreRemovedAtStart) {
  ClientChild holder(rootPath(), socketPath());
  const unsigned id = okNumber(holder.command("create 2 1"));
  ASSERT_GE(id, 100u);
  ASSERT_TRUE(stopQaicd());
  holder.kill(SIGKILL);
  ASSERT_TRUE(holder.waitExit(10s));
  EXPECT_EQ(partitionNodes(), std::vector<unsigned>{id}) << "nobody removes it while qaicd is down";
  startQaicd();
  EXPECT_TRUE(deviceWhole()) << "the dead holder's partition survived the start scan";
}

TEST_F(LeaseTest, ConcurrentClientsKeepTheDeviceConsistent) {
  constexpr int kClients = 4;
  constexpr int kRounds = 6;
  std::vector<std::unique_ptr<ClientChild>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(std::make_unique<ClientChild>(rootPath(), socketPath()));
  for (int round = 0; round < kRounds; ++round) {
    // Everyone asks at once; sizes 1 + (i + round) % 2 fit the device together.
    uint32_t asked = 0;
    for (int i = 0; i < kClients; ++i) {
      const uint32_t n = 1 + (i + round) % 2;
      asked += n;
      clients[i]->send("create " + std::to_string(n) + " 1");
    }
    std::set<unsigned> ids;
    std::vector<unsigned> idOf;
    for (auto& c : clients) {
      const std::string answer = c->reply();
      ASSERT_GE(okNumber(answer), 100u) << "round " << round << ": " << answer;
      ids.insert(okNumber(answer));
      idOf.push_back(okNumber(answer));
    }
    ASSERT_EQ(ids.size(), static_cast<std::size_t>(kClients)) << "two clients got the same partition";
    // At the barrier qaicd, sysfs and the nodes agree.
    EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps - asked);
    uint64_t held = 0;
    for (unsigned id : ids) held += attribute(id, driver::sysfs::kEmuNspTotal);
    EXPECT_EQ(held, asked);
    auto partitionList = partitionNodes();
    EXPECT_EQ(std::set<unsigned>(partitionList.begin(), partitionList.end()), ids);
    auto listed = connect().list();
    ASSERT_TRUE(listed);
    std::set<unsigned> listedIds;
    for (const auto& p : *listed) listedIds.insert(p.id);
    EXPECT_EQ(listedIds, ids);
    auto devices = connect().devices();
    ASSERT_TRUE(devices);
    EXPECT_EQ((*devices)[0].free.numNsp, kDeviceNsps - asked);

    // Half release explicitly, half drop their connection; all at once.
    for (int i = 0; i < kClients; ++i)
      clients[i]->send(i % 2 == 0 ? "release " + std::to_string(idOf[i]) : std::string("reconnect"));
    for (auto& c : clients) EXPECT_EQ(c->reply(), "ok") << "round " << round;
    ASSERT_TRUE(testing::eventually([&] { return deviceWhole(); }, 10s)) << "round " << round;
  }
  for (auto& c : clients) c->send("exit");
  for (auto& c : clients) EXPECT_TRUE(c->waitExit(10s));
}

TEST_F(LeaseTest, OversubscribedAtOnceExactlyTheFittingRequestsWin) {
  constexpr int kClients = 5;  // 5 x 2 NSPs on 8
  std::vector<std::unique_ptr<ClientChild>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(std::make_unique<ClientChild>(rootPath(), socketPath()));
  for (auto& c : clients) c->send("create 2 1 0");
  int won = 0, refused = 0;
  for (auto& c : clients) {
    const std::string answer = c->reply();
    if (okNumber(answer) >= 100)
      ++won;
    else if (errNumber(answer) == ENOSPC && answer.find("numNsp: 2 requested, 0 free") != std::string::npos)
      ++refused;
    else
      ADD_FAILURE() << answer;
  }
  EXPECT_EQ(won, 4);
  EXPECT_EQ(refused, 1);
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), 0u);
}

}  // namespace
}  // namespace qaic::qaicd::test
