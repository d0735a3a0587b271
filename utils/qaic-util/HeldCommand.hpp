// SPDX-License-Identifier: Apache-2.0
// How qaic-util create holds a lease: until a signal, or for the life of a command it runs.
// SIGINT, SIGTERM and SIGHUP are blocked by the constructor and read from a signalfd, so a
// signal ends the wait instead of the process and the lease is released in order.
#pragma once

#include <signal.h>

#include <map>
#include <string>
#include <vector>

#include "base/UniqueFd.hpp"

namespace qaic::util {

class HeldCommand {
 public:
  HeldCommand();   // blocks the signals; throws std::runtime_error when signalfd fails
  ~HeldCommand();  // restores the signal mask
  HeldCommand(const HeldCommand&) = delete;
  HeldCommand& operator=(const HeldCommand&) = delete;

  // Waits for SIGINT, SIGTERM or SIGHUP; returns the signal number.
  int waitForSignal();
  // Runs `argv` (searched in PATH) with `environment` added to this process's environment,
  // forwarding SIGINT/SIGTERM/SIGHUP to it, and returns its exit status as a shell does
  // (128 + signal when it was killed, 127 when it could not be started; `error` says why).
  int run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& environment,
          std::string& error);

 private:
  sigset_t blocked_{}, previous_{};
  UniqueFd signals_;
};

}  // namespace qaic::util
