// SPDX-License-Identifier: Apache-2.0
// The mainline qaic module's parameters, shown under sys/module/qaic/parameters/ and shared by
// every device of an emulator instance as a loaded module's are by every card it drives. The
// initial values come from the configuration (as from modprobe); those mainline declares 0600
// can be changed at run time by writing the file, datapath_polling (0400) only at start.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qaic::emu {

struct ModuleParameterValues {
  bool datapathPolling = false;              // datapath_polling
  uint32_t waitExecDefaultTimeoutMs = 5000;  // wait_exec_default_timeout_ms
  uint32_t controlRespTimeoutS = 60;         // control_resp_timeout_s
  uint32_t mhiTimeoutMs = 2000;              // mhi_timeout_ms
  uint32_t datapathPollIntervalUs = 100;     // datapath_poll_interval_us
};

class ModuleParameters {
 public:
  struct Info {
    const char* name;
    unsigned mode;  // 0600 (root may change it) or 0400
  };
  static const std::vector<Info>& all();

  explicit ModuleParameters(const ModuleParameterValues& initial = {});

  // The file's content: "%u\n" for a number, "Y\n" / "N\n" for a boolean; nullopt for an
  // unknown name.
  std::optional<std::string> read(const std::string& name) const;
  // Parses a write as the kernel's param_set_uint / param_set_bool do (a number in any base
  // strtoul accepts, a trailing newline allowed): EINVAL for a bad value, EACCES for a
  // read-only parameter, ENOENT for an unknown name.
  int write(const std::string& name, const std::string& text);

  // Parses one value for the configuration; false when `text` is not a valid value for `name`.
  static bool parse(const std::string& name, const std::string& text, ModuleParameterValues& into);

  bool datapathPolling() const { return datapathPolling_.load(); }
  std::chrono::milliseconds waitExecDefaultTimeout() const {
    return std::chrono::milliseconds(waitExecDefaultTimeoutMs_.load());
  }
  std::chrono::seconds controlResponseTimeout() const { return std::chrono::seconds(controlRespTimeoutS_.load()); }
  std::chrono::milliseconds mhiTimeout() const { return std::chrono::milliseconds(mhiTimeoutMs_.load()); }
  std::chrono::microseconds datapathPollInterval() const {
    return std::chrono::microseconds(datapathPollIntervalUs_.load());
  }

 private:
  std::atomic<bool> datapathPolling_;
  std::atomic<uint32_t> waitExecDefaultTimeoutMs_;
  std::atomic<uint32_t> controlRespTimeoutS_;
  std::atomic<uint32_t> mhiTimeoutMs_;
  std::atomic<uint32_t> datapathPollIntervalUs_;
};

}  // namespace qaic::emu
