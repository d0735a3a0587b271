// SPDX-License-Identifier: Apache-2.0
#include "kubelet/Inventory.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "driver/DeviceRoot.hpp"
#include "kubelet/Profiles.hpp"

namespace qaic::qaicd {

namespace {

Refusal invalid(std::string message) { return Refusal{Refusal::Code::InvalidArgument, std::move(message)}; }

std::string joinNodes(const std::vector<uint32_t>& nodes) {
  std::string out;
  for (uint32_t n : nodes) out += (out.empty() ? "" : ",") + std::to_string(n);
  return out;
}

// An emulated node's class directory is mounted at its class path, so inside the container its
// relative `device` link (to the PCI function: numa_node, hwmon, link attributes) resolves from
// there, not from where the kernel-like tree keeps it. The function is mounted where that link then
// leads. None for a tree without the link (an emulator that predates it, a path not there yet).
std::optional<ContainerAllocation::MountSpec> pciFunctionMount(const std::filesystem::path& classDir) {
  std::error_code error;
  const std::filesystem::path link = classDir / "device";
  const std::filesystem::path target = std::filesystem::read_symlink(link, error);  // fails for a non-link
  if (error) return std::nullopt;
  const std::filesystem::path function = std::filesystem::canonical(link, error);
  if (error) return std::nullopt;
  return ContainerAllocation::MountSpec{(classDir / target).lexically_normal().string(), function.string(), true};
}

}  // namespace

std::string quoteText(std::string_view text, std::size_t shown) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && i < shown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  out += '"';
  if (text.size() > shown) out += " (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string quoteId(std::string_view id) { return quoteText(id, 64); }

const Unit* ResourceInventory::find(std::string_view id) const {
  // Units are few (at most 64 per device); a linear scan beats building an index per call.
  for (const Unit& u : units)
    if (u.id == id) return &u;
  return nullptr;
}

const ResourceInventory* Inventory::find(std::string_view resource) const {
  for (const ResourceInventory& r : resources)
    if (r.name == resource) return &r;
  return nullptr;
}

Inventory offerInventory(Inventory base, const std::vector<std::string>& profiles,
                         const std::vector<OfferedDevice>& devices, const std::vector<OfferedPartition>& partitions) {
  Inventory inventory = std::move(base);
  inventory.shmDirs.clear();
  inventory.resources.clear();
  ResourceInventory whole{std::string(kWholeDeviceResource), false, {}};
  std::map<std::string, ResourceInventory> byProfile;
  for (const std::string& p : profiles)
    byProfile.emplace(p, ResourceInventory{std::string(kResourceDomain) + p, true, {}});

  std::map<std::tuple<uint32_t, std::string, uint32_t>, uint32_t> partitionOf;
  for (const OfferedPartition& p : partitions)
    if (auto slot = parseProfileLabel(p.label); slot && p.isStatic)
      partitionOf.emplace(std::make_tuple(p.device, slot->profile, slot->slot), p.id);

  for (const OfferedDevice& d : devices) {
    if (inventory.emulated) inventory.shmDirs[d.index] = d.shmDir;
    uint32_t group = d.index;
    for (uint32_t peer : d.p2pPeers) group = std::min(group, peer);
    auto profile = byProfile.find(d.profile);
    if (profile == byProfile.end()) {
      whole.units.push_back(Unit{d.id, d.healthy, d.numaNode, d.index, d.index, group});
      continue;
    }
    // Every slot is listed, so its ID stays known while its partition is away (a reset ends
    // partitions; the next rescan makes them again): Unhealthy until it is back.
    for (uint32_t slot = 0; slot < d.slots; ++slot) {
      auto it = partitionOf.find({d.index, d.profile, slot});
      std::optional<uint32_t> node;
      if (it != partitionOf.end()) node = it->second;
      profile->second.units.push_back(Unit{d.id + "-" + d.profile + "-" + std::to_string(slot),
                                           d.healthy && node.has_value(), d.numaNode, d.index, node, group});
    }
  }
  inventory.resources.push_back(std::move(whole));
  for (const std::string& p : profiles) inventory.resources.push_back(std::move(byProfile.at(p)));
  return inventory;
}

std::variant<ContainerAllocation, Refusal> allocateContainer(const Inventory& inventory,
                                                             const ResourceInventory& resource,
                                                             const std::vector<std::string>& ids) {
  if (ids.empty()) return invalid("devices_ids: empty; name at least one " + resource.name + " device");
  // Checked before any lookup, so a request with thousands of IDs costs nothing.
  if (ids.size() > resource.units.size())
    return invalid("devices_ids: " + std::to_string(ids.size()) + " " + resource.name +
                   " devices requested, but this node has " + std::to_string(resource.units.size()));
  std::vector<uint32_t> nodes;
  std::set<uint32_t> devices;
  std::unordered_set<std::string_view> seen;
  for (const std::string& id : ids) {
    const Unit* unit = resource.find(id);
    if (unit == nullptr) return invalid("devices_ids: unknown device ID " + quoteId(id) + " for " + resource.name);
    if (!seen.insert(id).second) return invalid("devices_ids: device ID " + quoteId(id) + " is named twice");
    if (!unit->node)
      return Refusal{Refusal::Code::Unavailable,
                     "device ID " + quoteId(id) + ": its partition is not on device " + std::to_string(unit->device) +
                         " right now (the device is resetting or has no room); qaicd creates it again when it can"};
    nodes.push_back(*unit->node);
    devices.insert(unit->device);
  }
  std::sort(nodes.begin(), nodes.end());

  ContainerAllocation a;
  const driver::DeviceRoot root(inventory.root);
  if (inventory.deviceSpecs || !inventory.emulated)
    for (uint32_t n : nodes)
      a.devices.push_back({"/dev/accel/accel" + std::to_string(n), root.nodePath(n).string(), "rw"});
  a.envs["QAIC_VISIBLE_DEVICES"] = joinNodes(nodes);
  if (resource.partitions) a.envs["QAIC_PARTITION"] = joinNodes(nodes);
  if (inventory.emulated) {
    // qaic-emu's nodes are files of its FUSE tree, not device nodes: the container sees the
    // emulated tree at the same path (only its own nodes and their attributes) and the shared
    // memory its buffers live in, and libqaic finds it through QAIC_ROOT.
    a.envs["QAIC_ROOT"] = inventory.root.string();
    for (uint32_t n : nodes) {
      a.mounts.push_back({root.nodePath(n).string(), root.nodePath(n).string(), false});
      a.mounts.push_back({root.sysfsPath(n).string(), root.sysfsPath(n).string(), true});
      if (auto function = pciFunctionMount(root.sysfsPath(n))) a.mounts.push_back(*function);
    }
    std::set<std::string> shm;
    for (uint32_t d : devices)
      if (auto it = inventory.shmDirs.find(d); it != inventory.shmDirs.end() && !it->second.empty())
        shm.insert(it->second);
    for (const std::string& dir : shm) a.mounts.push_back({dir, dir, false});
  }
  return a;
}

std::variant<std::vector<std::string>, Refusal> preferredAllocation(const ResourceInventory& resource,
                                                                    const std::vector<std::string>& available,
                                                                    const std::vector<std::string>& mustInclude,
                                                                    int64_t size) {
  if (size < 1) return invalid("allocation_size: " + std::to_string(size) + " (must be at least 1)");
  if (available.size() > resource.units.size())
    return invalid(std::to_string(available.size()) + " available_deviceIDs, but " + resource.name + " has " +
                   std::to_string(resource.units.size()) + " devices on this node");
  if (mustInclude.size() > available.size())
    return invalid(std::to_string(mustInclude.size()) + " must_include_deviceIDs but only " +
                   std::to_string(available.size()) + " available_deviceIDs");
  std::unordered_map<std::string_view, const Unit*> offered;
  for (const std::string& id : available) {
    const Unit* unit = resource.find(id);
    if (unit == nullptr)
      return invalid("unknown device ID " + quoteId(id) + " in available_deviceIDs for " + resource.name);
    if (!offered.emplace(id, unit).second)
      return invalid("device ID " + quoteId(id) + " is named twice in available_deviceIDs");
  }
  if (static_cast<uint64_t>(size) > offered.size())
    return invalid("allocation_size " + std::to_string(size) + " is more than the " + std::to_string(offered.size()) +
                   " available devices");
  if (mustInclude.size() > static_cast<uint64_t>(size))
    return invalid(std::to_string(mustInclude.size()) + " must_include_deviceIDs exceed allocation_size " +
                   std::to_string(size));

  std::vector<std::string> chosen;
  std::unordered_set<std::string_view> taken;
  std::map<uint32_t, int> usedOnDevice;  // device -> units chosen there
  std::set<int64_t> numaChosen;
  auto choose = [&](const Unit* unit) {
    chosen.push_back(unit->id);
    taken.insert(unit->id);
    ++usedOnDevice[unit->device];
    if (unit->numaNode) numaChosen.insert(*unit->numaNode);
  };
  for (const std::string& id : mustInclude) {
    auto it = offered.find(id);
    if (it == offered.end())
      return invalid("must_include_deviceIDs: device ID " + quoteId(id) + " is not among available_deviceIDs");
    if (taken.count(it->second->id) != 0)
      return invalid("device ID " + quoteId(id) + " is named twice in must_include_deviceIDs");
    choose(it->second);
  }

  // What is left to choose from, per device, in the inventory's (stable) order.
  std::map<uint32_t, std::vector<const Unit*>> free;
  std::map<uint32_t, uint32_t> groupOf;  // device -> its p2p group
  for (const Unit& u : resource.units) {
    groupOf[u.device] = u.p2pGroup;
    if (offered.count(u.id) != 0 && taken.count(u.id) == 0) free[u.device].push_back(&u);
  }
  auto takeFrom = [&](uint32_t device, uint64_t count) {
    auto& units = free[device];
    const uint64_t n = std::min<uint64_t>(count, units.size());
    for (uint64_t i = 0; i < n; ++i) choose(units[i]);
    units.erase(units.begin(), units.begin() + static_cast<std::ptrdiff_t>(n));
  };
  auto remaining = [&] { return static_cast<uint64_t>(size) - chosen.size(); };
  auto onChosenNuma = [&](const Unit* unit) { return unit->numaNode && numaChosen.count(*unit->numaNode) != 0; };

  // Takes `count` units from the devices of `group`, on as few devices as possible.
  auto packWithin = [&](uint32_t group, uint64_t count) {
    const std::size_t goal = chosen.size() + count;
    while (chosen.size() < goal) {
      const uint64_t need = goal - chosen.size();
      std::optional<uint32_t> fit, largest;
      uint64_t fitSize = 0, largestSize = 0;
      // Two passes: devices on a NUMA node already chosen, then any.
      for (int pass = 0; pass < 2 && !fit && !largest; ++pass) {
        for (const auto& [device, units] : free) {
          if (units.empty() || groupOf[device] != group) continue;
          if (pass == 0 && !numaChosen.empty() && !onChosenNuma(units.front())) continue;
          const uint64_t n = units.size();
          if (n >= need && (!fit || n < fitSize)) fit = device, fitSize = n;
          if (!largest || n > largestSize) largest = device, largestSize = n;
        }
      }
      if (!fit && !largest) return;  // cannot happen: count <= the group's free units
      takeFrom(fit ? *fit : *largest, need);
    }
  };
  auto freeIn = [&](uint32_t group) {
    uint64_t n = 0;
    for (const auto& [device, units] : free)
      if (groupOf[device] == group) n += units.size();
    return n;
  };

  // Devices the must-include units already use come first, the most used first.
  std::vector<std::pair<int, uint32_t>> used;
  for (const auto& [device, count] : usedOnDevice) used.emplace_back(-count, device);
  std::sort(used.begin(), used.end());
  for (const auto& [negCount, device] : used)
    if (remaining() > 0) takeFrom(device, remaining());

  // Then the rest of their p2p groups, the group holding the most of them first.
  std::map<uint32_t, int> usedInGroup;
  for (const auto& [device, count] : usedOnDevice) usedInGroup[groupOf[device]] += count;
  std::vector<std::pair<int, uint32_t>> groupsUsed;
  for (const auto& [group, count] : usedInGroup) groupsUsed.emplace_back(-count, group);
  std::sort(groupsUsed.begin(), groupsUsed.end());
  for (const auto& [negCount, group] : groupsUsed)
    if (remaining() > 0) packWithin(group, std::min(remaining(), freeIn(group)));

  // Then whole groups: the one that holds the rest most tightly, else the one with the most.
  while (remaining() > 0) {
    const uint64_t need = remaining();
    std::map<uint32_t, uint64_t> groupFree;
    std::set<uint32_t> onNuma;  // groups with a free unit on a NUMA node already chosen
    for (const auto& [device, units] : free) {
      if (units.empty()) continue;
      groupFree[groupOf[device]] += units.size();
      if (onChosenNuma(units.front())) onNuma.insert(groupOf[device]);
    }
    std::optional<uint32_t> fit, largest;
    uint64_t fitSize = 0, largestSize = 0;
    for (int pass = 0; pass < 2 && !fit && !largest; ++pass) {
      for (const auto& [group, n] : groupFree) {
        if (pass == 0 && !numaChosen.empty() && onNuma.count(group) == 0) continue;
        if (n >= need && (!fit || n < fitSize)) fit = group, fitSize = n;
        if (!largest || n > largestSize) largest = group, largestSize = n;
      }
    }
    if (!fit && !largest) break;  // cannot happen: size <= offered
    const uint32_t group = fit ? *fit : *largest;
    packWithin(group, std::min(need, groupFree[group]));
  }
  return chosen;
}

}  // namespace qaic::qaicd
