// SPDX-License-Identifier: Apache-2.0
#include "Config.hpp"

#include <grp.h>
#include <pwd.h>

#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "driver/DeviceProtocol.hpp"

namespace qaic::qaicd {

using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& source, const std::string& message) {
  throw ConfigError(source + ": " + message);
}

uint32_t readId(const json& value, const std::string& source, const std::string& field) {
  if (!value.is_number_unsigned() || value.get<uint64_t>() >= std::numeric_limits<uint32_t>::max())
    fail(source, field + ": must be an integer in 0..4294967294");
  return value.get<uint32_t>();
}

std::string readName(const json& value, const std::string& source, const std::string& field) {
  if (!value.is_string() || value.get_ref<const std::string&>().empty())
    fail(source, field + ": must be a non-empty string");
  return value.get<std::string>();
}

StaticPartition parseStatic(const json& entry, const std::string& source, const std::string& where) {
  if (!entry.is_object()) fail(source, where + ": must be an object");
  StaticPartition p;
  int owners = 0;
  for (const auto& [key, value] : entry.items()) {
    const std::string field = where + "." + key;
    if (key == "name") {
      p.name = readName(value, source, field);
      if (p.name.size() > kMaxStaticNameBytes || !isValidLabel(p.name))
        fail(source, field + ": at most " + std::to_string(kMaxStaticNameBytes) + " printable characters");
    } else if (key == "device") {
      if (!value.is_number_unsigned() || value.get<uint64_t>() >= driver::kFirstPartitionId)
        fail(source, field + ": must be a device index below " + std::to_string(driver::kFirstPartitionId));
      p.device = value.get<uint32_t>();
    } else if (key == "user") {
      const std::string name = readName(value, source, field);
      const passwd* pw = ::getpwnam(name.c_str());
      if (pw == nullptr) fail(source, field + ": no user \"" + name + "\"");
      p.uid = pw->pw_uid;
      p.gid = pw->pw_gid;
      p.mode = 0600;
      ++owners;
    } else if (key == "uid") {
      p.uid = readId(value, source, field);
      const passwd* pw = ::getpwuid(p.uid);
      p.gid = pw != nullptr ? pw->pw_gid : p.uid;
      p.mode = 0600;
      ++owners;
    } else if (key == "group") {
      const std::string name = readName(value, source, field);
      const group* gr = ::getgrnam(name.c_str());
      if (gr == nullptr) fail(source, field + ": no group \"" + name + "\"");
      p.uid = 0;
      p.gid = gr->gr_gid;
      p.mode = 0660;
      ++owners;
    } else if (key == "gid") {
      p.uid = 0;
      p.gid = readId(value, source, field);
      p.mode = 0660;
      ++owners;
    } else if (!isResourceField(key)) {
      fail(source, field + ": unknown field");
    }
  }
  if (p.name.empty()) fail(source, where + ".name: missing");
  if (!entry.contains("device")) fail(source, where + ".device: missing");
  if (owners != 1) fail(source, where + ": exactly one of user, uid, group, gid is needed");
  auto resources = parseResources(entry, where + ".");
  if (auto* e = std::get_if<ProtocolError>(&resources)) fail(source, e->message);
  p.resources = std::get<Resources>(resources);
  return p;
}

}  // namespace

Config parseConfig(std::string_view text, const std::string& source) {
  const json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) fail(source, "not valid JSON");
  if (!doc.is_object()) fail(source, "the top level must be an object");
  Config config;
  std::set<std::string> names;
  for (const auto& [key, value] : doc.items()) {
    if (key == "poll_ms") {
      if (!value.is_number_unsigned() || value.get<uint64_t>() < kMinPollMs || value.get<uint64_t>() > kMaxPollMs)
        fail(source,
             "poll_ms: must be an integer in " + std::to_string(kMinPollMs) + ".." + std::to_string(kMaxPollMs));
      config.pollMs = value.get<unsigned>();
    } else if (key == "device_timeout_ms") {
      if (!value.is_number_unsigned() || value.get<uint64_t>() < kMinDeviceTimeoutMs ||
          value.get<uint64_t>() > kMaxDeviceTimeoutMs)
        fail(source, "device_timeout_ms: must be an integer in " + std::to_string(kMinDeviceTimeoutMs) + ".." +
                         std::to_string(kMaxDeviceTimeoutMs));
      config.deviceTimeoutMs = value.get<unsigned>();
    } else if (key == "static_partitions") {
      if (!value.is_array()) fail(source, "static_partitions: must be an array");
      for (std::size_t i = 0; i < value.size(); ++i) {
        auto p = parseStatic(value[i], source, "static_partitions[" + std::to_string(i) + "]");
        if (!names.insert(p.name).second)
          fail(source, "static_partitions[" + std::to_string(i) + "].name: \"" + p.name + "\" used twice");
        config.staticPartitions.push_back(std::move(p));
      }
    } else if (key == "k8s_profiles") {
      config.k8sProfiles = parseK8sProfiles(value, source);
    } else {
      fail(source, key + ": unknown field");
    }
  }
  return config;
}

Config loadConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, "cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().size() > 1024 * 1024) fail(path, "larger than 1 MiB");
  return parseConfig(text.str(), path);
}

}  // namespace qaic::qaicd
