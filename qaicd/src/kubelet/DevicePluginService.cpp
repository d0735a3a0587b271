// SPDX-License-Identifier: Apache-2.0
#include "kubelet/DevicePluginService.hpp"

#include "Log.hpp"

namespace qaic::qaicd {

namespace {

// Containers per Allocate or GetPreferredAllocation: a pod has at most a few dozen.
constexpr int kMaxContainers = 256;

// A refused container request, its index in the message.
grpc::Status refuse(int container, const Refusal& refusal) {
  return grpc::Status(
      refusal.code == Refusal::Code::Unavailable ? grpc::StatusCode::UNAVAILABLE : grpc::StatusCode::INVALID_ARGUMENT,
      "container_requests[" + std::to_string(container) + "]: " + refusal.message);
}

std::vector<std::string> toVector(const google::protobuf::RepeatedPtrField<std::string>& ids) {
  return std::vector<std::string>(ids.begin(), ids.end());
}

void fill(v1beta1::ListAndWatchResponse& response, const ResourceInventory& resource) {
  for (const Unit& unit : resource.units) {
    v1beta1::Device* device = response.add_devices();
    device->set_id(unit.id);
    device->set_health(unit.healthy ? "Healthy" : "Unhealthy");
    if (unit.numaNode) device->mutable_topology()->add_nodes()->set_id(*unit.numaNode);
  }
}

}  // namespace

void DevicePluginService::beginShutdown() {
  stopping_ = true;
  inventory_->wake();
}

grpc::Status DevicePluginService::begin(int containers, std::shared_ptr<const Inventory>& inventory,
                                        const ResourceInventory*& resource) const {
  if (containers < 1 || containers > kMaxContainers)
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "container_requests: " + std::to_string(containers) +
                                                                " (1 to " + std::to_string(kMaxContainers) + ")");
  inventory = inventory_->current();
  resource = inventory ? inventory->find(resource_) : nullptr;
  if (resource == nullptr)
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "qaicd has no inventory of " + resource_ + " yet");
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                                         v1beta1::DevicePluginOptions* response) {
  response->set_pre_start_required(false);
  response->set_get_preferred_allocation_available(true);
  return grpc::Status::OK;
}

std::optional<v1beta1::ListAndWatchResponse> DeviceListUpdates::next(const Inventory& inventory) {
  const ResourceInventory* resource = inventory.find(resource_);
  if (resource == nullptr) return std::nullopt;
  v1beta1::ListAndWatchResponse response;
  fill(response, *resource);
  std::string bytes = response.SerializeAsString();
  if (sent_ && *sent_ == bytes) return std::nullopt;
  sent_ = std::move(bytes);
  return response;
}

grpc::Status DevicePluginService::ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty*,
                                               grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  return watch(*context, *writer);
}

grpc::Status DevicePluginService::watch(const grpc::ServerContext& context,
                                        grpc::ServerWriterInterface<v1beta1::ListAndWatchResponse>& writer) {
  if (streams_.fetch_add(1) >= kMaxStreams) {
    streams_.fetch_sub(1);
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "ListAndWatch: " + std::to_string(kMaxStreams) +
                                                                  " streams of " + resource_ + " are open already");
  }
  struct Release {
    std::atomic<int>& count;
    ~Release() { count.fetch_sub(1); }
  } release{streams_};

  // The whole list at once, then again whenever it changed.
  uint64_t seen = 0;
  DeviceListUpdates updates(resource_);
  while (!stopping_ && !context.IsCancelled()) {
    auto inventory = inventory_->waitNewer(seen, kStreamCheck, stopping_);
    if (!inventory) continue;
    seen = inventory->generation;
    auto response = updates.next(*inventory);
    if (response && !writer.Write(*response)) break;  // the kubelet went away, or the server is shutting down
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::GetPreferredAllocation(grpc::ServerContext*,
                                                         const v1beta1::PreferredAllocationRequest* request,
                                                         v1beta1::PreferredAllocationResponse* response) {
  std::shared_ptr<const Inventory> inventory;
  const ResourceInventory* resource = nullptr;
  if (auto status = begin(request->container_requests_size(), inventory, resource); !status.ok()) return status;
  for (int i = 0; i < request->container_requests_size(); ++i) {
    const auto& container = request->container_requests(i);
    auto chosen = preferredAllocation(*resource, toVector(container.available_deviceids()),
                                      toVector(container.must_include_deviceids()), container.allocation_size());
    if (auto* refusal = std::get_if<Refusal>(&chosen)) return refuse(i, *refusal);
    auto* out = response->add_container_responses();
    for (const std::string& id : std::get<std::vector<std::string>>(chosen)) out->add_deviceids(id);
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
                                           v1beta1::AllocateResponse* response) {
  std::shared_ptr<const Inventory> inventory;
  const ResourceInventory* resource = nullptr;
  if (auto status = begin(request->container_requests_size(), inventory, resource); !status.ok()) return status;
  std::string granted;
  for (int i = 0; i < request->container_requests_size(); ++i) {
    const auto& container = request->container_requests(i);
    auto allocation = allocateContainer(*inventory, *resource, toVector(container.devices_ids()));
    if (auto* refusal = std::get_if<Refusal>(&allocation)) {
      const grpc::Status status = refuse(i, *refusal);
      logWarn("Allocate " + resource_ + " refused: " + status.error_message());
      return status;
    }
    const auto& a = std::get<ContainerAllocation>(allocation);
    auto* out = response->add_container_responses();
    for (const auto& [name, value] : a.envs) (*out->mutable_envs())[name] = value;
    for (const auto& d : a.devices) {
      auto* spec = out->add_devices();
      spec->set_container_path(d.containerPath);
      spec->set_host_path(d.hostPath);
      spec->set_permissions(d.permissions);
    }
    for (const auto& m : a.mounts) {
      auto* mount = out->add_mounts();
      mount->set_container_path(m.containerPath);
      mount->set_host_path(m.hostPath);
      mount->set_read_only(m.readOnly);
    }
    granted += (granted.empty() ? "" : "; ") + a.envs.at("QAIC_VISIBLE_DEVICES");
  }
  logInfo("Allocate " + resource_ + ": accel " + granted);
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                                    v1beta1::PreStartContainerResponse*) {
  // pre_start_required is false: the kubelet does not call this; answering is harmless.
  return grpc::Status::OK;
}

}  // namespace qaic::qaicd
