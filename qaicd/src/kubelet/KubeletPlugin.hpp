// SPDX-License-Identifier: Apache-2.0
// qaicd as the kubelet's device plugin (docs/kubernetes.md). This is the event-loop half: after
// every rescan it keeps the profile partitions (k8s_profiles) on their devices, and every
// kHealthPollMs (and after every rescan) it reads the devices' status and publishes a new
// inventory when anything a kubelet sees changed. The gRPC half (KubeletRegistrar, its own
// thread) only reads published inventories, so nothing on the loop waits for the kubelet.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "Config.hpp"
#include "DeviceRegistry.hpp"
#include "EventLoop.hpp"
#include "base/Result.hpp"
#include "base/UniqueFd.hpp"
#include "kubelet/InventoryChannel.hpp"
#include "kubelet/Profiles.hpp"

namespace qaic::qaicd {

class KubeletRegistrar;

class KubeletPlugin {
 public:
  // How often device status is read for health: a change reaches ListAndWatch within this
  // (plus one write), well inside the 500 ms the kubelet integration aims for.
  static constexpr unsigned kHealthPollMs = 200;

  struct Options {
    std::string directory;  // the kubelet's plugin directory
    std::string root;       // qaicd's root, absolute
    std::vector<K8sProfile> profiles;
    std::vector<StaticPartition> statics;  // their room is not counted for profiles
    bool mountsOnly = false;               // --kubelet-mounts-only
  };

  // Checks the directory and adds the health timer to `loop`; serves nothing until serve().
  static Result<std::unique_ptr<KubeletPlugin>> create(EventLoop& loop, DeviceRegistry& registry, Options options);
  KubeletPlugin(const KubeletPlugin&) = delete;
  KubeletPlugin& operator=(const KubeletPlugin&) = delete;
  ~KubeletPlugin();

  // On the loop, after every rescan: profile partitions created or removed, inventory published.
  void afterRescan();
  // Starts serving and registering every resource (call after the first afterRescan()).
  Result<void> serve();
  // Ends serving (bounded; see KubeletRegistrar::stop). Idempotent.
  void stop();

  std::vector<std::string> resourceNames() const;

 private:
  KubeletPlugin(EventLoop& loop, DeviceRegistry& registry, Options options);

  // What is read once per device: identity, topology, the emulator's memory directory, how
  // its node is owned (profile partitions are owned the same way) and its profile slots.
  struct DeviceFacts {
    std::string id;
    std::optional<int64_t> numaNode;
    std::string shmDir;
    uint32_t uid = 0, gid = 0, mode = 0600;
    const K8sProfile* profile = nullptr;
    uint32_t slots = 0;
    std::vector<uint32_t> p2pPeers;  // empty where the device publishes no topology
  };
  DeviceFacts& facts(uint32_t device);
  void ensureProfilePartitions();
  void readHealth();
  void publish();

  EventLoop& loop_;
  DeviceRegistry& registry_;
  Options options_;
  bool emulated_ = false;
  std::shared_ptr<InventoryChannel> inventory_ = std::make_shared<InventoryChannel>();
  std::unique_ptr<KubeletRegistrar> registrar_;
  UniqueFd timer_;
  uint64_t timerToken_ = 0;
  std::map<uint32_t, DeviceFacts> facts_;
  std::map<uint32_t, bool> ready_;                       // device -> status is Ready
  std::map<std::string, std::string> creationFailures_;  // "profile:device:slot" -> last logged reason
  std::set<std::string> creating_;                       // the same keys, with a create outstanding
};

}  // namespace qaic::qaicd
