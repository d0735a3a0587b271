// SPDX-License-Identifier: Apache-2.0
#include "ClientChild.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <list>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "DeviceClient.hpp"
#include "Process.hpp"
#include "QaicdFixture.hpp"
#include "ReluProgram.hpp"

namespace qaic::qaicd::test {

namespace {

// Room for a few small activations (IO regions and constants live in device DDR).
constexpr uint64_t kChildDdrBytes = 64ull << 20;

std::string failure(int errnum, const std::string& message) { return "err " + std::to_string(errnum) + " " + message; }

bool readLine(int fd, std::string& pending, std::string& line, int timeoutMs) {
  for (;;) {
    if (auto newline = pending.find('\n'); newline != std::string::npos) {
      line = pending.substr(0, newline);
      pending.erase(0, newline + 1);
      return true;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeoutMs) != 1) return false;
    char buffer[512];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) return false;
    pending.append(buffer, static_cast<std::size_t>(n));
  }
}

// The child's side: runs commands until "exit" or the test goes away.
[[noreturn]] void serveCommands(const std::string& root, const std::string& socket) {
  std::optional<QaicdClient> client;
  std::list<driver::DeviceNode> held;  // nodes kept open for their activations
  std::vector<std::byte> relu1 = testing::reluProgram(1);
  auto connect = [&]() -> std::string {
    client.reset();
    auto c = QaicdClient::connect(socket, std::chrono::seconds(30));
    if (!c) return failure(c.error(), c.message());
    client.emplace(std::move(*c));
    return "ok";
  };
  const std::string first = connect();
  std::string pending, line;
  while (readLine(STDIN_FILENO, pending, line, 120'000)) {
    std::istringstream in(line);
    std::string verb;
    in >> verb;
    std::string answer;
    if (verb == "exit") ::_exit(0);
    if (verb == "reconnect") {
      answer = connect();
    } else if (verb == "open") {
      std::string path;
      in >> path;
      const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
      answer = fd >= 0 ? "ok" : failure(errno, "open " + path);
      if (fd >= 0) ::close(fd);
    } else if (verb == "activate") {
      unsigned index = 0, cores = 1;
      in >> index >> cores;
      auto node = driver::DeviceNode::open(driver::DeviceRoot(root), index);
      if (!node) {
        answer = failure(node.error(), node.message());
      } else {
        const auto program = testing::reluProgram(cores);
        static uint32_t loadId = 0;
        ++loadId;
        auto loaded = driver::loadProgram(*node, program, loadId);
        auto dbc = loaded ? driver::activate(*node, loadId, 0, 16, 0) : Result<uint32_t>(loaded.sysError());
        if (!dbc)
          answer = failure(dbc.error(), dbc.message());
        else
          answer = "ok " + std::to_string(*dbc);
        held.push_back(std::move(*node));
      }
    } else if (!client) {
      answer = first;
    } else if (verb == "create") {
      Resources r;
      r.ddrSize = kChildDdrBytes;
      r.numSem = 4;  // the relu program uses one
      std::optional<uint32_t> device;
      in >> r.numNsp >> r.numVc;
      if (uint32_t d; in >> d) device = d;
      auto p = client->createPartition(r, device, "child");
      answer = p ? "ok " + std::to_string(p->id) : failure(p.error(), p.message());
    } else if (verb == "release") {
      uint32_t id = 0;
      in >> id;
      auto r = client->release(id);
      answer = r ? "ok" : failure(r.error(), r.message());
    } else if (verb == "adopt") {
      uint32_t id = 0;
      in >> id;
      auto r = client->adopt(id);
      answer = r ? "ok " + std::to_string(r->id) : failure(r.error(), r.message());
    } else {
      answer = failure(EINVAL, "unknown command " + verb);
    }
    std::replace(answer.begin(), answer.end(), '\n', ' ');
    answer += '\n';
    if (::write(STDOUT_FILENO, answer.data(), answer.size()) != static_cast<ssize_t>(answer.size())) ::_exit(3);
  }
  ::_exit(0);
}

}  // namespace

unsigned okNumber(const std::string& answer) {
  if (answer.rfind("ok ", 0) != 0) return 0;
  return static_cast<unsigned>(std::strtoul(answer.c_str() + 3, nullptr, 10));
}

int errNumber(const std::string& answer) {
  if (answer.rfind("err ", 0) != 0) return 0;
  return static_cast<int>(std::strtol(answer.c_str() + 4, nullptr, 10));
}

ClientChild::ClientChild(const std::string& root, const std::string& socket, const std::string& user)
    : process_(start(root, socket, user)) {}

testing::Process ClientChild::start(const std::string& root, const std::string& socket, const std::string& user) {
  // Resolved before fork: getpwnam is not async-signal-safe.
  uid_t uid = 0;
  gid_t gid = 0;
  if (!user.empty()) {
    const passwd* pw = ::getpwnam(user.c_str());
    if (pw == nullptr) throw std::runtime_error("no user " + user);
    uid = pw->pw_uid;
    gid = pw->pw_gid;
  }
  // Commands on the child's stdin, answers on its stdout; nothing else survives into the child
  // (an inherited qaicd connection of the test would keep another process's lease alive).
  testing::ProcessOptions pipes;
  pipes.pipeStdin = true;
  pipes.captureStdout = true;
  return testing::Process::fork(
      [=]() -> int {
        if (!user.empty() && (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0)) return 90;
        serveCommands(root, socket);
      },
      pipes);
}

void ClientChild::send(const std::string& line) { process_.writeInput(line + "\n"); }

std::string ClientChild::reply(std::chrono::milliseconds timeout) { return process_.readLine(timeout); }

std::string ClientChild::command(const std::string& line, std::chrono::milliseconds timeout) {
  send(line);
  return reply(timeout);
}

void ClientChild::kill(int signal) { process_.signal(signal); }

bool ClientChild::waitExit(std::chrono::milliseconds timeout) { return process_.wait(timeout).ended; }

}  // namespace qaic::qaicd::test
