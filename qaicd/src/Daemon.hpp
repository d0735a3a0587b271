// SPDX-License-Identifier: Apache-2.0
// qaicd itself: one event-loop thread serving the socket, following the devices and keeping the
// leases (docs/qaicd.md). Everything runs on the thread that calls run(), except the calls on
// device nodes, which run on one thread per device (DeviceWorker.hpp) and come back to this one as
// results, and the kubelet device plugin's threads (kubelet/KubeletRegistrar.hpp); neither touches
// what this thread owns. SIGTERM/SIGINT (blocked by the caller before start) end run() and leave
// every partition on its device, so the next start re-adopts them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "ClientConnection.hpp"
#include "Config.hpp"
#include "DeviceRegistry.hpp"
#include "EventLoop.hpp"
#include "ListenSocket.hpp"
#include "UdevMonitor.hpp"
#include "base/Result.hpp"
#include "base/UniqueFd.hpp"

namespace qaic::qaicd {

class KubeletPlugin;

struct DaemonOptions {
  std::string root = "/";
  std::string socket = "/run/qaic/qaicd.sock";
  Config config;
  unsigned pollMs = 250;
  // How long an answer waits for a device call (docs/qaicd.md, "Device calls").
  std::chrono::milliseconds deviceTimeout{5000};
  std::string kubeletDir;  // empty: no kubelet device plugin (docs/kubernetes.md)
  bool kubeletMountsOnly = false;
};

class Daemon {
 public:
  // Listens, scans the root (re-adopting or removing partitions left by a previous qaicd) and
  // creates the configured static partitions. When this returns, the socket accepts.
  static Result<std::unique_ptr<Daemon>> start(DaemonOptions options);
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;
  ~Daemon();

  void run();

 private:
  Daemon(DaemonOptions options, EventLoop loop, ListenSocket listen);
  Result<void> setUp();

  void onAccept();
  void onClient(uint64_t token, uint32_t events);
  void closeClient(uint64_t token, const std::string& why);
  // Answers up to kLinesPerTurn queued requests of one client, so a client that sends many
  // (expensive) requests at once takes turns with the others. False: the client was dropped.
  bool serveQueued(uint64_t token);
  bool serveBacklog();  // one turn for every client with queued requests; true if any remain
  void updateInterest(uint64_t token);
  // The answer line to one request line, or nullopt when it waits for a device call: then
  // deliver() sends it, and the client's next requests wait for it (answers keep their order).
  std::optional<std::string> answer(uint64_t token, const PeerInfo& peer, const std::string& line);
  std::optional<std::string> dispatch(uint64_t token, const PeerInfo& peer, const Request& request);
  // A create with devices or deviceCount: answered later with every partition of the group.
  std::optional<std::string> createGroup(uint64_t token, int64_t id, const Request& request, const PartitionSpec& spec);
  void deliver(uint64_t token, const std::string& line);

  void rescan();
  void afterChange();  // static partitions, holder watches and the kubelet follow the registry
  void ensureStaticPartitions();
  void syncHolderWatches();
  void onHolderExit(pid_t pid);

  DaemonOptions options_;
  EventLoop loop_;
  ListenSocket listen_;
  DeviceRegistry registry_;
  static constexpr int kLinesPerTurn = 16;
  // Connections served at once. One more is answered EUSERS and closed at once: each costs a
  // descriptor and up to 1 MiB of answers, and qaicd's descriptors are its devices' too.
  static constexpr std::size_t kMaxClients = 512;
  std::map<uint64_t, ClientConnection> clients_;  // by event-loop token
  // Held open so that, with every descriptor taken (EMFILE), accept() still gets one: the
  // pending connection is taken and closed instead of waking the loop again and again.
  UniqueFd spareDescriptor_;
  std::set<uint64_t> backlog_;   // clients with queued requests
  std::set<uint64_t> awaiting_;  // clients whose answer waits for a device
  struct HolderWatch {
    UniqueFd pidfd;
    uint64_t token = 0;
  };
  std::map<pid_t, HolderWatch> holders_;
  UniqueFd signals_, timer_;
  std::unique_ptr<UdevMonitor> udev_;
  std::map<std::string, std::string> staticFailures_;  // name -> last logged reason
  std::set<std::string> staticCreating_;               // names with a create outstanding
  // Last member: destroyed first, while the loop and the registry it uses still exist.
  std::unique_ptr<KubeletPlugin> kubelet_;
};

}  // namespace qaic::qaicd
