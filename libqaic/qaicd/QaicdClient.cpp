// SPDX-License-Identifier: Apache-2.0
#include "qaicd/QaicdClient.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstdlib>
#include <cstring>

namespace qaic::qaicd {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// Waits for `events` on fd until `deadline`; ETIMEDOUT when it passes.
Result<void> waitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    // Rounded up: poll must not return before the deadline and report a timeout early.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return SysError{ETIMEDOUT, "qaicd: no answer in time"};
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 60'000)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return lastError("qaicd: poll");
    if (n > 0) return {};
  }
}

}  // namespace

std::string defaultQaicdSocket() {
  const char* path = std::getenv("QAICD_SOCKET");
  return path != nullptr && *path != '\0' ? path : "/run/qaic/qaicd.sock";
}

Result<QaicdClient> QaicdClient::connect(const std::string& socketPath, std::chrono::milliseconds timeout) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socketPath.empty() || socketPath.size() >= sizeof address.sun_path)
    return SysError{ENAMETOOLONG, "qaicd socket path \"" + socketPath + "\""};
  std::memcpy(address.sun_path, socketPath.c_str(), socketPath.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return lastError("qaicd: socket");
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) break;
    if (errno == EINTR) continue;
    // A full backlog: the daemon is busy accepting; retry until the deadline.
    if (errno == EAGAIN) {
      if (Clock::now() >= deadline) return SysError{ETIMEDOUT, "connect " + socketPath};
      ::poll(nullptr, 0, 5);
      continue;
    }
    if (errno == EINPROGRESS) {
      if (auto w = waitFor(fd.get(), POLLOUT, deadline); !w) return SysError{w.error(), "connect " + socketPath};
      int error = 0;
      socklen_t length = sizeof error;
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length);
      if (error != 0) return SysError{error, "connect " + socketPath};
      break;
    }
    return SysError{errno, "connect " + socketPath};
  }
  return QaicdClient(std::move(fd), timeout);
}

Result<void> QaicdClient::sendAll(const std::string& bytes, Clock::time_point deadline) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd_.get(), bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (auto w = waitFor(fd_.get(), POLLOUT, deadline); !w) return w;
      continue;
    }
    return lastError("qaicd: send");
  }
  return {};
}

Result<std::string> QaicdClient::readLine(Clock::time_point deadline) {
  for (;;) {
    if (auto newline = pending_.find('\n'); newline != std::string::npos) {
      std::string line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      return line;
    }
    // Answers are small; one far beyond a request line means we are not talking to qaicd.
    if (pending_.size() > 64 * kMaxLineBytes) return SysError{EPROTO, "qaicd: response line too long"};
    char buffer[16384];
    const ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, 0);
    if (n > 0) {
      pending_.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return SysError{ECONNRESET, "qaicd closed the connection"};
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      if (auto w = waitFor(fd_.get(), POLLIN, deadline); !w) return w.sysError();
      continue;
    }
    return lastError("qaicd: recv");
  }
}

Result<std::string> QaicdClient::exchange(const std::string& line) {
  if (!fd_) return SysError{EBADF, "qaicd: not connected"};
  const auto deadline = Clock::now() + timeout_;
  if (auto sent = sendAll(line + "\n", deadline); !sent) return sent.sysError();
  return readLine(deadline);
}

Result<json> QaicdClient::call(Op op, const json& fields) {
  if (!fd_) return SysError{EBADF, "qaicd: not connected"};
  const int64_t id = nextId_++;
  const auto deadline = Clock::now() + timeout_;
  if (auto sent = sendAll(requestLine(id, op, fields), deadline); !sent) return sent.sysError();
  Response response;
  // Answers come in request order; one to an earlier request that timed out is skipped.
  do {
    auto line = readLine(deadline);
    if (!line) return line.sysError();
    auto parsed = parseResponse(*line);
    if (auto* e = std::get_if<ProtocolError>(&parsed)) return SysError{e->errnum, "qaicd: " + e->message};
    response = std::move(std::get<Response>(parsed));
  } while (response.id >= 0 && response.id < id);
  if (!response.ok)
    return SysError{response.error.errnum, "qaicd " + std::string(opName(op)) + ": " + response.error.message};
  if (response.id != id)
    return SysError{EPROTO,
                    "qaicd: answer to request " + std::to_string(response.id) + ", expected " + std::to_string(id)};
  return std::move(response.body);
}

Result<HelloInfo> QaicdClient::hello() {
  auto body = call(Op::Hello, {{"version", kProtocolVersion}});
  if (!body) return body.sysError();
  auto info = helloFromJson(*body);
  if (!info) return SysError{EPROTO, "qaicd hello: malformed answer"};
  return *info;
}

namespace {

// The array `key` of an answer, each element read with `read`; EPROTO naming `what` when the
// answer or an element is malformed.
template <typename Read>
auto arrayOf(Result<json> body, const char* key, const char* what, Read read)
    -> Result<std::vector<typename std::invoke_result_t<Read, const json&>::value_type>> {
  if (!body) return body.sysError();
  auto array = body->find(key);
  if (array == body->end() || !array->is_array())
    return SysError{EPROTO, std::string("qaicd ") + what + ": malformed answer"};
  std::vector<typename std::invoke_result_t<Read, const json&>::value_type> out;
  for (const auto& element : *array) {
    auto info = read(element);
    if (!info) return SysError{EPROTO, std::string("qaicd ") + what + ": malformed element of " + key};
    out.push_back(std::move(*info));
  }
  return out;
}

}  // namespace

Result<std::vector<DeviceInfo>> QaicdClient::devices() {
  return arrayOf(call(Op::Devices), "devices", "devices", deviceFromJson);
}

Result<std::vector<PartitionInfo>> QaicdClient::list() {
  return arrayOf(call(Op::List), "partitions", "list", partitionFromJson);
}

namespace {

Result<PartitionInfo> partitionOf(Result<json> body, const char* what) {
  if (!body) return body.sysError();
  auto it = body->find("partition");
  std::optional<PartitionInfo> info;
  if (it != body->end()) info = partitionFromJson(*it);
  if (!info) return SysError{EPROTO, std::string("qaicd ") + what + ": malformed answer"};
  return *info;
}

}  // namespace

Result<PartitionInfo> QaicdClient::createPartition(const Resources& resources, std::optional<uint32_t> device,
                                                   const std::string& label) {
  json fields = toJson(resources);
  if (device) fields["device"] = *device;
  if (!label.empty()) fields["label"] = label;
  return partitionOf(call(Op::Create, fields), "create");
}

Result<std::vector<PartitionInfo>> QaicdClient::createGroup(const Resources& resources,
                                                            const std::vector<uint32_t>& devices, uint32_t count,
                                                            const std::string& label) {
  json fields = toJson(resources);
  if (!devices.empty()) fields["devices"] = devices;
  if (count != 0) fields["deviceCount"] = count;
  if (!label.empty()) fields["label"] = label;
  return arrayOf(call(Op::Create, fields), "partitions", "create", partitionFromJson);
}

Result<void> QaicdClient::release(uint32_t partition) {
  auto body = call(Op::Release, {{"partition", partition}});
  if (!body) return body.sysError();
  return {};
}

Result<PartitionInfo> QaicdClient::adopt(uint32_t partition) {
  return partitionOf(call(Op::Adopt, {{"partition", partition}}), "adopt");
}

}  // namespace qaic::qaicd
