// SPDX-License-Identifier: Apache-2.0
// ClientConnection over a socketpair: lines split across reads, the 64 KiB line limit, and the
// bounded output queue of a client that does not read.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ClientConnection.hpp"

namespace qaic::qaicd {
namespace {

struct Pair {
  Pair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    server = std::make_unique<ClientConnection>(UniqueFd(fds[0]), PeerInfo{1, 2, 3});
    client.reset(fds[1]);
  }
  void write(const std::string& bytes) {
    ASSERT_EQ(::send(client.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }
  std::unique_ptr<ClientConnection> server;
  UniqueFd client;
};

TEST(ClientConnectionTest, AssemblesLinesAcrossReadsAndSkipsBlankOnes) {
  Pair p;
  std::vector<std::string> lines;
  p.write("{\"id\":1,");
  EXPECT_EQ(p.server->readLines(lines), ClientConnection::ReadState::Open);
  EXPECT_TRUE(lines.empty());
  p.write("\"op\":\"list\"}\n\n  \n{\"id\":2}\r\n");
  EXPECT_EQ(p.server->readLines(lines), ClientConnection::ReadState::Open);
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"id\":1,\"op\":\"list\"}", "{\"id\":2}"}));
  p.client.reset();
  lines.clear();
  EXPECT_EQ(p.server->readLines(lines), ClientConnection::ReadState::Closed);
}

// Reads until the state changes or `lines` gets something; every wait is bounded.
ClientConnection::ReadState readUntil(ClientConnection& server, std::vector<std::string>& lines) {
  ClientConnection::ReadState state = ClientConnection::ReadState::Open;
  for (int i = 0; i < 1000 && lines.empty() && state == ClientConnection::ReadState::Open; ++i) {
    pollfd p{server.fd(), POLLIN, 0};
    if (::poll(&p, 1, 10'000) != 1) break;
    state = server.readLines(lines);
  }
  return state;
}

TEST(ClientConnectionTest, ALineBeyondTheLimitIsTooLong) {
  Pair p;
  const std::string unterminated(kMaxLineBytes + 1, 'x');
  std::thread writer([&] { ::send(p.client.get(), unterminated.data(), unterminated.size(), MSG_NOSIGNAL); });
  std::vector<std::string> lines;
  const auto state = readUntil(*p.server, lines);
  p.client.reset();  // unblocks the writer if the reader stopped early
  writer.join();
  EXPECT_EQ(state, ClientConnection::ReadState::TooLong);
  EXPECT_TRUE(lines.empty());
}

TEST(ClientConnectionTest, ALineOfExactlyTheLimitIsAccepted) {
  Pair p;
  const std::string line(kMaxLineBytes, 'y');
  std::thread writer([&] { p.write(line + "\n"); });
  std::vector<std::string> lines;
  const auto state = readUntil(*p.server, lines);
  writer.join();
  EXPECT_EQ(state, ClientConnection::ReadState::Open);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].size(), kMaxLineBytes);
}

TEST(ClientConnectionTest, ANonReadingClientOverflowsTheBoundedOutput) {
  Pair p;
  const std::string answer(4096, 'a');
  bool kept = true;
  std::size_t queued = 0;
  while (kept && queued < 4 * ClientConnection::kMaxPendingOutput) {
    kept = p.server->send(answer);
    queued += answer.size();
  }
  EXPECT_FALSE(kept) << "output grew past the bound without the client being dropped";
  EXPECT_LE(queued, ClientConnection::kMaxPendingOutput + 1024 * 1024)
      << "the socket buffer plus the bound should be reached well before 4 MiB";
}

}  // namespace
}  // namespace qaic::qaicd
