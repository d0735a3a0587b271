// SPDX-License-Identifier: Apache-2.0
// The kubelet side of the plugin, on a thread of its own: one gRPC server per resource on its
// socket in the kubelet's plugin directory (DevicePluginService, run by gRPC's threads), and
// the Register call to DIR/kubelet.sock for each. The thread watches the directory (inotify,
// plus a check every second): when a resource's socket is deleted (the kubelet restarts and
// clears the directory) it serves a new one and registers again, and when kubelet.sock is
// created again it registers again. Nothing here blocks the event loop: the loop only
// publishes inventories into the channel the services read.
//
// Threads: this one (started by start(), joined by stop()) and each server's gRPC threads
// (ended by Server::Shutdown + Wait on this thread). Every wait is bounded: Register has a
// deadline and is cancelled by stop(), a server's shutdown cancels its calls after a grace
// period, the thread's poll wakes at least once a second and at once on stop().
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/Result.hpp"
#include "kubelet/InventoryChannel.hpp"

namespace qaic::qaicd {

struct RegistrarOptions {
  std::string directory;               // the kubelet's plugin directory
  std::vector<std::string> resources;  // "qualcomm.com/qaic", ...
};

class KubeletRegistrar {
 public:
  // The largest request a plugin socket accepts; larger ones are refused by gRPC
  // (RESOURCE_EXHAUSTED) before any of qaicd's code sees them. A real request names at most
  // every unit of the node (64 devices x 64 partitions x < 64 bytes per ID is under 300 KiB).
  static constexpr int kMaxRequestBytes = 1024 * 1024;

  // Checks the directory and the socket paths, then starts the thread, which starts serving
  // and registering at once.
  static Result<std::unique_ptr<KubeletRegistrar>> start(RegistrarOptions options,
                                                         std::shared_ptr<const InventoryChannel> inventory);
  KubeletRegistrar(const KubeletRegistrar&) = delete;
  KubeletRegistrar& operator=(const KubeletRegistrar&) = delete;
  ~KubeletRegistrar();

  // Stops registering and serving, removes the sockets this process made, joins the thread.
  // Idempotent; returns within a few seconds whatever the kubelet does.
  void stop();

  // "qualcomm.com/qaic-4nsp" -> "qaicd-qaic-4nsp.sock".
  static std::string socketName(std::string_view resource);

  struct Impl;

 private:
  explicit KubeletRegistrar(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace qaic::qaicd
