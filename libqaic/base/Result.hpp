// SPDX-License-Identifier: Apache-2.0
// The outcome of a system call or ioctl: a value, or the errno that explains why not, with the
// operation (and file, where there is one) named for messages. EAGAIN and every other errno are
// values here, never exceptions, so a caller can retry or report without unwinding.
#pragma once

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

namespace qaic {

struct SysError {
  int code = 0;         // errno
  std::string context;  // "EXECUTE_BO" or "open /root/dev/accel/accel0"

  std::string message() const { return context + ": " + std::strerror(code); }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose, like expected
  Result(SysError error) : error_(std::move(error)) {}

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  int error() const { return ok() ? 0 : error_.code; }
  const SysError& sysError() const { return error_; }
  std::string message() const { return ok() ? std::string("ok") : error_.message(); }

  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  SysError error_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(SysError error) : failed_(true), error_(std::move(error)) {}

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  int error() const { return failed_ ? error_.code : 0; }
  const SysError& sysError() const { return error_; }
  std::string message() const { return ok() ? std::string("ok") : error_.message(); }

 private:
  bool failed_ = false;
  SysError error_;
};

// The current errno, attributed to `context` (read before anything can allocate and clobber it).
inline SysError lastError(const char* context) {
  const int code = errno;
  return SysError{code, context};
}

}  // namespace qaic
