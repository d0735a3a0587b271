// SPDX-License-Identifier: Apache-2.0
#include "ModuleParameters.hpp"

#include <cerrno>
#include <cstdlib>

namespace qaic::emu {
namespace {

// kstrtouint(text, 0): an optional '+', then decimal, 0x-hex or 0-octal digits, then at most
// one newline. ERANGE above UINT32_MAX, EINVAL for anything else.
int parseUnsigned(std::string text, uint32_t& value) {
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (!text.empty() && text.front() == '+') text.erase(0, 1);
  if (text.empty() || text.front() == '-' || text.front() == ' ') return EINVAL;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 0);
  if (end != text.c_str() + text.size()) return EINVAL;
  if (errno == ERANGE || v > UINT32_MAX) return ERANGE;
  value = static_cast<uint32_t>(v);
  return 0;
}

// kstrtobool: decided by the first characters (y/Y/t/T/1, n/N/f/F/0, "on", "off").
int parseBool(const std::string& text, bool& value) {
  if (text.empty()) return EINVAL;
  switch (text[0]) {
    case 'y':
    case 'Y':
    case 't':
    case 'T':
    case '1': value = true; return 0;
    case 'n':
    case 'N':
    case 'f':
    case 'F':
    case '0': value = false; return 0;
    case 'o':
    case 'O':
      if (text.size() > 1 && (text[1] == 'n' || text[1] == 'N')) {
        value = true;
        return 0;
      }
      if (text.size() > 1 && (text[1] == 'f' || text[1] == 'F')) {
        value = false;
        return 0;
      }
      return EINVAL;
    default: return EINVAL;
  }
}

int set(const std::string& name, const std::string& text, ModuleParameterValues& v) {
  if (name == "datapath_polling") return parseBool(text, v.datapathPolling);
  if (name == "wait_exec_default_timeout_ms") return parseUnsigned(text, v.waitExecDefaultTimeoutMs);
  if (name == "control_resp_timeout_s") return parseUnsigned(text, v.controlRespTimeoutS);
  if (name == "mhi_timeout_ms") return parseUnsigned(text, v.mhiTimeoutMs);
  if (name == "datapath_poll_interval_us") return parseUnsigned(text, v.datapathPollIntervalUs);
  return ENOENT;
}

}  // namespace

const std::vector<ModuleParameters::Info>& ModuleParameters::all() {
  static const std::vector<Info> params = {{"datapath_polling", 0400},
                                           {"wait_exec_default_timeout_ms", 0600},
                                           {"control_resp_timeout_s", 0600},
                                           {"mhi_timeout_ms", 0600},
                                           {"datapath_poll_interval_us", 0600}};
  return params;
}

ModuleParameters::ModuleParameters(const ModuleParameterValues& initial)
    : datapathPolling_(initial.datapathPolling),
      waitExecDefaultTimeoutMs_(initial.waitExecDefaultTimeoutMs),
      controlRespTimeoutS_(initial.controlRespTimeoutS),
      mhiTimeoutMs_(initial.mhiTimeoutMs),
      datapathPollIntervalUs_(initial.datapathPollIntervalUs) {}

std::optional<std::string> ModuleParameters::read(const std::string& name) const {
  auto n = [](uint32_t v) { return std::to_string(v) + "\n"; };
  if (name == "datapath_polling") return std::string(datapathPolling_.load() ? "Y\n" : "N\n");
  if (name == "wait_exec_default_timeout_ms") return n(waitExecDefaultTimeoutMs_.load());
  if (name == "control_resp_timeout_s") return n(controlRespTimeoutS_.load());
  if (name == "mhi_timeout_ms") return n(mhiTimeoutMs_.load());
  if (name == "datapath_poll_interval_us") return n(datapathPollIntervalUs_.load());
  return std::nullopt;
}

int ModuleParameters::write(const std::string& name, const std::string& text) {
  if (name == "datapath_polling") return EACCES;  // 0400: a load-time choice
  ModuleParameterValues v;
  if (int err = set(name, text, v)) return err;
  if (name == "wait_exec_default_timeout_ms") waitExecDefaultTimeoutMs_.store(v.waitExecDefaultTimeoutMs);
  if (name == "control_resp_timeout_s") controlRespTimeoutS_.store(v.controlRespTimeoutS);
  if (name == "mhi_timeout_ms") mhiTimeoutMs_.store(v.mhiTimeoutMs);
  if (name == "datapath_poll_interval_us") datapathPollIntervalUs_.store(v.datapathPollIntervalUs);
  return 0;
}

bool ModuleParameters::parse(const std::string& name, const std::string& text, ModuleParameterValues& into) {
  return set(name, text, into) == 0;
}

}  // namespace qaic::emu
