// SPDX-License-Identifier: Apache-2.0
// A client process of qaicd for the multi-process tests: forked (optionally dropping to another
// user), it keeps a QaicdClient connection and obeys one-line commands from the test, so the
// test decides when it reserves, releases, opens nodes, activates programs, exits or is killed.
// Commands and their answers ("ok ..." or "err <errno> <message>"):
//   create <numNsp> <numVc> [device]   -> ok <partition id>  (with 64 MiB of DDR, 4 semaphores)
//   release <id> | adopt <id>          -> ok
//   reconnect                          -> ok      (a new connection, the old one closed)
//   open <path>                        -> ok      (open O_RDWR, then closed)
//   activate <node index> <cores>      -> ok <dbc> (node kept open, the activation held)
//   exit                               -> (the child exits 0)
// The destructor SIGKILLs and reaps a child still running (testing::Process).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "Process.hpp"

namespace qaic::qaicd::test {

class ClientChild {
 public:
  // `user` empty: stay root. The child closes every inherited descriptor but its command pipes.
  ClientChild(const std::string& root, const std::string& socket, const std::string& user = {});
  ClientChild(const ClientChild&) = delete;
  ClientChild& operator=(const ClientChild&) = delete;

  pid_t pid() const { return process_.pid(); }
  // Sends `line`; returns the answer, or "" when none came within `timeout`.
  std::string command(const std::string& line, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Sends without waiting (for several children acting at once); read the answer with reply().
  void send(const std::string& line);
  std::string reply(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  void kill(int signal);
  // Waits for the child to end and reaps it; false when it did not within `timeout`.
  bool waitExit(std::chrono::milliseconds timeout);

 private:
  static testing::Process start(const std::string& root, const std::string& socket, const std::string& user);

  testing::Process process_;
};

// "ok 101" -> 101; anything else -> 0.
unsigned okNumber(const std::string& answer);
// "err 28 ..." -> 28; anything else -> 0.
int errNumber(const std::string& answer);

}  // namespace qaic::qaicd::test
