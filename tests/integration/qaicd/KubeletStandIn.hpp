// SPDX-License-Identifier: Apache-2.0
// A kubelet for tests without a cluster, as device-plugin projects test theirs: a gRPC
// `v1beta1.Registration` server on DIR/kubelet.sock that records every RegisterRequest, and a
// client of the plugin's own socket (the calls the kubelet makes after a registration), with a
// ListAndWatch stream read on a thread of its own. Every wait is bounded.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "deviceplugin.grpc.pb.h"

namespace qaic::qaicd::test {

class KubeletStandIn {
 public:
  // Serves DIR/kubelet.sock at once (replacing a socket file left there).
  explicit KubeletStandIn(std::filesystem::path directory);
  ~KubeletStandIn();
  KubeletStandIn(const KubeletStandIn&) = delete;
  KubeletStandIn& operator=(const KubeletStandIn&) = delete;

  std::filesystem::path socketPath() const { return directory_ / "kubelet.sock"; }
  // Every RegisterRequest received so far, in order.
  std::vector<v1beta1::RegisterRequest> registrations() const;
  // Waits until at least `count` registrations arrived in total; returns them all.
  std::vector<v1beta1::RegisterRequest> waitForRegistrations(std::size_t count,
                                                             std::chrono::milliseconds timeout) const;

 private:
  class Service;
  std::filesystem::path directory_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::vector<v1beta1::RegisterRequest> registrations_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
};

// One ListAndWatch stream, read on its own thread into a list of updates.
class DeviceWatch {
 public:
  using Devices = std::vector<v1beta1::Device>;
  explicit DeviceWatch(v1beta1::DevicePlugin::Stub& stub);
  ~DeviceWatch();  // cancels the stream and joins the reader
  DeviceWatch(const DeviceWatch&) = delete;
  DeviceWatch& operator=(const DeviceWatch&) = delete;

  // The first update (at or after `from`) whose device list satisfies `condition`, or nullopt
  // when none arrives within `timeout`; `index` receives its position.
  std::optional<Devices> waitFor(const std::function<bool(const Devices&)>& condition,
                                 std::chrono::milliseconds timeout, std::size_t from = 0, std::size_t* index = nullptr);
  std::size_t updates() const;
  // When the stream ended, its status (nullopt while it is open).
  std::optional<grpc::Status> finished() const;
  // Arrival time of each update (steady clock), for latency measurements.
  std::chrono::steady_clock::time_point arrival(std::size_t index) const;

 private:
  grpc::ClientContext context_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::vector<Devices> updates_;
  std::vector<std::chrono::steady_clock::time_point> arrivals_;
  std::optional<grpc::Status> finished_;
  std::thread reader_;
};

// A channel to DIR/<endpoint> as the kubelet opens it.
std::unique_ptr<v1beta1::DevicePlugin::Stub> dialPlugin(const std::filesystem::path& socket);

// Helpers over a device list.
const v1beta1::Device* findDevice(const DeviceWatch::Devices& devices, const std::string& id);
std::size_t countHealthy(const DeviceWatch::Devices& devices);

}  // namespace qaic::qaicd::test
