// SPDX-License-Identifier: Apache-2.0
#include "qaicd/Protocol.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace qaic::qaicd {

using nlohmann::json;

namespace {

ProtocolError invalid(std::string message, std::optional<int64_t> id = std::nullopt) {
  return ProtocolError{EINVAL, std::move(message), id};
}

// An unsigned integer field no larger than `max`; nullopt with `error` set otherwise.
std::optional<uint64_t> unsignedField(const json& value, const std::string& name, uint64_t max, std::string& error) {
  if (!value.is_number_integer()) {
    // nlohmann stores integers beyond 64 bits as floating point: name them as too large.
    error = name + (value.is_number_float() ? ": not an integer in 0.." + std::to_string(max) : ": must be an integer");
    return std::nullopt;
  }
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v <= max) return v;
  } else {
    const int64_t v = value.get<int64_t>();
    if (v >= 0 && static_cast<uint64_t>(v) <= max) return static_cast<uint64_t>(v);
  }
  error = name + ": " + value.dump() + " is not in 0.." + std::to_string(max);
  return std::nullopt;
}

constexpr const char* kResourceFields[] = {"numNsp", "numMcid", "numSem", "numVc", "ddrSize"};

struct OpEntry {
  const char* name;
  Op op;
};
constexpr OpEntry kOps[] = {{"hello", Op::Hello},     {"devices", Op::Devices}, {"create", Op::Create},
                            {"release", Op::Release}, {"list", Op::List},       {"adopt", Op::Adopt}};

// The fields each op accepts besides "id" and "op".
bool fieldAllowed(Op op, const std::string& key) {
  switch (op) {
    case Op::Hello: return key == "version";
    case Op::Devices:
    case Op::List: return false;
    case Op::Create:
      return key == "device" || key == "devices" || key == "deviceCount" || key == "label" || isResourceField(key);
    case Op::Release:
    case Op::Adopt: return key == "partition";
  }
  return false;
}

// A group create's `devices` and `deviceCount` into `request`; the refusal naming the field.
std::optional<ProtocolError> parseGroup(const json& doc, Request& request) {
  std::string error;
  if (auto it = doc.find("devices"); it != doc.end()) {
    if (!it->is_array() || it->empty() || it->size() > kMaxGroupDevices)
      return invalid("devices: must be an array of 1 to " + std::to_string(kMaxGroupDevices) + " device ids");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const std::string where = "devices[" + std::to_string(i) + "]";
      auto v = unsignedField((*it)[i], where, std::numeric_limits<uint32_t>::max(), error);
      if (!v) return invalid(error);
      const auto id = static_cast<uint32_t>(*v);
      if (std::find(request.devices.begin(), request.devices.end(), id) != request.devices.end())
        return invalid(where + ": device " + std::to_string(id) + " is listed twice");
      request.devices.push_back(id);
    }
  }
  if (auto it = doc.find("deviceCount"); it != doc.end()) {
    auto v = unsignedField(*it, "deviceCount", kMaxGroupDevices, error);
    if (!v) return invalid(error);
    if (*v == 0) return invalid("deviceCount: must be at least 1");
    request.deviceCount = static_cast<uint32_t>(*v);
  }
  if (request.device && (!request.devices.empty() || request.deviceCount != 0))
    return invalid("device: a single device cannot be combined with devices or deviceCount");
  if (!request.devices.empty() && request.deviceCount != 0 && request.deviceCount != request.devices.size())
    return invalid("deviceCount: " + std::to_string(request.deviceCount) + " but devices lists " +
                   std::to_string(request.devices.size()));
  if (!request.devices.empty()) request.deviceCount = static_cast<uint32_t>(request.devices.size());
  return std::nullopt;
}

}  // namespace

const char* opName(Op op) {
  for (const auto& entry : kOps)
    if (entry.op == op) return entry.name;
  return "?";
}

std::string errnoName(int errnum) {
  if (const char* name = ::strerrorname_np(errnum)) return name;
  return "E" + std::to_string(errnum);
}

std::string ProtocolError::code() const { return errnoName(errnum); }

bool isResourceField(std::string_view name) {
  for (const char* field : kResourceFields)
    if (name == field) return true;
  return false;
}

bool isValidLabel(std::string_view label) {
  if (label.size() > kMaxLabelBytes) return false;
  for (char c : label)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

std::variant<Resources, ProtocolError> parseResources(const json& object, const std::string& where) {
  Resources r;
  std::string error;
  auto field32 = [&](const char* name, uint32_t& out) {
    auto it = object.find(name);
    if (it == object.end()) return true;
    auto v = unsignedField(*it, where + name, std::numeric_limits<uint32_t>::max(), error);
    if (v) out = static_cast<uint32_t>(*v);
    return v.has_value();
  };
  if (!field32("numNsp", r.numNsp) || !field32("numMcid", r.numMcid) || !field32("numSem", r.numSem) ||
      !field32("numVc", r.numVc))
    return invalid(error);
  if (auto it = object.find("ddrSize"); it != object.end()) {
    auto v = unsignedField(*it, where + "ddrSize", std::numeric_limits<uint64_t>::max(), error);
    if (!v) return invalid(error);
    r.ddrSize = *v;
  }
  // An activation needs at least one NSP and one virtual channel; a partition without them
  // could never run anything (and an all-zero request is always a mistake).
  if (r.numNsp == 0) return invalid(where + "numNsp: must be at least 1");
  if (r.numVc == 0) return invalid(where + "numVc: must be at least 1");
  return r;
}

std::variant<Request, ProtocolError> parseRequest(std::string_view line) {
  const json doc = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return invalid("request: not valid JSON");
  if (!doc.is_object()) return invalid("request: not a JSON object");

  Request request;
  std::string error;
  auto idIt = doc.find("id");
  if (idIt == doc.end()) return invalid("id: missing");
  auto id = unsignedField(*idIt, "id", static_cast<uint64_t>(kMaxRequestId), error);
  if (!id) return invalid(error);
  request.id = static_cast<int64_t>(*id);

  auto opIt = doc.find("op");
  if (opIt == doc.end()) return invalid("op: missing", request.id);
  if (!opIt->is_string()) return invalid("op: must be a string", request.id);
  const std::string& opText = opIt->get_ref<const std::string&>();
  bool known = false;
  for (const auto& entry : kOps)
    if (opText == entry.name) {
      request.op = entry.op;
      known = true;
    }
  if (!known) {
    std::string shown = opText.substr(0, 64);
    for (char& c : shown)
      if (c < 0x20 || c > 0x7e) c = '?';
    return invalid("op: unknown operation \"" + shown + "\"", request.id);
  }

  for (const auto& [key, value] : doc.items()) {
    (void)value;
    if (key == "id" || key == "op") continue;
    if (!fieldAllowed(request.op, key)) {
      std::string shown = key.substr(0, 64);
      for (char& c : shown)
        if (c < 0x20 || c > 0x7e) c = '?';
      return invalid(std::string(opName(request.op)) + ": unknown field \"" + shown + "\"", request.id);
    }
  }

  switch (request.op) {
    case Op::Hello: {
      auto it = doc.find("version");
      if (it == doc.end()) return invalid("version: missing", request.id);
      auto v = unsignedField(*it, "version", 1000, error);
      if (!v) return invalid(error, request.id);
      request.version = static_cast<int>(*v);
      break;
    }
    case Op::Devices:
    case Op::List: break;
    case Op::Create: {
      if (auto it = doc.find("device"); it != doc.end()) {
        auto v = unsignedField(*it, "device", std::numeric_limits<uint32_t>::max(), error);
        if (!v) return invalid(error, request.id);
        request.device = static_cast<uint32_t>(*v);
      }
      if (auto group = parseGroup(doc, request)) {
        group->id = request.id;
        return *group;
      }
      if (auto it = doc.find("label"); it != doc.end()) {
        if (!it->is_string()) return invalid("label: must be a string", request.id);
        request.label = it->get<std::string>();
        if (!isValidLabel(request.label))
          return invalid("label: at most " + std::to_string(kMaxLabelBytes) + " printable ASCII characters",
                         request.id);
      }
      auto resources = parseResources(doc, "");
      if (auto* e = std::get_if<ProtocolError>(&resources)) {
        e->id = request.id;
        return *e;
      }
      request.resources = std::get<Resources>(resources);
      break;
    }
    case Op::Release:
    case Op::Adopt: {
      auto it = doc.find("partition");
      if (it == doc.end()) return invalid("partition: missing", request.id);
      auto v = unsignedField(*it, "partition", std::numeric_limits<uint32_t>::max(), error);
      if (!v) return invalid(error, request.id);
      request.partition = static_cast<uint32_t>(*v);
      break;
    }
  }
  return request;
}

// ---- answers ----------------------------------------------------------------------------------

json toJson(const Resources& r) {
  return json{
      {"numNsp", r.numNsp}, {"numMcid", r.numMcid}, {"numSem", r.numSem}, {"numVc", r.numVc}, {"ddrSize", r.ddrSize}};
}

json toJson(const HelloInfo& h) {
  return json{{"version", h.version},
              {"root", h.root},
              {"server_pid", h.serverPid},
              {"peer", {{"uid", h.peer.uid}, {"gid", h.peer.gid}, {"pid", h.peer.pid}}}};
}

json toJson(const DeviceInfo& d) {
  json usage = json::array();
  for (const auto& u : d.partitionUsage)
    usage.push_back(json{{"id", u.id}, {"total", toJson(u.total)}, {"free", toJson(u.free)}});
  json out{{"id", d.id},
           {"status", d.status},
           {"total", toJson(d.total)},
           {"free", toJson(d.free)},
           {"partitions", d.partitions},
           {"partition_usage", usage}};
  if (d.p2pPeers) out["p2p_peers"] = *d.p2pPeers;
  return out;
}

json toJson(const PartitionInfo& p) {
  return json{{"id", p.id},
              {"device", p.device},
              {"node", p.node},
              {"owner_uid", p.ownerUid},
              {"owner_gid", p.ownerGid},
              {"holder_pid", p.holderPid},
              {"static", p.isStatic},
              {"label", p.label},
              {"resources", toJson(p.resources)}};
}

namespace {

template <typename T>
bool readField(const json& j, const char* name, T& out) {
  auto it = j.find(name);
  if (it == j.end()) return false;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return false;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return false;
  } else if constexpr (std::is_unsigned_v<T>) {
    if (!it->is_number_unsigned() || it->get<uint64_t>() > std::numeric_limits<T>::max()) return false;
  } else {
    if (!it->is_number_integer()) return false;
    const int64_t v = it->get<int64_t>();
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) return false;
  }
  out = it->get<T>();
  return true;
}

}  // namespace

std::optional<Resources> resourcesFromJson(const json& j) {
  Resources r;
  if (!j.is_object() || !readField(j, "numNsp", r.numNsp) || !readField(j, "numMcid", r.numMcid) ||
      !readField(j, "numSem", r.numSem) || !readField(j, "numVc", r.numVc) || !readField(j, "ddrSize", r.ddrSize))
    return std::nullopt;
  return r;
}

std::optional<HelloInfo> helloFromJson(const json& j) {
  HelloInfo h;
  if (!j.is_object() || !readField(j, "version", h.version) || !readField(j, "root", h.root) ||
      !readField(j, "server_pid", h.serverPid))
    return std::nullopt;
  auto peer = j.find("peer");
  if (peer == j.end() || !peer->is_object() || !readField(*peer, "uid", h.peer.uid) ||
      !readField(*peer, "gid", h.peer.gid) || !readField(*peer, "pid", h.peer.pid))
    return std::nullopt;
  return h;
}

std::optional<DeviceInfo> deviceFromJson(const json& j) {
  DeviceInfo d;
  if (!j.is_object() || !readField(j, "id", d.id) || !readField(j, "status", d.status)) return std::nullopt;
  auto total = j.find("total");
  auto free = j.find("free");
  auto parts = j.find("partitions");
  if (total == j.end() || free == j.end() || parts == j.end() || !parts->is_array()) return std::nullopt;
  auto t = resourcesFromJson(*total);
  auto f = resourcesFromJson(*free);
  if (!t || !f) return std::nullopt;
  d.total = *t;
  d.free = *f;
  for (const auto& p : *parts) {
    if (!p.is_number_unsigned() || p.get<uint64_t>() > std::numeric_limits<uint32_t>::max()) return std::nullopt;
    d.partitions.push_back(p.get<uint32_t>());
  }
  if (auto usage = j.find("partition_usage"); usage != j.end()) {
    if (!usage->is_array()) return std::nullopt;
    for (const auto& u : *usage) {
      PartitionUsage entry;
      if (!u.is_object() || !readField(u, "id", entry.id) || !u.contains("total") || !u.contains("free"))
        return std::nullopt;
      auto ut = resourcesFromJson(u["total"]);
      auto uf = resourcesFromJson(u["free"]);
      if (!ut || !uf) return std::nullopt;
      entry.total = *ut;
      entry.free = *uf;
      d.partitionUsage.push_back(entry);
    }
  }
  if (auto peers = j.find("p2p_peers"); peers != j.end()) {
    if (!peers->is_array()) return std::nullopt;
    d.p2pPeers.emplace();
    for (const auto& p : *peers) {
      if (!p.is_number_unsigned() || p.get<uint64_t>() > std::numeric_limits<uint32_t>::max()) return std::nullopt;
      d.p2pPeers->push_back(p.get<uint32_t>());
    }
  }
  return d;
}

std::optional<PartitionInfo> partitionFromJson(const json& j) {
  PartitionInfo p;
  if (!j.is_object() || !readField(j, "id", p.id) || !readField(j, "device", p.device) ||
      !readField(j, "node", p.node) || !readField(j, "owner_uid", p.ownerUid) ||
      !readField(j, "owner_gid", p.ownerGid) || !readField(j, "holder_pid", p.holderPid) ||
      !readField(j, "static", p.isStatic) || !readField(j, "label", p.label))
    return std::nullopt;
  auto res = j.find("resources");
  if (res == j.end()) return std::nullopt;
  auto r = resourcesFromJson(*res);
  if (!r) return std::nullopt;
  p.resources = *r;
  return p;
}

std::string successLine(int64_t id, const json& body) {
  json reply = {{"id", id}, {"ok", true}};
  if (body.is_object())
    for (const auto& [key, value] : body.items()) reply[key] = value;
  return reply.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string errorLine(const ProtocolError& error) {
  json reply = {{"id", error.id ? json(*error.id) : json(nullptr)},
                {"ok", false},
                {"error", {{"code", error.code()}, {"errno", error.errnum}, {"message", error.message}}}};
  // A message can quote client bytes; invalid UTF-8 is replaced rather than thrown on.
  return reply.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string requestLine(int64_t id, Op op, const json& fields) {
  json request = {{"id", id}, {"op", opName(op)}};
  if (fields.is_object())
    for (const auto& [key, value] : fields.items()) request[key] = value;
  return request.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::variant<Response, ProtocolError> parseResponse(std::string_view line) {
  const json doc = json::parse(line.begin(), line.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return ProtocolError{EPROTO, "response: not a JSON object", {}};
  Response response;
  auto ok = doc.find("ok");
  if (ok == doc.end() || !ok->is_boolean()) return ProtocolError{EPROTO, "response: ok missing", {}};
  response.ok = ok->get<bool>();
  auto id = doc.find("id");
  if (id != doc.end() && id->is_number_integer())
    response.id = id->get<int64_t>();
  else if (response.ok)
    return ProtocolError{EPROTO, "response: id missing", {}};
  else
    response.id = -1;
  if (!response.ok) {
    auto error = doc.find("error");
    if (error == doc.end() || !error->is_object()) return ProtocolError{EPROTO, "response: error missing", {}};
    int errnum = 0;
    std::string message;
    if (!readField(*error, "errno", errnum) || !readField(*error, "message", message) || errnum <= 0)
      return ProtocolError{EPROTO, "response: error.errno or error.message missing", {}};
    response.error = ProtocolError{errnum, std::move(message), response.id};
  }
  response.body = doc;
  return response;
}

}  // namespace qaic::qaicd
