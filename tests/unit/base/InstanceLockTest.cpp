// SPDX-License-Identifier: Apache-2.0
#include "base/InstanceLock.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "TempDir.hpp"

namespace qaic {
namespace {

// A forked holder: creates the lock, reports through a pipe, then sleeps until killed.
pid_t forkHolder(const std::string& path) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    auto lock = createHeldInstanceLock(path, 0644);
    const char byte = lock ? '1' : '0';
    [[maybe_unused]] ssize_t w = ::write(ready[1], &byte, 1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char byte = 0;
  const bool ok = ::read(ready[0], &byte, 1) == 1 && byte == '1';
  ::close(ready[0]);
  if (!ok && pid > 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return -1;
  }
  return pid;
}

TEST(InstanceLock, HeldWhileTheHolderLivesAndFreeOnceItIsAZombie) {
  testing::TempDir dir;
  const std::string path = (dir.path() / "instance.lock").string();
  const pid_t holder = forkHolder(path);
  ASSERT_GT(holder, 0) << "the holder could not create its lock";
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_FALSE(std::filesystem::exists(path + ".new")) << "the temporary name stayed";

  auto tester = openInstanceLock(path);
  ASSERT_TRUE(tester) << tester.message();
  auto held = instanceLockHeld(tester->get());
  ASSERT_TRUE(held) << held.message();
  EXPECT_TRUE(*held);
  // Testing places no lock: a second tester sees the same, and so does the first again.
  auto other = openInstanceLock(path);
  ASSERT_TRUE(other) << other.message();
  EXPECT_TRUE(instanceLockHeld(other->get()).value());
  EXPECT_TRUE(instanceLockHeld(tester->get()).value());

  ASSERT_EQ(::kill(holder, SIGKILL), 0);
  // Not reaped yet: waitid with WNOWAIT sees it exited and leaves it a zombie.
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(holder), &info, WEXITED | WNOWAIT), 0);
  held = instanceLockHeld(tester->get());
  ASSERT_TRUE(held) << held.message();
  EXPECT_FALSE(*held) << "a dead holder's lock is still held";
  ::waitpid(holder, nullptr, 0);
}

TEST(InstanceLock, MissingLockAndTakenTemporaryNameAreErrors) {
  testing::TempDir dir;
  const std::string path = (dir.path() / "instance.lock").string();
  auto missing = openInstanceLock(path);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), ENOENT);
  dir.writeFile("instance.lock.new", "");
  auto taken = createHeldInstanceLock(path, 0644);
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error(), EEXIST) << taken.message();
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace qaic
