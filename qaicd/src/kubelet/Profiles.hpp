// SPDX-License-Identifier: Apache-2.0
// Partition profiles for Kubernetes (docs/kubernetes.md, "Partition profiles"): the
// `k8s_profiles` of qaicd's configuration. Each profile is a resource `qualcomm.com/<name>` whose
// units are partitions of one shape that qaicd creates ahead of time on the devices given to the
// profile and keeps (static, holder 0, labelled "k8s:<name>:<slot>", so a restarted qaicd
// re-adopts them and the unit IDs stay the same).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "qaicd/Protocol.hpp"

namespace qaic::qaicd {

struct StaticPartition;

struct K8sProfile {
  std::string name;                   // "qaic-4nsp": the resource is qualcomm.com/qaic-4nsp
  bool allDevices = false;            // "devices": "all" (or absent): every device no other profile names
  std::set<uint32_t> devices;         // "devices": [0, 1]
  std::optional<uint32_t> perDevice;  // absent: as many as the device's capacity allows
  Resources resources;                // of each partition
};

inline constexpr std::string_view kResourceDomain = "qualcomm.com/";
inline constexpr std::string_view kWholeDeviceResource = "qualcomm.com/qaic";
inline constexpr std::string_view kProfileLabelPrefix = "k8s:";
// "k8s:" + name + ":" + two slot digits fit the device's 31-byte label.
inline constexpr std::size_t kMaxProfileNameBytes = kMaxLabelBytes - 7;
inline constexpr uint32_t kMaxPartitionsPerDevice = 64;

// `value` is the k8s_profiles array; errors throw ConfigError naming `source` and the field
// ("qaicd.json: k8s_profiles[0].name: ...").
std::vector<K8sProfile> parseK8sProfiles(const nlohmann::json& value, const std::string& source);

std::string profileLabel(const std::string& profile, uint32_t slot);
// "k8s:qaic-4nsp:3" -> {"qaic-4nsp", 3}; anything else -> nullopt.
struct ProfileSlot {
  std::string profile;
  uint32_t slot = 0;
};
std::optional<ProfileSlot> parseProfileLabel(std::string_view label);

// The profile a device belongs to: the one naming it, else the one taking "all", else none.
const K8sProfile* profileForDevice(const std::vector<K8sProfile>& profiles, uint32_t device);

// How many partitions of `profile` a device with `total` resources holds after the static
// partitions configured for it: perDevice when given, else what fits (at most
// kMaxPartitionsPerDevice).
uint32_t partitionsPerDevice(const K8sProfile& profile, uint32_t device, const Resources& total,
                             const std::vector<StaticPartition>& statics);

}  // namespace qaic::qaicd
