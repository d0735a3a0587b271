// SPDX-License-Identifier: Apache-2.0
// kubelet_service's oracle (KubeletServiceChecks.hpp).
#include "KubeletServiceChecks.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "driver/DeviceRoot.hpp"

namespace qaic::fuzz {

using qaicd::Inventory;
using qaicd::quoteId;
using qaicd::ResourceInventory;
using qaicd::Unit;

namespace {

constexpr int kMaxContainers = 256;

// The refusal a request must draw: its code, how its message begins, the ID or number it names
// and the request field it names (a bad field; none for a unit that is not there right now).
struct Expected {
  grpc::StatusCode code = grpc::StatusCode::INVALID_ARGUMENT;
  std::string prefix, names, field;
};

std::string container(int i) { return "container_requests[" + std::to_string(i) + "]: "; }

std::optional<Expected> expectCommon(const Inventory* inventory, const std::string& resource, int containers,
                                     const ResourceInventory*& found) {
  if (containers < 1 || containers > kMaxContainers)
    return Expected{grpc::StatusCode::INVALID_ARGUMENT, "container_requests: ", std::to_string(containers), ""};
  found = inventory ? inventory->find(resource) : nullptr;
  if (found == nullptr) return Expected{grpc::StatusCode::UNAVAILABLE, "qaicd has no inventory of ", resource, ""};
  return std::nullopt;
}

template <typename Response>
void checkRefusal(const char* call, const std::optional<Expected>& expected, const grpc::Status& status,
                  const Response& response) {
  if (!expected) {
    if (!status.ok())
      violated(std::string(call) + " refused a valid request: " + std::to_string(status.error_code()) + " " +
               status.error_message());
    return;
  }
  if (status.ok())
    violated(std::string(call) + " accepted a request that must draw " + std::to_string(expected->code) + " " +
             expected->prefix + "... " + expected->names + "; answered " + response.ShortDebugString());
  const std::string& message = status.error_message();
  if (status.error_code() != expected->code || !message.starts_with(expected->prefix) ||
      message.find(expected->names) == std::string::npos || message.find(expected->field) == std::string::npos)
    violated(std::string(call) + " refused with " + std::to_string(status.error_code()) + " \"" + message +
             "\", expected " + std::to_string(expected->code) + " \"" + expected->prefix + "...\" naming " +
             expected->names + " and " + expected->field);
}

std::string joined(const std::vector<uint32_t>& nodes) {
  std::string out;
  for (uint32_t n : nodes) out += (out.empty() ? "" : ",") + std::to_string(n);
  return out;
}

std::optional<Expected> expectAllocate(const Inventory* inventory, const std::string& resource,
                                       const v1beta1::AllocateRequest& request, const ResourceInventory*& found) {
  if (auto e = expectCommon(inventory, resource, request.container_requests_size(), found)) return e;
  for (int i = 0; i < request.container_requests_size(); ++i) {
    const auto& ids = request.container_requests(i).devices_ids();
    const auto invalid = [&](std::string names) {
      return Expected{grpc::StatusCode::INVALID_ARGUMENT, container(i), std::move(names), "devices_ids"};
    };
    if (ids.empty()) return invalid("devices_ids");
    if (static_cast<std::size_t>(ids.size()) > found->units.size()) return invalid(std::to_string(ids.size()));
    std::set<std::string> seen;
    for (const std::string& id : ids) {
      const Unit* unit = found->find(id);
      if (unit == nullptr || !seen.insert(id).second) return invalid(quoteId(id));
      if (!unit->node) return Expected{grpc::StatusCode::UNAVAILABLE, container(i), quoteId(id), ""};
    }
  }
  return std::nullopt;
}

// One granted container: exactly the asked units' nodes, as device specs or mounts.
void checkGranted(const Inventory& inventory, const ResourceInventory& resource,
                  const v1beta1::ContainerAllocateRequest& asked, const v1beta1::ContainerAllocateResponse& answer) {
  std::vector<uint32_t> nodes;
  std::set<std::string> shm;
  for (const std::string& id : asked.devices_ids()) {
    const Unit* unit = resource.find(id);
    nodes.push_back(*unit->node);
    if (auto it = inventory.shmDirs.find(unit->device); it != inventory.shmDirs.end() && !it->second.empty())
      shm.insert(it->second);
  }
  std::sort(nodes.begin(), nodes.end());
  const std::string what = "Allocate of " + asked.ShortDebugString() + " answered " + answer.ShortDebugString();
  std::map<std::string, std::string> envs{{"QAIC_VISIBLE_DEVICES", joined(nodes)}};
  if (resource.partitions) envs["QAIC_PARTITION"] = joined(nodes);
  if (inventory.emulated) envs["QAIC_ROOT"] = inventory.root.string();
  if (std::map<std::string, std::string>(answer.envs().begin(), answer.envs().end()) != envs)
    violated(what + ": environment is not the asked units' nodes");

  const driver::DeviceRoot root(inventory.root);
  std::vector<std::string> devices, expectedDevices;
  for (const auto& d : answer.devices()) {
    if (d.container_path() != "/dev/accel/" + std::filesystem::path(d.host_path()).filename().string() ||
        d.permissions() != "rw")
      violated(what + ": device spec " + d.ShortDebugString());
    devices.push_back(d.host_path());
  }
  if (inventory.deviceSpecs || !inventory.emulated)
    for (uint32_t n : nodes) expectedDevices.push_back(root.nodePath(n).string());
  if (devices != expectedDevices) violated(what + ": device specs are not the asked units' nodes");

  std::set<std::pair<std::string, bool>> mounts, expectedMounts;
  for (const auto& m : answer.mounts()) {
    if (m.container_path() != m.host_path()) violated(what + ": mount " + m.ShortDebugString());
    mounts.emplace(m.host_path(), m.read_only());
  }
  if (inventory.emulated) {
    for (uint32_t n : nodes) {
      expectedMounts.emplace(root.nodePath(n).string(), false);
      expectedMounts.emplace(root.sysfsPath(n).string(), true);
    }
    for (const std::string& dir : shm) expectedMounts.emplace(dir, false);
  }
  if (mounts != expectedMounts || static_cast<std::size_t>(answer.mounts_size()) != mounts.size())
    violated(what + ": mounts are not the asked units' nodes and memory");
  if (answer.annotations_size() != 0 || answer.cdi_devices_size() != 0) violated(what + ": annotations or CDI");
}

std::optional<Expected> expectPreferred(const Inventory* inventory, const std::string& resource,
                                        const v1beta1::PreferredAllocationRequest& request,
                                        const ResourceInventory*& found) {
  if (auto e = expectCommon(inventory, resource, request.container_requests_size(), found)) return e;
  for (int i = 0; i < request.container_requests_size(); ++i) {
    const auto& c = request.container_requests(i);
    const auto invalid = [&](std::string field, std::string names) {
      return Expected{grpc::StatusCode::INVALID_ARGUMENT, container(i), std::move(names), std::move(field)};
    };
    const int64_t size = c.allocation_size();
    if (size < 1) return invalid("allocation_size", std::to_string(size));
    if (static_cast<std::size_t>(c.available_deviceids_size()) > found->units.size())
      return invalid("available_deviceIDs", std::to_string(c.available_deviceids_size()));
    if (c.must_include_deviceids_size() > c.available_deviceids_size())
      return invalid("must_include_deviceIDs", std::to_string(c.must_include_deviceids_size()));
    std::set<std::string> available;
    for (const std::string& id : c.available_deviceids())
      if (found->find(id) == nullptr || !available.insert(id).second)
        return invalid("available_deviceIDs", quoteId(id));
    if (size > c.available_deviceids_size()) return invalid("allocation_size", std::to_string(size));
    if (c.must_include_deviceids_size() > size)
      return invalid("must_include_deviceIDs", std::to_string(c.must_include_deviceids_size()));
    std::set<std::string> must;
    for (const std::string& id : c.must_include_deviceids())
      if (available.count(id) == 0 || !must.insert(id).second) return invalid("must_include_deviceIDs", quoteId(id));
  }
  return std::nullopt;
}

// One preferred allocation: exactly allocation_size distinct available units holding
// must_include, on one device when one device can hold them all and nothing is imposed.
void checkPreference(const ResourceInventory& resource, const v1beta1::ContainerPreferredAllocationRequest& asked,
                     const v1beta1::ContainerPreferredAllocationResponse& answer) {
  const std::string what = "GetPreferredAllocation of " + asked.ShortDebugString() + " answered " +
                           answer.ShortDebugString();
  const std::set<std::string> available(asked.available_deviceids().begin(), asked.available_deviceids().end());
  const std::set<std::string> chosen(answer.deviceids().begin(), answer.deviceids().end());
  if (answer.deviceids_size() != asked.allocation_size() ||
      chosen.size() != static_cast<std::size_t>(answer.deviceids_size()))
    violated(what + ": not allocation_size distinct IDs");
  for (const std::string& id : chosen)
    if (available.count(id) == 0) violated(what + ": " + quoteId(id) + " was not available");
  for (const std::string& id : asked.must_include_deviceids())
    if (chosen.count(id) == 0) violated(what + ": must_include " + quoteId(id) + " left out");
  if (asked.must_include_deviceids_size() != 0) {
    // The rest comes from the NUMA nodes of must_include while they have enough (when each
    // of those has one: a device of unknown node is filled up first).
    std::set<int64_t> numa;
    for (const std::string& id : asked.must_include_deviceids()) {
      const auto& node = resource.find(id)->numaNode;
      if (!node) return;
      numa.insert(*node);
    }
    auto near = [&](const std::string& id) {
      const auto& node = resource.find(id)->numaNode;
      return node && numa.count(*node) != 0;
    };
    const auto enough = std::count_if(available.begin(), available.end(), near) >= asked.allocation_size();
    if (enough && !std::all_of(chosen.begin(), chosen.end(), near))
      violated(what + ": left the NUMA nodes of must_include although they had room");
    return;
  }
  std::map<uint32_t, int> perDevice;
  for (const std::string& id : available) ++perDevice[resource.find(id)->device];
  const bool oneFits = std::any_of(perDevice.begin(), perDevice.end(),
                                   [&](const auto& d) { return d.second >= asked.allocation_size(); });
  std::set<uint32_t> used;
  for (const std::string& id : chosen) used.insert(resource.find(id)->device);
  if (oneFits && used.size() != 1) violated(what + ": spread over devices although one holds them all");
}

// The refusal `expect` computes, or one answer per container, each checked by checkContainer.
template <typename Request, typename Response, typename Expect, typename CheckContainer>
void checkAnswer(const char* call, const Inventory* inventory, const std::string& resource, const Request& request,
                 const grpc::Status& status, const Response& response, Expect expect, CheckContainer checkContainer) {
  const ResourceInventory* found = nullptr;
  const auto expected = expect(inventory, resource, request, found);
  checkRefusal(call, expected, status, response);
  if (expected) return;
  if (response.container_responses_size() != request.container_requests_size())
    violated(std::string(call) + ": " + std::to_string(response.container_responses_size()) + " answers to " +
             std::to_string(request.container_requests_size()) + " containers");
  for (int i = 0; i < request.container_requests_size(); ++i) checkContainer(*found, i);
}

}  // namespace

void violated(const std::string& what) {
  std::fprintf(stderr, "kubelet_service: %s\n", what.c_str());
  std::abort();
}

void checkInventory(const Node& node, const Inventory& inventory) {
  const auto names = node.profileNames();
  if (inventory.resources.size() != names.size() + 1 || inventory.resources[0].name != qaicd::kWholeDeviceResource)
    violated("inventory: not the whole-device resource and one per profile");
  std::map<uint32_t, const qaicd::OfferedDevice*> devices;
  for (const auto& d : node.devices) devices[d.index] = &d;
  for (std::size_t r = 0; r < inventory.resources.size(); ++r) {
    const ResourceInventory& resource = inventory.resources[r];
    std::set<std::string> ids;
    std::map<uint32_t, uint32_t> slots;
    std::set<uint32_t> nodes;
    for (const Unit& u : resource.units) {
      const std::string what = "inventory: " + resource.name + " unit " + quoteId(u.id);
      if (!ids.insert(u.id).second) violated(what + " listed twice");
      if (u.healthy && !u.node) violated(what + " Healthy without a node");
      if (u.node && !nodes.insert(*u.node).second) violated(what + " shares its node");
      ++slots[u.device];
      if (r == 0) {
        if (u.node != u.device || devices.count(u.device) == 0) violated(what + " is not its device's node");
        continue;
      }
      if (!u.node) continue;
      const auto partition = std::find_if(node.partitions.begin(), node.partitions.end(),
                                          [&](const qaicd::OfferedPartition& p) { return p.id == *u.node; });
      const auto slot = partition == node.partitions.end() ? std::nullopt : qaicd::parseProfileLabel(partition->label);
      if (!slot || !partition->isStatic || partition->device != u.device || slot->profile != names[r - 1] ||
          u.id != devices.at(u.device)->id + "-" + slot->profile + "-" + std::to_string(slot->slot))
        violated(what + " is not a static partition of its slot on its device");
    }
    for (const auto& d : node.devices) {
      const bool mine = r == 0 ? d.profile.empty() : d.profile == names[r - 1];
      const uint32_t expected = mine ? (r == 0 ? 1 : d.slots) : 0;
      if (slots[d.index] != expected) violated("inventory: " + resource.name + " has the wrong slots of " + d.id);
    }
  }
}

void checkAllocate(const Inventory* inventory, const std::string& resource, const v1beta1::AllocateRequest& request,
                   const grpc::Status& status, const v1beta1::AllocateResponse& response) {
  checkAnswer("Allocate", inventory, resource, request, status, response, expectAllocate,
              [&](const ResourceInventory& found, int i) {
                checkGranted(*inventory, found, request.container_requests(i), response.container_responses(i));
              });
}

void checkPreferred(const Inventory* inventory, const std::string& resource,
                    const v1beta1::PreferredAllocationRequest& request, const grpc::Status& status,
                    const v1beta1::PreferredAllocationResponse& response) {
  checkAnswer("GetPreferredAllocation", inventory, resource, request, status, response, expectPreferred,
              [&](const ResourceInventory& found, int i) {
                checkPreference(found, request.container_requests(i), response.container_responses(i));
              });
}

void checkDeviceList(const ResourceInventory& resource, const v1beta1::ListAndWatchResponse& response) {
  bool same = static_cast<std::size_t>(response.devices_size()) == resource.units.size();
  for (std::size_t i = 0; same && i < resource.units.size(); ++i) {
    const Unit& u = resource.units[i];
    const auto& d = response.devices(static_cast<int>(i));
    same = d.id() == u.id && d.health() == (u.healthy ? "Healthy" : "Unhealthy") &&
           d.topology().nodes_size() == (u.numaNode ? 1 : 0) &&
           (!u.numaNode || d.topology().nodes(0).id() == *u.numaNode);
  }
  if (!same) violated("ListAndWatch of " + resource.name + " answered " + response.ShortDebugString());
}

}  // namespace qaic::fuzz
