// SPDX-License-Identifier: Apache-2.0
#include "kubelet/Profiles.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>

#include "Config.hpp"
#include "driver/DeviceProtocol.hpp"

namespace qaic::qaicd {

using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& source, const std::string& message) {
  throw ConfigError(source + ": " + message);
}

// The name part of a Kubernetes extended resource (a qualified name): alphanumerics, '-', '_'
// and '.', beginning and ending with an alphanumeric. Lower case, as resource names are written.
bool isResourceNamePart(std::string_view name) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (name.empty() || !alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

K8sProfile parseProfile(const json& entry, const std::string& source, const std::string& where) {
  if (!entry.is_object()) fail(source, where + ": must be an object");
  K8sProfile p;
  p.allDevices = true;
  for (const auto& [key, value] : entry.items()) {
    const std::string field = where + "." + key;
    if (key == "name") {
      if (!value.is_string()) fail(source, field + ": must be a string");
      p.name = value.get<std::string>();
      if (p.name.size() > kMaxProfileNameBytes || !isResourceNamePart(p.name))
        fail(source, field + ": \"" + p.name + "\" is not a resource name: at most " +
                         std::to_string(kMaxProfileNameBytes) +
                         " of a-z, 0-9, '-', '_', '.', beginning and ending with a letter or digit");
      if (std::string(kResourceDomain) + p.name == kWholeDeviceResource)
        fail(source, field + ": \"qaic\" is the whole-device resource");
    } else if (key == "devices") {
      if (value.is_string() && value.get<std::string>() == "all") {
        p.allDevices = true;
      } else if (value.is_array() && !value.empty()) {
        p.allDevices = false;
        for (std::size_t i = 0; i < value.size(); ++i) {
          const json& d = value[i];
          if (!d.is_number_unsigned() || d.get<uint64_t>() >= driver::kFirstPartitionId)
            fail(source, field + "[" + std::to_string(i) + "]: must be a device index below " +
                             std::to_string(driver::kFirstPartitionId));
          if (!p.devices.insert(d.get<uint32_t>()).second)
            fail(source,
                 field + "[" + std::to_string(i) + "]: device " + std::to_string(d.get<uint32_t>()) + " named twice");
        }
      } else {
        fail(source, field + ": must be \"all\" or a non-empty array of device indices");
      }
    } else if (key == "per_device") {
      if (!value.is_number_unsigned() || value.get<uint64_t>() < 1 || value.get<uint64_t>() > kMaxPartitionsPerDevice)
        fail(source, field + ": must be an integer in 1.." + std::to_string(kMaxPartitionsPerDevice));
      p.perDevice = value.get<uint32_t>();
    } else if (!isResourceField(key)) {
      fail(source, field + ": unknown field");
    }
  }
  if (p.name.empty()) fail(source, where + ".name: missing");
  auto resources = parseResources(entry, where + ".");
  if (auto* e = std::get_if<ProtocolError>(&resources)) fail(source, e->message);
  p.resources = std::get<Resources>(resources);
  return p;
}

}  // namespace

std::vector<K8sProfile> parseK8sProfiles(const json& value, const std::string& source) {
  if (!value.is_array()) fail(source, "k8s_profiles: must be an array");
  std::vector<K8sProfile> profiles;
  std::set<std::string> names;
  std::map<uint32_t, std::string> owners;  // device -> the profile naming it
  const K8sProfile* all = nullptr;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string where = "k8s_profiles[" + std::to_string(i) + "]";
    K8sProfile p = parseProfile(value[i], source, where);
    if (!names.insert(p.name).second) fail(source, where + ".name: \"" + p.name + "\" used twice");
    for (uint32_t d : p.devices) {
      auto [it, fresh] = owners.emplace(d, p.name);
      if (!fresh)
        fail(source, where + ".devices: device " + std::to_string(d) + " is already given to \"" + it->second + "\"");
    }
    profiles.push_back(std::move(p));
  }
  for (const K8sProfile& p : profiles) {
    if (!p.allDevices) continue;
    if (all != nullptr)
      fail(source, "k8s_profiles: \"" + all->name + "\" and \"" + p.name +
                       "\" both take every device; give at least one of them \"devices\": [indices]");
    all = &p;
  }
  return profiles;
}

std::string profileLabel(const std::string& profile, uint32_t slot) {
  return std::string(kProfileLabelPrefix) + profile + ":" + std::to_string(slot);
}

std::optional<ProfileSlot> parseProfileLabel(std::string_view label) {
  if (!label.starts_with(kProfileLabelPrefix)) return std::nullopt;
  label.remove_prefix(kProfileLabelPrefix.size());
  const auto colon = label.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == label.size()) return std::nullopt;
  uint32_t slot = 0;
  const char* begin = label.data() + colon + 1;
  const char* end = label.data() + label.size();
  auto [stop, ec] = std::from_chars(begin, end, slot);
  if (ec != std::errc() || stop != end || slot >= kMaxPartitionsPerDevice) return std::nullopt;
  return ProfileSlot{std::string(label.substr(0, colon)), slot};
}

const K8sProfile* profileForDevice(const std::vector<K8sProfile>& profiles, uint32_t device) {
  const K8sProfile* all = nullptr;
  for (const K8sProfile& p : profiles) {
    if (p.devices.count(device) != 0) return &p;
    if (p.allDevices) all = &p;
  }
  return all;
}

uint32_t partitionsPerDevice(const K8sProfile& profile, uint32_t device, const Resources& total,
                             const std::vector<StaticPartition>& statics) {
  if (profile.perDevice) return *profile.perDevice;
  Resources left = total;
  auto take = [](auto& from, auto amount) { from = from > amount ? from - amount : 0; };
  for (const StaticPartition& s : statics) {
    if (s.device != device) continue;
    take(left.numNsp, s.resources.numNsp);
    take(left.numMcid, s.resources.numMcid);
    take(left.numSem, s.resources.numSem);
    take(left.numVc, s.resources.numVc);
    take(left.ddrSize, s.resources.ddrSize);
  }
  uint64_t fits = kMaxPartitionsPerDevice;
  auto limit = [&](uint64_t have, uint64_t need) {
    if (need != 0) fits = std::min<uint64_t>(fits, have / need);
  };
  limit(left.numNsp, profile.resources.numNsp);
  limit(left.numMcid, profile.resources.numMcid);
  limit(left.numSem, profile.resources.numSem);
  limit(left.numVc, profile.resources.numVc);
  limit(left.ddrSize, profile.resources.ddrSize);
  return static_cast<uint32_t>(fits);
}

}  // namespace qaic::qaicd
