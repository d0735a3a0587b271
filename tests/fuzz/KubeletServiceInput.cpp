// SPDX-License-Identifier: Apache-2.0
// Reading the node of a kubelet_service input (KubeletServiceInput.hpp) through qaicd's own
// profile parsing and partition arithmetic.
#include "KubeletServiceInput.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "Config.hpp"

namespace qaic::fuzz {

using qaicd::K8sProfile;
using qaicd::OfferedDevice;
using qaicd::OfferedPartition;

namespace {

nlohmann::json readProfile(InputReader& in) {
  nlohmann::json p = nlohmann::json::object();
  // Any bytes: names the parser must refuse as well as good ones; JSON holds them as strings
  // only when they are UTF-8, so others are refused here the way the config file's reader would.
  std::string name = in.text(in.u8() % 32);
  p["name"] = nlohmann::json(name);
  switch (static_cast<DevicesKind>(in.u8() % static_cast<uint8_t>(DevicesKind::Count))) {
    case DevicesKind::Absent: break;
    case DevicesKind::All: p["devices"] = "all"; break;
    case DevicesKind::Indices: {
      nlohmann::json devices = nlohmann::json::array();
      for (int n = in.u8() % 5; n > 0; --n) devices.push_back(in.u8());
      p["devices"] = devices;
      break;
    }
    case DevicesKind::NotAnArray: p["devices"] = in.u8(); break;
    case DevicesKind::Count: break;
  }
  if (const uint8_t perDevice = in.u8(); perDevice != 0) p["per_device"] = perDevice;
  p["numNsp"] = in.u8() % 17;
  p["numVc"] = 1;
  return p;
}

std::string deviceId(IdKind kind, uint32_t index) {
  if (kind == IdKind::Accel) return "accel" + std::to_string(index);
  char pci[16];
  std::snprintf(pci, sizeof pci, "0000:%02x:00.0", index & 0xff);
  return pci;
}

}  // namespace

std::vector<std::string> Node::profileNames() const {
  std::vector<std::string> names;
  for (const K8sProfile& p : profiles) names.push_back(p.name);
  return names;
}

qaicd::Inventory Node::offer() const { return qaicd::offerInventory(base, profileNames(), devices, partitions); }

Node readNode(InputReader& in) {
  Node node;
  const uint8_t flags = in.u8();
  node.base.emulated = (flags & kEmulated) != 0;
  node.base.root = node.base.emulated ? "/tmp/qaic-emu-root" : "/";
  node.base.deviceSpecs = (flags & kMountsOnly) == 0;

  nlohmann::json profiles = nlohmann::json::array();
  for (int n = in.u8() % 4; n > 0; --n) profiles.push_back(readProfile(in));
  try {
    node.profilesJson = profiles.dump();
    node.profiles = qaicd::parseK8sProfiles(profiles, "qaicd.json");
  } catch (const qaicd::ConfigError& e) {
    node.profilesError = e.what();
  } catch (const nlohmann::json::exception& e) {
    node.profilesError = e.what();  // a name that is not UTF-8 cannot be in a config file
  }

  uint32_t index = 0;
  const int devices = in.u8() % 9;
  for (int i = 0; i < devices; ++i) {
    index += (i == 0 ? 0 : 1) + in.u8() % 3;
    OfferedDevice d;
    d.index = index;
    d.id = deviceId(static_cast<IdKind>(in.u8() % static_cast<uint8_t>(IdKind::Count)), index);
    if (const uint8_t numa = in.u8(); numa != kUnknownNuma) d.numaNode = numa % 3;
    d.healthy = (in.u8() & 1) != 0;
    qaic::rt::Resources total;
    total.numNsp = in.u8() % 17;
    total.numVc = total.numMcid = total.numSem = 16;
    total.ddrSize = uint64_t{16} << 30;
    if (node.base.emulated) d.shmDir = "/dev/shm/qaic-emu-" + std::to_string(index % 3);
    if (const K8sProfile* profile = qaicd::profileForDevice(node.profiles, index)) {
      d.profile = profile->name;
      d.slots = qaicd::partitionsPerDevice(*profile, index, total, {});
    }
    node.devices.push_back(std::move(d));
  }

  uint32_t partitionId = 100;
  for (int n = in.u8() % 32; n > 0; --n) {
    OfferedPartition p;
    p.id = partitionId++;
    const uint8_t pick = in.u8();
    const OfferedDevice* device = node.devices.empty() ? nullptr : &node.devices[pick % node.devices.size()];
    p.device = device ? device->index : pick;
    const uint32_t slot = in.u8() % 70;
    switch (static_cast<LabelKind>(in.u8() % static_cast<uint8_t>(LabelKind::Count))) {
      case LabelKind::OwnProfile:
        if (device && !device->profile.empty()) p.label = qaicd::profileLabel(device->profile, slot);
        break;
      case LabelKind::OtherProfile:
        if (!node.profiles.empty())
          p.label = qaicd::profileLabel(node.profiles[slot % node.profiles.size()].name, slot);
        break;
      case LabelKind::Static: p.label = "static:team"; break;
      case LabelKind::Raw: p.label = in.text(in.u8() % 32); break;
      case LabelKind::Count: break;
    }
    p.isStatic = (in.u8() & 1) != 0;
    node.partitions.push_back(std::move(p));
  }
  return node;
}

void changeNode(Node& node, InputReader& in) {
  const uint8_t what = in.u8();
  const uint8_t pick = in.u8();
  switch (what % 3) {
    case 0:
      if (!node.devices.empty()) node.devices[pick % node.devices.size()].healthy ^= true;
      break;
    case 1:
      if (!node.partitions.empty()) node.partitions.erase(node.partitions.begin() + pick % node.partitions.size());
      break;
    case 2:
      // A partition made again for a slot, under a new accel index (as after a reset).
      if (!node.devices.empty()) {
        const OfferedDevice& d = node.devices[pick % node.devices.size()];
        if (!d.profile.empty() && d.slots > 0) {
          uint32_t id = 100;
          for (const OfferedPartition& p : node.partitions) id = std::max(id, p.id + 1);
          node.partitions.push_back({id, d.index, qaicd::profileLabel(d.profile, in.u8() % d.slots), true});
        }
      }
      break;
  }
}

}  // namespace qaic::fuzz
