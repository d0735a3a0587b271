#include "ChildProcess.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string_view>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace qaic::faults::test {
namespace {

std::string readAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

ChildProcess::ChildProcess(const std::string& program, const std::vector<std::string>& args,
                           const std::string& qaicRoot, const std::filesystem::path& logDir, const std::string& tag)
    : outPath_(logDir / (tag + ".out")), errPath_(logDir / (tag + ".err")) {
  // Everything the child needs is prepared before fork: it only calls async-signal-safe functions.
  std::vector<std::string> argvStrings{program};
  argvStrings.insert(argvStrings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argvStrings) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> envStrings{"QAIC_ROOT=" + qaicRoot};
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string_view(*e).substr(0, 10) != "QAIC_ROOT=") envStrings.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : envStrings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int outFd = ::open(outPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int errFd = ::open(errPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (outFd < 0 || errFd < 0) {
    if (outFd >= 0) ::close(outFd);
    if (errFd >= 0) ::close(errFd);
    throw std::runtime_error("cannot create the output files of " + tag + " in " + logDir.string());
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(outFd, 1);
    ::dup2(errFd, 2);
    ::execve(program.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(outFd);
  ::close(errFd);
  if (pid_ < 0) throw std::runtime_error("fork failed for " + tag);
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exit_.ended) {
    ::kill(pid_, SIGKILL);
    wait(std::chrono::seconds(10));
  }
}

ChildExit ChildProcess::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!exit_.ended) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_.ended = true;
      exit_.exited = WIFEXITED(status);
      exit_.code = exit_.exited ? WEXITSTATUS(status) : -1;
      exit_.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      break;
    }
    if (r < 0 || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return exit_;
}

void ChildProcess::kill(int signal) {
  if (pid_ > 0 && !exit_.ended) ::kill(pid_, signal);
}

std::string ChildProcess::out() const { return readAll(outPath_); }
std::string ChildProcess::err() const { return readAll(errPath_); }

}  // namespace qaic::faults::test
