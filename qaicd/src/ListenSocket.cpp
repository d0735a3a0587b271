// SPDX-License-Identifier: Apache-2.0
#include "ListenSocket.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>

#include <cstring>
#include <filesystem>

namespace qaic::qaicd {

namespace {

// Non-blocking, so a daemon that is alive but has a full backlog answers EAGAIN instead of
// blocking the probe.
bool someoneListens(const sockaddr_un& address) {
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!probe) return false;
  return ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 || errno == EAGAIN;
}

}  // namespace

bool socketAnswers(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof address.sun_path) return false;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return someoneListens(address);
}

Result<ListenSocket> ListenSocket::open(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof address.sun_path)
    return SysError{ENAMETOOLONG, "socket path \"" + path + "\" (at most 107 bytes)"};
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);

  const auto parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::exists(parent, ec)) {
    std::filesystem::create_directories(parent, ec);
    if (ec) return SysError{ec.value(), "create " + parent.string()};
    ::chmod(parent.c_str(), 0755);
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return SysError{EEXIST, path + " exists and is not a socket"};
    if (someoneListens(address)) return SysError{EADDRINUSE, path + ": another qaicd is serving it"};
    ::unlink(path.c_str());
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return lastError("socket");
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    return SysError{errno, "bind " + path};
  if (::chmod(path.c_str(), 0666) != 0 || ::listen(fd.get(), 256) != 0 || ::lstat(path.c_str(), &st) != 0) {
    const int code = errno;
    ::unlink(path.c_str());
    return SysError{code, "listen " + path};
  }
  return ListenSocket(std::move(fd), path, st.st_ino);
}

Result<ListenSocket> ListenSocket::activatedOrOpen(const std::string& path) {
  // 1: LISTEN_FDS is unset, so the programs qaicd starts do not take the socket for theirs.
  const int count = ::sd_listen_fds(1);
  if (count < 0) return SysError{-count, "sd_listen_fds"};
  if (count == 0) return open(path);
  if (count != 1)
    return SysError{EINVAL, "systemd passed " + std::to_string(count) + " sockets; qaicd serves exactly one"};
  UniqueFd fd(SD_LISTEN_FDS_START);
  if (::sd_is_socket_unix(fd.get(), SOCK_STREAM, 1, nullptr, 0) <= 0)
    return SysError{ENOTSOCK, "the socket systemd passed (fd 3) is not a listening Unix stream socket"};
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0 || ::fcntl(fd.get(), F_SETFD, FD_CLOEXEC) != 0)
    return lastError("fcntl on the socket systemd passed");
  sockaddr_un address{};
  socklen_t length = sizeof address;
  std::string bound;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &length) == 0 && length > sizeof(sa_family_t))
    bound.assign(address.sun_path, ::strnlen(address.sun_path, length - sizeof(sa_family_t)));
  return ListenSocket(std::move(fd), bound, 0);  // inode 0: the file is systemd's to remove
}

ListenSocket::ListenSocket(ListenSocket&& other) noexcept
    : fd_(std::move(other.fd_)), path_(std::move(other.path_)), inode_(std::exchange(other.inode_, 0)) {}

ListenSocket::~ListenSocket() {
  if (!fd_ || inode_ == 0) return;
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_ino == inode_) ::unlink(path_.c_str());
}

}  // namespace qaic::qaicd
