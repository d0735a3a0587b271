// SPDX-License-Identifier: Apache-2.0
// parseRequest accepts exactly the documented requests and names the field of every malformed
// one; the response builders and the client-side readers round-trip.
#include <gtest/gtest.h>

#include <string>

#include "qaicd/Protocol.hpp"

namespace qaic::qaicd {
namespace {

Request parsed(const std::string& line) {
  auto r = parseRequest(line);
  if (auto* e = std::get_if<ProtocolError>(&r)) ADD_FAILURE() << line << " -> " << e->message;
  return std::holds_alternative<Request>(r) ? std::get<Request>(r) : Request{};
}

ProtocolError refused(const std::string& line) {
  auto r = parseRequest(line);
  EXPECT_TRUE(std::holds_alternative<ProtocolError>(r)) << line << " was accepted";
  return std::holds_alternative<ProtocolError>(r) ? std::get<ProtocolError>(r) : ProtocolError{};
}

TEST(ProtocolTest, ParsesEveryOperation) {
  Request hello = parsed(R"({"id": 7, "op": "hello", "version": 1})");
  EXPECT_EQ(hello.id, 7);
  EXPECT_EQ(hello.op, Op::Hello);
  EXPECT_EQ(hello.version, 1);
  EXPECT_EQ(parsed(R"({"id": 1, "op": "devices"})").op, Op::Devices);
  EXPECT_EQ(parsed(R"({"id": 1, "op": "list"})").op, Op::List);

  Request create = parsed(R"({"id": 2, "op": "create", "device": 1, "numNsp": 4, "numMcid": 2,
                              "numSem": 32, "numVc": 2, "ddrSize": 1073741824, "label": "team a"})");
  EXPECT_EQ(create.op, Op::Create);
  ASSERT_TRUE(create.device.has_value());
  EXPECT_EQ(*create.device, 1u);
  EXPECT_EQ(create.resources, (Resources{4, 2, 32, 2, 1073741824ull}));
  EXPECT_EQ(create.label, "team a");
  EXPECT_FALSE(parsed(R"({"id": 3, "op": "create", "numNsp": 1, "numVc": 1})").device.has_value());

  Request release = parsed(R"({"id": 4, "op": "release", "partition": 100})");
  EXPECT_EQ(release.op, Op::Release);
  EXPECT_EQ(release.partition, 100u);
  EXPECT_EQ(parsed(R"({"id": 5, "op": "adopt", "partition": 101})").op, Op::Adopt);
}

TEST(ProtocolTest, EveryMalformedRequestIsEinvalNamingTheField) {
  const struct {
    const char* line;
    const char* mentions;
  } cases[] = {
      {"not json", "not valid JSON"},
      {"", "not valid JSON"},
      {"[1, 2]", "not a JSON object"},
      {"42", "not a JSON object"},
      {R"({"op": "list"})", "id: missing"},
      {R"({"id": -1, "op": "list"})", "id"},
      {R"({"id": 1.5, "op": "list"})", "id"},
      {R"({"id": "1", "op": "list"})", "id"},
      {R"({"id": 9007199254740992, "op": "list"})", "id"},
      {R"({"id": 123456789012345678901234567890, "op": "list"})", "id"},
      {R"({"id": 1})", "op: missing"},
      {R"({"id": 1, "op": 3})", "op: must be a string"},
      {R"({"id": 1, "op": "format_disk"})", "op: unknown operation \"format_disk\""},
      {R"({"id": 1, "op": "list", "extra": true})", "unknown field \"extra\""},
      {R"({"id": 1, "op": "hello"})", "version: missing"},
      {R"({"id": 1, "op": "hello", "version": "1"})", "version"},
      {R"({"id": 1, "op": "create", "numNsp": -1, "numVc": 1})", "numNsp"},
      {R"({"id": 1, "op": "create", "numNsp": 4294967296, "numVc": 1})", "numNsp"},
      {R"({"id": 1, "op": "create", "numNsp": 2.5, "numVc": 1})", "numNsp"},
      {R"({"id": 1, "op": "create", "numNsp": "2", "numVc": 1})", "numNsp"},
      {R"({"id": 1, "op": "create", "numNsp": 1, "numVc": 1, "ddrSize": 18446744073709551616})", "ddrSize"},
      {R"({"id": 1, "op": "create", "numNsp": 1, "numVc": 1, "ddrSize": -4096})", "ddrSize"},
      {R"({"id": 1, "op": "create", "numNsp": 1, "numVc": 0})", "numVc: must be at least 1"},
      {R"({"id": 1, "op": "create"})", "numNsp: must be at least 1"},
      {R"({"id": 1, "op": "create", "numNsp": 1, "numVc": 1, "device": -2})", "device"},
      {R"({"id": 1, "op": "create", "numNsp": 1, "numVc": 1, "label": 5})", "label"},
      {R"({"id": 1, "op": "create", "numNsp": 1, "numVc": 1, "label": "0123456789012345678901234567890123"})", "label"},
      {R"({"id": 1, "op": "create", "numNsp": 1, "numVc": 1, "label": "tab\there"})", "label"},
      {R"({"id": 1, "op": "create", "numNsp": 1, "numVc": 1, "numCores": 4})", "unknown field \"numCores\""},
      {R"({"id": 1, "op": "release"})", "partition: missing"},
      {R"({"id": 1, "op": "release", "partition": null})", "partition"},
      {R"({"id": 1, "op": "adopt", "partition": [100]})", "partition"},
  };
  for (const auto& c : cases) {
    const ProtocolError e = refused(c.line);
    EXPECT_EQ(e.errnum, EINVAL) << c.line;
    EXPECT_EQ(e.code(), "EINVAL");
    EXPECT_NE(e.message.find(c.mentions), std::string::npos) << c.line << " -> " << e.message;
  }
}

TEST(ProtocolTest, ErrorsKeepTheRequestIdOnceItWasRead) {
  EXPECT_EQ(refused(R"({"id": 41, "op": "nope"})").id, std::optional<int64_t>(41));
  EXPECT_FALSE(refused(R"({"id": -3, "op": "list"})").id.has_value());
  const std::string line = errorLine(refused(R"({"id": 41, "op": "nope"})"));
  ASSERT_EQ(line.back(), '\n');
  auto response = parseResponse(line.substr(0, line.size() - 1));
  ASSERT_TRUE(std::holds_alternative<Response>(response));
  const auto& r = std::get<Response>(response);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.id, 41);
  EXPECT_EQ(r.error.errnum, EINVAL);
  EXPECT_EQ(r.body["error"]["code"], "EINVAL");
}

TEST(ProtocolTest, InvalidUtf8InAnOpIsQuotedSafely) {
  const ProtocolError e = refused("{\"id\": 1, \"op\": \"\xff\xfe\"}");
  EXPECT_EQ(e.errnum, EINVAL);
  EXPECT_NO_THROW((void)errorLine(e));
}

TEST(ProtocolTest, AnswersRoundTripThroughTheClientReaders) {
  PartitionInfo p{101, 0, "/r/dev/accel/accel101", 65534, 65534, 4242, false, "job", Resources{2, 1, 8, 1, 1 << 20}};
  const std::string line = successLine(9, {{"partition", toJson(p)}});
  auto response = parseResponse(line.substr(0, line.size() - 1));
  ASSERT_TRUE(std::holds_alternative<Response>(response));
  const auto& r = std::get<Response>(response);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.id, 9);
  auto back = partitionFromJson(r.body["partition"]);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->id, 101u);
  EXPECT_EQ(back->node, p.node);
  EXPECT_EQ(back->holderPid, 4242);
  EXPECT_EQ(back->resources, p.resources);

  DeviceInfo d{3,
               "Ready",
               Resources{16, 24, 512, 16, 1ull << 34},
               Resources{14, 24, 512, 15, 1ull << 34},
               {100, 105},
               {PartitionUsage{100, Resources{2, 0, 64, 1, 1ull << 30}, Resources{1, 0, 32, 0, 3ull << 28}}},
               std::vector<uint32_t>{1, 4}};
  auto device = deviceFromJson(toJson(d));
  ASSERT_TRUE(device.has_value());
  EXPECT_EQ(device->partitions, (std::vector<uint32_t>{100, 105}));
  EXPECT_EQ(device->free, d.free);
  ASSERT_EQ(device->partitionUsage.size(), 1u);
  EXPECT_EQ(device->partitionUsage[0].id, 100u);
  EXPECT_EQ(device->partitionUsage[0].total, d.partitionUsage[0].total);
  EXPECT_EQ(device->partitionUsage[0].free.ddrSize, 3ull << 28);
  // An older daemon's answer has no partition_usage; a malformed one is refused.
  auto older = toJson(d);
  older.erase("partition_usage");
  ASSERT_TRUE(deviceFromJson(older).has_value());
  EXPECT_TRUE(deviceFromJson(older)->partitionUsage.empty());
  auto malformed = toJson(d);
  malformed["partition_usage"][0]["free"] = "lots";
  EXPECT_FALSE(deviceFromJson(malformed).has_value());
  // Peers: kept; absent (no topology, an older daemon) stays absent; malformed is refused.
  EXPECT_EQ(device->p2pPeers, (std::vector<uint32_t>{1, 4}));
  auto noTopology = toJson(d);
  noTopology.erase("p2p_peers");
  ASSERT_TRUE(deviceFromJson(noTopology).has_value());
  EXPECT_FALSE(deviceFromJson(noTopology)->p2pPeers.has_value());
  auto badPeers = toJson(d);
  badPeers["p2p_peers"] = nlohmann::json::array({1, -2});
  EXPECT_FALSE(deviceFromJson(badPeers).has_value());

  HelloInfo h{1, "/tmp/root", 77, PeerInfo{1000, 100, 5}};
  auto hello = helloFromJson(toJson(h));
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->peer.uid, 1000u);
  EXPECT_FALSE(partitionFromJson(nlohmann::json{{"id", "x"}}).has_value());
}

TEST(ProtocolTest, RequestLinesParseBack) {
  const std::string line = requestLine(12, Op::Create, toJson(Resources{1, 0, 0, 1, 0}));
  ASSERT_EQ(line.back(), '\n');
  Request r = parsed(line.substr(0, line.size() - 1));
  EXPECT_EQ(r.id, 12);
  EXPECT_EQ(r.op, Op::Create);
  EXPECT_EQ(r.resources.numNsp, 1u);
}

TEST(ProtocolTest, ErrnoNames) {
  EXPECT_EQ(errnoName(ENOSPC), "ENOSPC");
  EXPECT_EQ(errnoName(E2BIG), "E2BIG");
  EXPECT_EQ(errnoName(EPERM), "EPERM");
  EXPECT_EQ(errnoName(99999), "E99999");
}

}  // namespace
}  // namespace qaic::qaicd
