// SPDX-License-Identifier: Apache-2.0
#include "ClientConnection.hpp"

#include <sys/socket.h>

namespace qaic::qaicd {

std::optional<PeerInfo> peerCredentials(int fd) {
  ucred cred{};
  socklen_t length = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0 || length != sizeof cred) return std::nullopt;
  return PeerInfo{cred.uid, cred.gid, cred.pid};
}

ClientConnection::ReadState ClientConnection::readLines(std::vector<std::string>& lines) {
  const ReadState state = read();
  while (auto line = nextLine()) lines.push_back(std::move(*line));
  return state;
}

std::optional<std::string> ClientConnection::nextLine() {
  if (lines_.empty()) return std::nullopt;
  std::string line = std::move(lines_.front());
  lines_.pop_front();
  return line;
}

ClientConnection::ReadState ClientConnection::read() {
  char buffer[16384];
  const ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, MSG_DONTWAIT);
  if (n == 0) return ReadState::Closed;
  if (n < 0) return errno == EAGAIN || errno == EINTR ? ReadState::Open : ReadState::Closed;
  input_.append(buffer, static_cast<std::size_t>(n));
  std::size_t start = 0;
  for (;;) {
    const auto newline = input_.find('\n', start);
    if (newline == std::string::npos) break;
    if (newline - start > kMaxLineBytes) return ReadState::TooLong;
    std::string line = input_.substr(start, newline - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) lines_.push_back(std::move(line));
    start = newline + 1;
  }
  input_.erase(0, start);
  if (input_.size() > kMaxLineBytes) return ReadState::TooLong;
  return ReadState::Open;
}

bool ClientConnection::send(const std::string& bytes) {
  output_ += bytes;
  if (!flush()) return false;
  return output_.size() <= kMaxPendingOutput;
}

bool ClientConnection::flush() {
  while (!output_.empty()) {
    const ssize_t n = ::send(fd_.get(), output_.data(), output_.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      output_.erase(0, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
  return true;
}

}  // namespace qaic::qaicd
