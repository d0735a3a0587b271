// The configuration file: static partitions for users and groups, and errors naming the field.
#include <gtest/gtest.h>

#include "Config.hpp"

namespace qaic::qaicd {
namespace {

std::string errorOf(const std::string& text) {
  try {
    parseConfig(text, "qaicd.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return {};
}

TEST(ConfigTest, StaticPartitionsForUsersAndGroups) {
  const Config c = parseConfig(R"({"poll_ms": 100, "static_partitions": [
      {"name": "team-a", "device": 0, "user": "root", "numNsp": 4, "numVc": 2, "ddrSize": 1048576},
      {"name": "team-b", "device": 1, "gid": 50, "numNsp": 2, "numVc": 1, "numSem": 16},
      {"name": "uid-only", "device": 0, "uid": 4321, "numNsp": 1, "numVc": 1}]})",
                               "qaicd.json");
  ASSERT_TRUE(c.pollMs.has_value());
  EXPECT_EQ(*c.pollMs, 100u);
  ASSERT_EQ(c.staticPartitions.size(), 3u);
  const auto& a = c.staticPartitions[0];
  EXPECT_EQ(a.label(), "static:team-a");
  EXPECT_EQ(a.uid, 0u);
  EXPECT_EQ(a.mode, 0600u);
  EXPECT_EQ(a.resources, (Resources{4, 0, 0, 2, 1048576}));
  const auto& b = c.staticPartitions[1];
  EXPECT_EQ(b.device, 1u);
  EXPECT_EQ(b.gid, 50u);
  EXPECT_EQ(b.uid, 0u);
  EXPECT_EQ(b.mode, 0660u);
  EXPECT_EQ(c.staticPartitions[2].uid, 4321u);
  EXPECT_EQ(c.staticPartitions[2].mode, 0600u);
}

TEST(ConfigTest, EmptyObjectIsValid) {
  const Config c = parseConfig("{}", "x");
  EXPECT_FALSE(c.pollMs.has_value());
  EXPECT_TRUE(c.staticPartitions.empty());
}

TEST(ConfigTest, ErrorsNameFileAndField) {
  const struct {
    const char* text;
    const char* mentions;
  } cases[] = {
      {"{", "qaicd.json: not valid JSON"},
      {"[]", "top level"},
      {R"({"poll": 1})", "poll: unknown field"},
      {R"({"poll_ms": 0})", "poll_ms"},
      {R"({"poll_ms": "fast"})", "poll_ms"},
      {R"({"static_partitions": {}})", "static_partitions: must be an array"},
      {R"({"static_partitions": [{"device": 0, "user": "root", "numNsp": 1, "numVc": 1}]})",
       "static_partitions[0].name: missing"},
      {R"({"static_partitions": [{"name": "a", "user": "root", "numNsp": 1, "numVc": 1}]})",
       "static_partitions[0].device: missing"},
      {R"({"static_partitions": [{"name": "a", "device": 0, "numNsp": 1, "numVc": 1}]})",
       "exactly one of user, uid, group, gid"},
      {R"({"static_partitions": [{"name": "a", "device": 0, "user": "root", "gid": 1, "numNsp": 1, "numVc": 1}]})",
       "exactly one of user, uid, group, gid"},
      {R"({"static_partitions": [{"name": "a", "device": 0, "user": "no-such-user-qaicd", "numNsp": 1, "numVc": 1}]})",
       "static_partitions[0].user: no user \"no-such-user-qaicd\""},
      {R"({"static_partitions": [{"name": "a", "device": 0, "group": "no-such-group-qaicd", "numNsp": 1, "numVc": 1}]})",
       "static_partitions[0].group: no group"},
      {R"({"static_partitions": [{"name": "a", "device": 0, "uid": 0, "numNsp": 0, "numVc": 1}]})",
       "static_partitions[0].numNsp: must be at least 1"},
      {R"({"static_partitions": [{"name": "a", "device": 0, "uid": 0, "numNsp": 1, "numVc": -1}]})",
       "static_partitions[0].numVc"},
      {R"({"static_partitions": [{"name": "a", "device": 100, "uid": 0, "numNsp": 1, "numVc": 1}]})",
       "static_partitions[0].device"},
      {R"({"static_partitions": [{"name": "a", "device": 0, "uid": 0, "numNsp": 1, "numVc": 1, "color": "red"}]})",
       "static_partitions[0].color: unknown field"},
      {R"({"static_partitions": [{"name": "a-name-far-too-long-for-a-label", "device": 0, "uid": 0, "numNsp": 1, "numVc": 1}]})",
       "static_partitions[0].name"},
      {R"({"static_partitions": [{"name": "a", "device": 0, "uid": 0, "numNsp": 1, "numVc": 1},
                                 {"name": "a", "device": 0, "uid": 0, "numNsp": 1, "numVc": 1}]})",
       "static_partitions[1].name: \"a\" used twice"},
  };
  for (const auto& c : cases) {
    const std::string message = errorOf(c.text);
    EXPECT_NE(message.find(c.mentions), std::string::npos) << c.text << " -> " << message;
    EXPECT_EQ(message.rfind("qaicd.json: ", 0), 0u) << message;
  }
}

TEST(ConfigTest, MissingFileIsAnError) {
  EXPECT_THROW(loadConfig("/nonexistent/qaicd.json"), ConfigError);
}

}  // namespace
}  // namespace qaic::qaicd
