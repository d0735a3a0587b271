// SPDX-License-Identifier: Apache-2.0
// QaicdClient against a scripted server on a real Unix socket (this class alone; the real
// daemon is exercised by tests/integration/qaicd): timeouts, errors, stale answers.
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <thread>

#include "TempDir.hpp"
#include "qaicd/QaicdClient.hpp"

namespace qaic::qaicd {
namespace {

using namespace std::chrono_literals;

// Listens on a socket in a fresh directory; serve() runs `script` on the first connection.
class ScriptedServer {
 public:
  ScriptedServer() {
    path_ = (dir_ / "s.sock").string();
    listen_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path_.c_str(), sizeof address.sun_path - 1);
    EXPECT_EQ(::bind(listen_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(::listen(listen_.get(), 4), 0);
  }
  ~ScriptedServer() {
    if (thread_.joinable()) thread_.join();
  }
  const std::string& path() const { return path_; }

  // `script` gets the accepted fd; it reads requests with readLine and writes answers.
  void serve(std::function<void(int)> script) {
    thread_ = std::thread([this, script = std::move(script)] {
      pollfd p{listen_.get(), POLLIN, 0};
      if (::poll(&p, 1, 10'000) != 1) return;
      UniqueFd fd(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (fd) script(fd.get());
    });
  }

  static std::string readLine(int fd) {
    std::string line;
    char c;
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, 10'000) == 1 && ::recv(fd, &c, 1, 0) == 1 && c != '\n') line += c;
    return line;
  }
  static void write(int fd, const std::string& text) { ::send(fd, text.data(), text.size(), MSG_NOSIGNAL); }

 private:
  testing::TempDir dir_{"qaicd-client-test"};
  std::string path_;
  UniqueFd listen_;
  std::thread thread_;
};

TEST(QaicdClientTest, NoDaemonIsAClearError) {
  auto client = QaicdClient::connect("/nonexistent-dir/qaicd.sock", 1s);
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error(), ENOENT);
  EXPECT_NE(client.message().find("/nonexistent-dir/qaicd.sock"), std::string::npos);
}

TEST(QaicdClientTest, DefaultSocketFollowsTheEnvironment) {
  ::setenv("QAICD_SOCKET", "/tmp/elsewhere.sock", 1);
  EXPECT_EQ(defaultQaicdSocket(), "/tmp/elsewhere.sock");
  ::unsetenv("QAICD_SOCKET");
  EXPECT_EQ(defaultQaicdSocket(), "/run/qaic/qaicd.sock");
}

TEST(QaicdClientTest, ASilentDaemonTimesOut) {
  ScriptedServer server;
  std::promise<void> done;
  server.serve([&](int fd) {
    ScriptedServer::readLine(fd);  // never answers
    done.get_future().wait_for(30s);
  });
  auto client = QaicdClient::connect(server.path(), 300ms);
  ASSERT_TRUE(client) << client.message();
  const auto start = std::chrono::steady_clock::now();
  auto hello = client->hello();
  const auto waited = std::chrono::steady_clock::now() - start;
  done.set_value();
  EXPECT_EQ(hello.error(), ETIMEDOUT);
  EXPECT_GE(waited, 300ms);
  EXPECT_LT(waited, 20s);
}

TEST(QaicdClientTest, TheDaemonsRefusalKeepsItsErrnoAndMessage) {
  ScriptedServer server;
  server.serve([](int fd) {
    ScriptedServer::readLine(fd);
    ScriptedServer::write(fd,
                          "{\"id\":1,\"ok\":false,\"error\":{\"code\":\"ENOSPC\",\"errno\":28,"
                          "\"message\":\"device 0: numNsp: 12 requested, 4 free\"}}\n");
  });
  auto client = QaicdClient::connect(server.path());
  ASSERT_TRUE(client);
  auto p = client->createPartition(Resources{12, 0, 0, 1, 0});
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error(), ENOSPC);
  EXPECT_NE(p.message().find("device 0: numNsp: 12 requested, 4 free"), std::string::npos) << p.message();
}

TEST(QaicdClientTest, AnAnswerToAnEarlierTimedOutRequestIsSkipped) {
  ScriptedServer server;
  server.serve([](int fd) {
    ScriptedServer::readLine(fd);  // request 1: answered late, after request 2 arrived
    ScriptedServer::readLine(fd);
    ScriptedServer::write(fd, "{\"id\":1,\"ok\":true,\"partitions\":[]}\n");
    ScriptedServer::write(fd, "{\"id\":2,\"ok\":true,\"devices\":[]}\n");
  });
  auto client = QaicdClient::connect(server.path(), 200ms);
  ASSERT_TRUE(client);
  EXPECT_EQ(client->list().error(), ETIMEDOUT);
  client->setTimeout(10s);
  auto devices = client->devices();
  ASSERT_TRUE(devices) << devices.message();
  EXPECT_TRUE(devices->empty());
}

TEST(QaicdClientTest, AMalformedAnswerIsEproto) {
  ScriptedServer server;
  server.serve([](int fd) {
    ScriptedServer::readLine(fd);
    ScriptedServer::write(fd, "{\"id\":1,\"ok\":true,\"partition\":{\"id\":\"x\"}}\n");
    ScriptedServer::readLine(fd);
    ScriptedServer::write(fd, "not json\n");
  });
  auto client = QaicdClient::connect(server.path());
  ASSERT_TRUE(client);
  EXPECT_EQ(client->adopt(100).error(), EPROTO);
  EXPECT_EQ(client->list().error(), EPROTO);
}

TEST(QaicdClientTest, ADaemonThatHangsUpIsEconnreset) {
  ScriptedServer server;
  server.serve([](int fd) { ScriptedServer::readLine(fd); });
  auto client = QaicdClient::connect(server.path());
  ASSERT_TRUE(client);
  EXPECT_EQ(client->hello().error(), ECONNRESET);
}

}  // namespace
}  // namespace qaic::qaicd
