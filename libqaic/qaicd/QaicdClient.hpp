// SPDX-License-Identifier: Apache-2.0
// A connection to qaicd (docs/qaicd.md). The connection IS the lease: partitions created through
// it are released by the daemon when it is destroyed or the process exits (even by SIGKILL).
// Every call waits at most the connection's timeout. One call at a time per object (not
// thread-safe); open one connection per thread instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/Result.hpp"
#include "base/UniqueFd.hpp"
#include "qaicd/Protocol.hpp"

namespace qaic::qaicd {

// $QAICD_SOCKET, or /run/qaic/qaicd.sock.
std::string defaultQaicdSocket();

class QaicdClient {
 public:
  static constexpr std::chrono::milliseconds kDefaultTimeout{10'000};

  // ENOENT / ECONNREFUSED when no daemon listens there; ETIMEDOUT after `timeout`, which also
  // becomes the timeout of every later call.
  static Result<QaicdClient> connect(const std::string& socketPath,
                                     std::chrono::milliseconds timeout = kDefaultTimeout);

  Result<HelloInfo> hello();
  Result<std::vector<DeviceInfo>> devices();
  // A refusal comes back with the daemon's errno (ENOSPC, ENODEV, EINVAL, ...) and its message,
  // which names the device and the resource.
  Result<PartitionInfo> createPartition(const Resources& resources, std::optional<uint32_t> device = std::nullopt,
                                        const std::string& label = {});
  // A group: one partition of `resources` on each of `devices`, or on the first `count` devices
  // with room when `devices` is empty; made together or not at all (docs/qaicd.md, "Groups").
  Result<std::vector<PartitionInfo>> createGroup(const Resources& resources, const std::vector<uint32_t>& devices,
                                                 uint32_t count, const std::string& label = {});
  Result<void> release(uint32_t partition);
  Result<std::vector<PartitionInfo>> list();
  // Binds a lease this process holds (recorded holder pid) to this connection, after a qaicd
  // restart.
  Result<PartitionInfo> adopt(uint32_t partition);

  // One raw line out (a '\n' is appended), one response line back: for tools and tests that
  // speak the protocol themselves.
  Result<std::string> exchange(const std::string& line);

  void setTimeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }
  int fd() const { return fd_.get(); }

 private:
  QaicdClient(UniqueFd fd, std::chrono::milliseconds timeout) : fd_(std::move(fd)), timeout_(timeout) {}
  // Sends a request and returns the successful response's body, or the daemon's error.
  Result<nlohmann::json> call(Op op, const nlohmann::json& fields = nlohmann::json::object());
  Result<void> sendAll(const std::string& bytes, std::chrono::steady_clock::time_point deadline);
  Result<std::string> readLine(std::chrono::steady_clock::time_point deadline);

  UniqueFd fd_;
  std::chrono::milliseconds timeout_;
  int64_t nextId_ = 1;
  std::string pending_;  // bytes after the last line read
};

}  // namespace qaic::qaicd
