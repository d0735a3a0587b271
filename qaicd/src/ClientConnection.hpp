// SPDX-License-Identifier: Apache-2.0
// One client of qaicd: its socket, the credentials read at accept (SO_PEERCRED), the partial
// request line and the bounded queue of answers not yet written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "base/UniqueFd.hpp"
#include "qaicd/Protocol.hpp"

namespace qaic::qaicd {

class ClientConnection {
 public:
  // Answers waiting for a client that does not read; beyond this the client is dropped so it
  // cannot make the daemon buffer without bound.
  static constexpr std::size_t kMaxPendingOutput = 1024 * 1024;

  ClientConnection(UniqueFd fd, PeerInfo peer) : fd_(std::move(fd)), peer_(peer) {}

  int fd() const { return fd_.get(); }
  const PeerInfo& peer() const { return peer_; }

  enum class ReadState { Open, Closed, TooLong };
  // Reads what the socket has (one recv) and moves complete lines (newline removed, blank lines
  // skipped) to the queue. TooLong: a line exceeds kMaxLineBytes.
  ReadState read();
  // The oldest queued request line, if any.
  std::optional<std::string> nextLine();
  bool hasQueuedLines() const { return !lines_.empty(); }
  // read() then every queued line into `lines` (for tests of the framing).
  ReadState readLines(std::vector<std::string>& lines);

  // Queues `bytes` and writes as much as the socket takes. False: the client must be dropped
  // (write error, or more than kMaxPendingOutput pending).
  bool send(const std::string& bytes);
  // Writes pending output after EPOLLOUT; false on a write error.
  bool flush();
  bool hasPendingOutput() const { return !output_.empty(); }

 private:
  UniqueFd fd_;
  PeerInfo peer_;
  std::string input_;
  std::deque<std::string> lines_;
  std::string output_;
};

// SO_PEERCRED of a connected Unix socket.
std::optional<PeerInfo> peerCredentials(int fd);

}  // namespace qaic::qaicd
