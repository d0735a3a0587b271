// SPDX-License-Identifier: Apache-2.0
#include "PartitionConfig.hpp"

#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "CompileError.hpp"
#include "base/AtomicFile.hpp"

namespace qaic::compiler {
namespace {

using nlohmann::json;

// A config lists a handful of devices; anything near this is not a partition config.
constexpr std::size_t kMaxConfigBytes = 1u << 20;

class ConfigReader {
 public:
  explicit ConfigReader(const std::string& fileName) : file_(fileName) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw CompileError(file_ + ": " + field + ": " + what);
  }

  void onlyKeys(const json& object, std::initializer_list<const char*> keys, const std::string& path) const {
    for (const auto& [key, value] : object.items()) {
      (void)value;
      bool known = false;
      for (const char* k : keys) known = known || key == k;
      if (known) continue;
      fail(path + key, "unknown field");
    }
  }

  const json& member(const json& object, const char* key, const std::string& path) const {
    const auto it = object.find(key);
    if (it == object.end()) fail(path + key, "missing");
    return *it;
  }

  const json& array(const json& object, const char* key, const std::string& path) const {
    const json& value = member(object, key, path);
    if (!value.is_array()) fail(path + key, "expected an array, got " + std::string(value.type_name()));
    return value;
  }

  // `maxName` says what the bound is ("a card's 16 NSPs"); empty: the number.
  uint32_t unsignedValue(const json& value, const std::string& field, uint32_t min, uint32_t max,
                         const std::string& maxName = "") const {
    if (!value.is_number_integer())
      fail(field, "expected an integer, got " + (value.is_number() ? value.dump() : std::string(value.type_name())));
    const std::string text = value.dump();
    if (!value.is_number_unsigned() || value.get<uint64_t>() < min)
      fail(field, text + " is less than " + std::to_string(min));
    if (value.get<uint64_t>() > max)
      fail(field, text + " is more than " + (maxName.empty() ? std::to_string(max) : maxName));
    return static_cast<uint32_t>(value.get<uint64_t>());
  }

 private:
  const std::string& file_;
};

std::vector<PartitionConnection> parseConnections(const ConfigReader& r, const json& root) {
  std::vector<PartitionConnection> connections;
  const auto it = root.find("connections");
  if (it == root.end()) return connections;
  if (!it->is_array()) r.fail("connections", "expected an array, got " + std::string(it->type_name()));
  for (std::size_t i = 0; i < it->size(); ++i) {
    const std::string path = "connections[" + std::to_string(i) + "]";
    const json& entry = (*it)[i];
    if (!entry.is_object()) r.fail(path, "expected an object with \"devices\" and \"type\"");
    r.onlyKeys(entry, {"devices", "type"}, path + ".");
    PartitionConnection connection;
    const json& type = r.member(entry, "type", path + ".");
    if (!type.is_string()) r.fail(path + ".type", "expected a string, got " + std::string(type.type_name()));
    connection.type = type.get<std::string>();
    if (connection.type != "p2p")
      r.fail(path + ".type", "'" + connection.type + "' is not a connection type (the only one is \"p2p\")");
    const json& devices = r.array(entry, "devices", path + ".");
    if (devices.empty()) r.fail(path + ".devices", "expected at least one device ID");
    std::set<uint32_t> seen;
    for (std::size_t d = 0; d < devices.size(); ++d) {
      const std::string field = path + ".devices[" + std::to_string(d) + "]";
      const uint32_t id = r.unsignedValue(devices[d], field, 0, kMaxPartitionDeviceId);
      if (!seen.insert(id).second) r.fail(field, "device " + std::to_string(id) + " is listed twice");
      connection.devices.push_back(id);
    }
    connections.push_back(std::move(connection));
  }
  return connections;
}

Partition parsePartition(const ConfigReader& r, const json& entry, const std::string& path) {
  if (!entry.is_object()) r.fail(path, "expected an object with \"name\" and \"devices\"");
  r.onlyKeys(entry, {"name", "devices", "nodeList"}, path + ".");
  Partition partition;
  const json& name = r.member(entry, "name", path + ".");
  if (!name.is_string() || name.get_ref<const std::string&>().empty())
    r.fail(path + ".name", "expected a non-empty string");
  partition.name = name.get<std::string>();
  const json& devices = r.array(entry, "devices", path + ".");
  if (devices.empty()) r.fail(path + ".devices", "expected at least one device");
  std::map<uint32_t, std::size_t> seen;  // device ID -> its index in the list
  for (std::size_t d = 0; d < devices.size(); ++d) {
    const std::string devicePath = path + ".devices[" + std::to_string(d) + "]";
    const json& device = devices[d];
    if (!device.is_object()) r.fail(devicePath, "expected an object with \"deviceId\" and \"numCores\"");
    r.onlyKeys(device, {"deviceId", "numCores"}, devicePath + ".");
    PartitionDevice out;
    out.deviceId = r.unsignedValue(r.member(device, "deviceId", devicePath + "."), devicePath + ".deviceId", 0,
                                   kMaxPartitionDeviceId);
    if (const auto [it, inserted] = seen.emplace(out.deviceId, d); !inserted)
      r.fail(devicePath + ".deviceId", "device " + std::to_string(out.deviceId) + " is listed twice (also " + path +
                                           ".devices[" + std::to_string(it->second) + "])");
    out.numCores = r.unsignedValue(r.member(device, "numCores", devicePath + "."), devicePath + ".numCores", 1,
                                   kNspsPerCard, "a card's " + std::to_string(kNspsPerCard) + " NSPs");
    partition.devices.push_back(out);
  }
  if (const auto it = entry.find("nodeList"); it != entry.end()) {
    if (!it->is_array())
      r.fail(path + ".nodeList", "expected an array of node names, got " + std::string(it->type_name()));
    std::map<std::string, std::size_t> listed;
    for (std::size_t n = 0; n < it->size(); ++n) {
      const std::string field = path + ".nodeList[" + std::to_string(n) + "]";
      const json& node = (*it)[n];
      if (!node.is_string() || node.get_ref<const std::string&>().empty()) r.fail(field, "expected a node name");
      if (const auto [at, inserted] = listed.emplace(node.get<std::string>(), n); !inserted)
        r.fail(field, "node '" + at->first + "' is listed twice (also " + path + ".nodeList[" +
                          std::to_string(at->second) + "])");
      partition.nodeList.push_back(node.get<std::string>());
    }
  }
  return partition;
}

// Pipeline stages: one device each, no device in two stages, every stage naming its nodes or
// none doing so, no node in two stages.
void checkPipeline(const ConfigReader& r, const std::vector<Partition>& partitions) {
  std::map<uint32_t, std::size_t> stageOfDevice;
  std::map<std::string, std::size_t> stageOfNode;
  std::map<std::string, std::size_t> stageOfName;
  const bool named = !partitions.front().nodeList.empty();
  for (std::size_t k = 0; k < partitions.size(); ++k) {
    const std::string path = "partitions[" + std::to_string(k) + "]";
    const Partition& stage = partitions[k];
    if (const auto [it, inserted] = stageOfName.emplace(stage.name, k); !inserted)
      r.fail(path + ".name", "'" + stage.name + "' is also partitions[" + std::to_string(it->second) + "]'s name");
    if (stage.devices.size() != 1)
      r.fail(path + ".devices", std::to_string(stage.devices.size()) +
                                    " devices: a pipeline stage (one of several partitions) runs on one device; "
                                    "tensor slicing within a stage is not supported");
    const uint32_t id = stage.devices.front().deviceId;
    if (const auto [it, inserted] = stageOfDevice.emplace(id, k); !inserted)
      r.fail(path + ".devices[0].deviceId", "device " + std::to_string(id) + " is also partitions[" +
                                                std::to_string(it->second) + "]'s; each stage has a device of its own");
    if (stage.nodeList.empty() == named)
      r.fail(path + ".nodeList", named ? "missing; partitions[0] lists its nodes, so every partition must"
                                       : "given, but partitions[0] has none; list the nodes of every partition "
                                         "or of none (qaic-exec then balances the stages)");
    for (std::size_t n = 0; n < stage.nodeList.size(); ++n) {
      if (const auto [it, inserted] = stageOfNode.emplace(stage.nodeList[n], k); !inserted && it->second != k)
        r.fail(path + ".nodeList[" + std::to_string(n) + "]",
               "node '" + stage.nodeList[n] + "' is also in partitions[" + std::to_string(it->second) + "]");
    }
  }
}

}  // namespace

PartitionConfig parsePartitionConfig(std::string_view jsonText, const std::string& fileName) {
  const ConfigReader r(fileName);
  json root;
  try {
    root = json::parse(jsonText);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    r.fail("json", std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) r.fail("(top level)", "expected an object with \"connections\" and \"partitions\"");
  r.onlyKeys(root, {"connections", "partitions"}, "");
  PartitionConfig config;
  config.connections = parseConnections(r, root);
  const json& partitions = r.array(root, "partitions", "");
  if (partitions.empty()) r.fail("partitions", "expected at least one partition, got none");
  if (partitions.size() > kMaxPipelineStages)
    r.fail("partitions", std::to_string(partitions.size()) + " partitions: a pipeline has at most " +
                             std::to_string(kMaxPipelineStages) + " stages");
  for (std::size_t k = 0; k < partitions.size(); ++k)
    config.partitions.push_back(parsePartition(r, partitions[k], "partitions[" + std::to_string(k) + "]"));
  if (config.pipelined()) checkPipeline(r, config.partitions);

  // Several devices share the network's data, so each must be linked to the others.
  const std::size_t devices = config.deviceCount();
  if (devices > 1) {
    for (std::size_t k = 0; k < config.partitions.size(); ++k) {
      const Partition& partition = config.partitions[k];
      for (std::size_t d = 0; d < partition.devices.size(); ++d) {
        const uint32_t id = partition.devices[d].deviceId;
        bool linked = false;
        for (const PartitionConnection& c : config.connections)
          for (uint32_t other : c.devices) linked = linked || other == id;
        if (!linked)
          r.fail("partitions[" + std::to_string(k) + "].devices[" + std::to_string(d) + "].deviceId",
                 "device " + std::to_string(id) + " is in no connection; the " + std::to_string(devices) +
                     " devices of a multi-device program must be listed in \"connections\"");
      }
    }
  }
  return config;
}

PartitionConfig readPartitionConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CompileError(path + ": cannot read the partition config");
  std::string text;
  char chunk[4096];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxConfigBytes)
      throw CompileError(path + ": more than " + std::to_string(kMaxConfigBytes) + " bytes; not a partition config");
  }
  return parsePartitionConfig(text, path);
}

std::string partitionConfigJson(const PartitionConfig& config) {
  json connections = json::array();
  for (const PartitionConnection& c : config.connections)
    connections.push_back(json{{"devices", c.devices}, {"type", c.type}});
  json partitions = json::array();
  for (const Partition& p : config.partitions) {
    json devices = json::array();
    for (const PartitionDevice& d : p.devices)
      devices.push_back(json{{"deviceId", d.deviceId}, {"numCores", d.numCores}});
    json partition{{"devices", devices}, {"name", p.name}};
    if (!p.nodeList.empty()) partition["nodeList"] = p.nodeList;
    partitions.push_back(std::move(partition));
  }
  return json{{"connections", connections}, {"partitions", partitions}}.dump(4) + "\n";
}

void writePartitionConfig(const std::string& path, const PartitionConfig& config) {
  try {
    writeFileAtomically(path, partitionConfigJson(config));
  } catch (const AtomicWriteError& e) {
    throw CompileError(path + ": cannot write the partition config: " + e.what());
  }
}

std::size_t PartitionConfig::deviceCount() const {
  std::size_t count = 0;
  for (const Partition& p : partitions) count += p.devices.size();
  return count;
}

std::vector<PartitionDevice> PartitionConfig::partDevices() const {
  std::vector<PartitionDevice> devices;
  if (!pipelined()) return partitions.empty() ? devices : partitions.front().devices;
  devices.resize(partitions.size());
  for (std::size_t s = 0; s < partitions.size(); ++s)
    devices[partOfStage(s, partitions.size())] = partitions[s].devices.front();
  return devices;
}

PartitionConfig pipelinePartitionConfig(uint32_t stages, uint32_t numCores) {
  PartitionConfig config;
  PartitionConnection connection;
  for (uint32_t s = 0; s < stages; ++s) {
    connection.devices.push_back(s);
    config.partitions.push_back(Partition{"Partition" + std::to_string(s), {{s, numCores}}, {}});
  }
  config.connections.push_back(std::move(connection));
  return config;
}

PartitionConfig uniformPartitionConfig(uint32_t devices, uint32_t numCores) {
  PartitionConfig config;
  PartitionConnection connection;
  Partition partition{"Partition0", {}, {}};
  for (uint32_t d = 0; d < devices; ++d) {
    connection.devices.push_back(d);
    partition.devices.push_back({d, numCores});
  }
  config.connections.push_back(std::move(connection));
  config.partitions.push_back(std::move(partition));
  return config;
}

}  // namespace qaic::compiler
