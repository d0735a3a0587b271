// SPDX-License-Identifier: Apache-2.0
// qaicd's configuration file (docs/qaicd.md, "Configuration"): the polling interval, the
// static partitions created at start for named users or groups, and the partition profiles
// offered to Kubernetes (docs/kubernetes.md).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kubelet/Profiles.hpp"
#include "qaicd/Protocol.hpp"

namespace qaic::qaicd {

// A static partition: owned by a user (mode 0600) or by a group (mode 0660, owner root), held
// by nobody (holder pid 0), labelled "static:<name>".
struct StaticPartition {
  std::string name;
  uint32_t device = 0;
  uint32_t uid = 0, gid = 0, mode = 0600;
  Resources resources;
  static constexpr std::string_view kLabelPrefix = "static:";
  std::string label() const { return std::string(kLabelPrefix) + name; }
};

struct Config {
  std::optional<unsigned> pollMs;
  std::optional<unsigned> deviceTimeoutMs;
  std::vector<StaticPartition> staticPartitions;
  std::vector<K8sProfile> k8sProfiles;  // docs/kubernetes.md
};

inline constexpr unsigned kMinPollMs = 10;
inline constexpr unsigned kMaxPollMs = 60'000;
inline constexpr unsigned kMinDeviceTimeoutMs = 100;
inline constexpr unsigned kMaxDeviceTimeoutMs = 600'000;
inline constexpr unsigned kDefaultDeviceTimeoutMs = 5000;
// "static:" plus the name fits the device's 31-byte label.
inline constexpr std::size_t kMaxStaticNameBytes = kMaxLabelBytes - 7;

// Errors name the file and the field: "qaicd.json: static_partitions[0].user: no user \"bob\"".
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `source` names the file in messages. User and group names are resolved here.
Config parseConfig(std::string_view text, const std::string& source);
Config loadConfig(const std::string& path);

}  // namespace qaic::qaicd
