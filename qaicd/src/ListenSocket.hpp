// SPDX-License-Identifier: Apache-2.0
// qaicd's listening Unix socket. A socket file left by a qaicd that died is replaced; one that
// still answers means another qaicd serves it (EADDRINUSE). The file is removed on destruction
// only while it is still the one this process bound. Under systemd socket activation
// (qaicd.socket) the socket is the one systemd passed, and its file stays systemd's.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/Result.hpp"
#include "base/UniqueFd.hpp"

namespace qaic::qaicd {

class ListenSocket {
 public:
  // Creates the parent directory (0755) when missing; the socket is mode 0666: every local user
  // may connect, and what each may do follows from the peer credentials.
  static Result<ListenSocket> open(const std::string& path);
  // The socket systemd passed (sd_listen_fds: exactly one listening Unix stream socket), else
  // open(path). Without systemd the environment has no LISTEN_FDS and this is open(path).
  static Result<ListenSocket> activatedOrOpen(const std::string& path);
  ListenSocket(ListenSocket&& other) noexcept;
  ListenSocket& operator=(ListenSocket&&) = delete;
  ~ListenSocket();

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }

 private:
  ListenSocket(UniqueFd fd, std::string path, ino_t inode)
      : fd_(std::move(fd)), path_(std::move(path)), inode_(inode) {}
  UniqueFd fd_;
  std::string path_;
  ino_t inode_ = 0;
};

// Whether something accepts connections on the Unix socket at `path` now (a non-blocking
// connect; a full backlog counts as alive).
bool socketAnswers(const std::string& path);

}  // namespace qaic::qaicd
