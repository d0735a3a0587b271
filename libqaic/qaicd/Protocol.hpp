// SPDX-License-Identifier: Apache-2.0
// The qaicd wire protocol (docs/qaicd.md): one JSON object per line in each direction over a
// Unix stream socket. This is the only code that knows the message shapes; the daemon, the
// client library and the fuzz target all parse and build messages through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <qaic/Resources.hpp>

namespace qaic::qaicd {

inline constexpr int kProtocolVersion = 1;
// A request line longer than this (newline excluded) is refused with E2BIG and the connection
// closed: the daemon never buffers more than this per client.
inline constexpr std::size_t kMaxLineBytes = 64 * 1024;
// Request ids are echoed; they must survive a round trip through any JSON implementation, so
// they are limited to the integers a double holds exactly.
inline constexpr int64_t kMaxRequestId = (int64_t{1} << 53) - 1;
// A label is stored NUL-terminated in 32 bytes on the device (PartitionRequest::label).
inline constexpr std::size_t kMaxLabelBytes = 31;
// The most devices one group create spans.
inline constexpr uint32_t kMaxGroupDevices = 64;

// What a partition holds or a device has (JSON keys: the field names).
using rt::Resources;

enum class Op { Hello, Devices, Create, Release, List, Adopt };
const char* opName(Op op);

struct Request {
  int64_t id = 0;
  Op op = Op::Hello;
  int version = 0;                 // hello
  std::optional<uint32_t> device;  // create (absent: the first device with room)
  // create of a group: one partition of `resources` on each of several distinct devices, made
  // together or not at all. `devices` names them; `deviceCount` alone takes the first that
  // have room. Both empty / 0: a single partition.
  std::vector<uint32_t> devices;
  uint32_t deviceCount = 0;
  Resources resources;     // create (each partition's, in a group)
  std::string label;       // create
  uint32_t partition = 0;  // release, adopt
};

// A refusal: the errno, its symbolic name and a message naming the field or resource.
struct ProtocolError {
  int errnum = 0;
  std::string message;
  std::optional<int64_t> id;  // the request's id when it could be read
  std::string code() const;   // "EINVAL"
};

// One request line (without its newline). Every malformed line is a ProtocolError with EINVAL
// whose message names the field: not JSON, not an object, a missing, unknown or wrongly typed
// field, an unknown op, a number that is negative, fractional or too large.
std::variant<Request, ProtocolError> parseRequest(std::string_view line);

// The resource fields of `object` (numNsp, numMcid, numSem, numVc, ddrSize; absent = 0) checked
// as a create request needs them: integers in range, at least one NSP and one VC. `where`
// prefixes messages ("static_partitions[1]."). Shared by requests and the daemon's config file.
std::variant<Resources, ProtocolError> parseResources(const nlohmann::json& object, const std::string& where);
// Fields parseResources reads, for callers that reject unknown fields themselves.
bool isResourceField(std::string_view name);
// A label is printable ASCII, at most kMaxLabelBytes.
bool isValidLabel(std::string_view label);

// ---- the answers ------------------------------------------------------------------------------

struct PeerInfo {
  uint32_t uid = 0, gid = 0;
  int32_t pid = 0;
};
struct HelloInfo {
  int version = kProtocolVersion;
  std::string root;
  int32_t serverPid = 0;
  PeerInfo peer;
};
// A partition's capacity and what its activations and resource groups left free, as the STATUS
// query on its node reports them at the time of the listing.
struct PartitionUsage {
  uint32_t id = 0;
  Resources total, free;
};
struct DeviceInfo {
  uint32_t id = 0;
  std::string status;
  Resources total, free;
  std::vector<uint32_t> partitions;
  // The partitions of `partitions` whose node answered (absent from older daemons' answers).
  std::vector<PartitionUsage> partitionUsage;
  // The devices it reaches peer to peer (the emulator's qaic-emu/p2p_peers), ascending; absent
  // when the device publishes no topology, and from older daemons' answers.
  std::optional<std::vector<uint32_t>> p2pPeers;
};
struct PartitionInfo {
  uint32_t id = 0;
  uint32_t device = 0;
  std::string node;  // absolute path of the partition's device node
  uint32_t ownerUid = 0, ownerGid = 0;
  int32_t holderPid = 0;  // 0: a static partition from the config file
  bool isStatic = false;
  std::string label;
  Resources resources;
};

nlohmann::json toJson(const Resources& r);
nlohmann::json toJson(const HelloInfo& h);
nlohmann::json toJson(const DeviceInfo& d);
nlohmann::json toJson(const PartitionInfo& p);
// Strict readers of the same shapes for clients; std::nullopt when a field is missing or mistyped
// (the daemon is trusted, but a wrong socket must not crash a client).
std::optional<Resources> resourcesFromJson(const nlohmann::json& j);
std::optional<HelloInfo> helloFromJson(const nlohmann::json& j);
std::optional<DeviceInfo> deviceFromJson(const nlohmann::json& j);
std::optional<PartitionInfo> partitionFromJson(const nlohmann::json& j);

// Response lines, each ending in '\n'. `body`'s members are added after "id" and "ok".
std::string successLine(int64_t id, const nlohmann::json& body = nlohmann::json::object());
std::string errorLine(const ProtocolError& error);
// Request lines for clients.
std::string requestLine(int64_t id, Op op, const nlohmann::json& fields = nlohmann::json::object());

// A response as a client reads it.
struct Response {
  int64_t id = 0;
  bool ok = false;
  ProtocolError error;  // when !ok
  nlohmann::json body;  // the whole object when ok
};
std::variant<Response, ProtocolError> parseResponse(std::string_view line);

// "ENOSPC" for ENOSPC; "E<number>" for an errno without a name.
std::string errnoName(int errnum);

}  // namespace qaic::qaicd
