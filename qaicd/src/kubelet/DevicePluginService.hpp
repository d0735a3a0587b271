// SPDX-License-Identifier: Apache-2.0
// v1beta1.DevicePlugin for one resource, served by gRPC's own threads on the resource's socket.
// Every answer comes from the newest published inventory (InventoryChannel): the service holds
// no device state and never reaches into the event loop. ListAndWatch streams wait (bounded)
// for a newer inventory and end when the service shuts down or the kubelet hangs up.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "deviceplugin.grpc.pb.h"
#include "kubelet/InventoryChannel.hpp"

namespace qaic::qaicd {

// What one ListAndWatch stream sends for each inventory it sees: the resource's whole device
// list, and again only when what the kubelet sees of it (IDs, health, topology) changed; a
// partition made again under the same ID is not news.
class DeviceListUpdates {
 public:
  explicit DeviceListUpdates(std::string_view resource) : resource_(resource) {}
  // nullopt: the resource is not in `inventory`, or its list is the one sent last.
  std::optional<v1beta1::ListAndWatchResponse> next(const Inventory& inventory);

 private:
  const std::string resource_;
  std::optional<std::string> sent_;  // the last list sent, serialized
};

class DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  // Concurrent ListAndWatch streams per resource (the kubelet keeps one); more are refused with
  // RESOURCE_EXHAUSTED so a stray client cannot hold every gRPC thread.
  static constexpr int kMaxStreams = 4;
  // How often a waiting stream checks whether its peer went away.
  static constexpr std::chrono::milliseconds kStreamCheck{200};

  DevicePluginService(std::string resource, std::shared_ptr<const InventoryChannel> inventory)
      : resource_(std::move(resource)), inventory_(std::move(inventory)) {}

  // Ends every ListAndWatch stream promptly (before the server's Shutdown waits for them).
  void beginShutdown();

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* context, const v1beta1::Empty* request,
                                      v1beta1::DevicePluginOptions* response) override;
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty* request,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  // ListAndWatch's stream on any writer: gRPC's, or an in-process one (tests/fuzz).
  grpc::Status watch(const grpc::ServerContext& context,
                     grpc::ServerWriterInterface<v1beta1::ListAndWatchResponse>& writer);
  grpc::Status GetPreferredAllocation(grpc::ServerContext* context, const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext* context, const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse* response) override;

 private:
  // Checks the number of container requests, then takes the current inventory and this
  // resource in it (UNAVAILABLE before the first inventory).
  grpc::Status begin(int containers, std::shared_ptr<const Inventory>& inventory,
                     const ResourceInventory*& resource) const;

  const std::string resource_;
  const std::shared_ptr<const InventoryChannel> inventory_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> streams_{0};
};

}  // namespace qaic::qaicd
