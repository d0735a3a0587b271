// SPDX-License-Identifier: Apache-2.0
// Every class of malformed request gets its error on the same connection and the daemon keeps
// serving; an overlong line is E2BIG and closes the connection; a client that never reads its
// answers is dropped without holding anyone else up.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <thread>
#include <vector>

#include "DeviceAttributes.hpp"
#include "QaicdTest.hpp"

namespace qaic::qaicd::test {
namespace {

using namespace std::chrono_literals;

UniqueFd rawConnect(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    throw std::runtime_error("connect " + path);
  return fd;
}

// Reads until EOF or error, up to `timeout`; returns the bytes and whether the peer closed.
std::pair<std::string, bool> readToEnd(int fd, std::chrono::milliseconds timeout) {
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[65536];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1000) != 1) continue;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return {text, true};
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return {text, false};
}

TEST_F(QaicdTest, EveryMalformedRequestGetsItsErrorAndTheDaemonServesOn) {
  auto client = connect();
  const struct {
    const char* line;
    const char* code;
    const char* mentions;
  } cases[] = {
      {"this is not json", "EINVAL", "not valid JSON"},
      {"{\"id\": 1, \"op\": \"list\"", "EINVAL", "not valid JSON"},
      {"[\"list\"]", "EINVAL", "not a JSON object"},
      {"{\"op\": \"list\"}", "EINVAL", "id: missing"},
      {"{\"id\": 99999999999999999999999, \"op\": \"list\"}", "EINVAL", "id"},
      {"{\"id\": 9007199254740993, \"op\": \"list\"}", "EINVAL", "id"},
      {"{\"id\": 2, \"op\": \"reboot\"}", "EINVAL", "op: unknown operation"},
      {"{\"id\": 3, \"op\": [\"list\"]}", "EINVAL", "op: must be a string"},
      {"{\"id\": 4, \"op\": \"create\", \"numNsp\": -4, \"numVc\": 1}", "EINVAL", "numNsp"},
      {"{\"id\": 5, \"op\": \"create\", \"numNsp\": 1, \"numVc\": 1, \"ddrSize\": 1e400}", "EINVAL", "not valid JSON"},
      {"{\"id\": 6, \"op\": \"create\", \"numNsp\": 99999999999, \"numVc\": 1}", "EINVAL", "numNsp"},
      {"{\"id\": 7, \"op\": \"create\", \"numNsp\": \"many\", \"numVc\": 1}", "EINVAL", "numNsp: must be an integer"},
      {"{\"id\": 8, \"op\": \"create\", \"numNsp\": 1, \"numVc\": 0}", "EINVAL", "numVc: must be at least 1"},
      {"{\"id\": 9, \"op\": \"create\", \"numNsp\": 0, \"numVc\": 0, \"numMcid\": 0}", "EINVAL",
       "numNsp: must be at least 1"},
      {"{\"id\": 10, \"op\": \"create\", \"numNsp\": 1, \"numVc\": 1, \"gpu\": 1}", "EINVAL", "unknown field \"gpu\""},
      {"{\"id\": 11, \"op\": \"release\"}", "EINVAL", "partition: missing"},
      {"{\"id\": 12, \"op\": \"release\", \"partition\": -100}", "EINVAL", "partition"},
      {"{\"id\": 13, \"op\": \"release\", \"partition\": 4242}", "ENOENT", "4242"},
      {"{\"id\": 14, \"op\": \"hello\", \"version\": 2}", "EPROTONOSUPPORT", "version: 2"},
      {"{\"id\": 15, \"op\": \"create\", \"device\": 100, \"numNsp\": 1, \"numVc\": 1}", "ENODEV", "device 100"},
  };
  for (const auto& c : cases) {
    auto answer = client.exchange(c.line);
    ASSERT_TRUE(answer) << c.line << ": " << answer.message();
    auto parsed = parseResponse(*answer);
    ASSERT_TRUE(std::holds_alternative<Response>(parsed)) << *answer;
    const auto& r = std::get<Response>(parsed);
    EXPECT_FALSE(r.ok) << c.line;
    EXPECT_EQ(r.body["error"]["code"], c.code) << c.line << " -> " << *answer;
    EXPECT_NE(r.body["error"]["message"].get<std::string>().find(c.mentions), std::string::npos)
        << c.line << " -> " << *answer;
  }
  // Ids are echoed when they could be read.
  auto echoed = client.exchange("{\"id\": 77, \"op\": \"nope\"}");
  ASSERT_TRUE(echoed);
  EXPECT_NE(echoed->find("\"id\":77"), std::string::npos) << *echoed;
  // Binary garbage with an embedded NUL.
  auto binary = client.exchange(std::string("\x01\x02\0{}\xff", 6));
  ASSERT_TRUE(binary);
  EXPECT_NE(binary->find("EINVAL"), std::string::npos);
  // The same connection still works, and nothing was reserved.
  EXPECT_TRUE(client.hello());
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps);
  EXPECT_TRUE(partitionNodes().empty());
}

TEST_F(QaicdTest, AnOverlongLineIsE2bigAndClosesTheConnection) {
  auto fd = rawConnect(socketPath());
  const std::string huge(kMaxLineBytes + 4096, 'x');
  std::thread writer([&] { ::send(fd.get(), huge.data(), huge.size(), MSG_NOSIGNAL); });
  auto [text, closed] = readToEnd(fd.get(), 30s);
  ::shutdown(fd.get(), SHUT_RDWR);
  writer.join();
  EXPECT_TRUE(closed) << "the connection stayed open";
  EXPECT_NE(text.find("\"code\":\"E2BIG\""), std::string::npos) << text;
  auto client = connect();
  EXPECT_TRUE(client.hello());
}

TEST_F(QaicdTest, AClientThatNeverReadsIsDroppedWhileOthersAreServed) {
  auto greedy = rawConnect(socketPath());
  // Each hello answer is longer than its request; ask for far more than the 1 MiB bound plus the
  // socket buffers, never reading. The daemon must drop us instead of buffering without limit.
  std::string burst;
  for (int i = 0; i < 2000; ++i) burst += "{\"id\": " + std::to_string(i) + ", \"op\": \"hello\", \"version\": 1}\n";
  bool dropped = false;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!dropped && std::chrono::steady_clock::now() < deadline) {
    pollfd p{greedy.get(), POLLOUT, 0};
    if (::poll(&p, 1, 1000) != 1) continue;
    if (p.revents & (POLLERR | POLLHUP))
      dropped = true;
    else if (::send(greedy.get(), burst.data(), burst.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN)
      dropped = true;
  }
  EXPECT_TRUE(dropped) << "qaicd kept a non-reading client";
  // Meanwhile another client is served promptly.
  auto other = connect();
  other.setTimeout(5s);
  EXPECT_TRUE(other.hello());
  EXPECT_NE(qaicd_->log().find("not reading its answers"), std::string::npos);
}

TEST_F(QaicdTest, ConnectionsPastTheLimitAreRefusedAtOnce) {
  // The limit (Daemon::kMaxClients), all served; this process needs one descriptor for each.
  constexpr int kLimit = 512;
  std::vector<UniqueFd> held;
  for (int i = 0; i < kLimit; ++i) held.push_back(rawConnect(socketPath()));
  auto refusedFd = rawConnect(socketPath());
  auto [text, closed] = readToEnd(refusedFd.get(), 30s);
  EXPECT_TRUE(closed) << "the connection past the limit stayed open";
  EXPECT_NE(text.find("\"code\":\"EUSERS\""), std::string::npos) << text;
  EXPECT_NE(text.find("at most 512 connections"), std::string::npos) << text;
  // Once one goes, a client is served again.
  held.pop_back();
  bool served = false;
  for (int i = 0; i < 50 && !served; ++i) {  // until qaicd has seen the close
    auto client = QaicdClient::connect(socketPath(), 5s);
    if (client) {
      client->setTimeout(5s);
      served = static_cast<bool>(client->hello());
    }
    if (!served) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(served);
}

}  // namespace
}  // namespace qaic::qaicd::test
