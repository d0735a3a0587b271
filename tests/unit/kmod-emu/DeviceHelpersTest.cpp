// SPDX-License-Identifier: Apache-2.0
// Small pieces of the device: the module parameters' parsing and the SIGBUS-guarded copy.
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "GuardedCopy.hpp"
#include "ModuleParameters.hpp"

namespace qaic::emu {
namespace {

TEST(ModuleParameters, ParseLikeTheKernelsSetters) {
  ModuleParameters p;
  EXPECT_EQ(p.read("datapath_polling"), "N\n");
  EXPECT_EQ(p.write("wait_exec_default_timeout_ms", "0x20\n"), 0);
  EXPECT_EQ(p.waitExecDefaultTimeout(), std::chrono::milliseconds(32));
  EXPECT_EQ(p.write("wait_exec_default_timeout_ms", "010"), 0) << "a leading 0 is octal";
  EXPECT_EQ(p.read("wait_exec_default_timeout_ms"), "8\n");
  EXPECT_EQ(p.write("wait_exec_default_timeout_ms", "+7"), 0);
  EXPECT_EQ(p.write("wait_exec_default_timeout_ms", " 7"), EINVAL);
  EXPECT_EQ(p.write("wait_exec_default_timeout_ms", "7 "), EINVAL);
  EXPECT_EQ(p.write("wait_exec_default_timeout_ms", ""), EINVAL);
  EXPECT_EQ(p.write("wait_exec_default_timeout_ms", "4294967296"), ERANGE);
  EXPECT_EQ(p.read("wait_exec_default_timeout_ms"), "7\n");
  EXPECT_EQ(p.write("datapath_polling", "Y"), EACCES);
  EXPECT_EQ(p.write("no_such_parameter", "1"), ENOENT);
  ModuleParameterValues v;
  EXPECT_TRUE(ModuleParameters::parse("datapath_polling", "on", v));
  EXPECT_TRUE(v.datapathPolling);
  EXPECT_TRUE(ModuleParameters::parse("datapath_polling", "n", v));
  EXPECT_FALSE(v.datapathPolling);
  EXPECT_FALSE(ModuleParameters::parse("datapath_polling", "maybe", v));
}

// A file shrunk under a mapping: the copy reports the fault instead of killing the process,
// on any thread, any number of times.
TEST(GuardedCopy, ATruncatedMappingIsAFailedCopy) {
  const int fd = memfd_create("guarded", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 8192), 0);
  auto* mapped = static_cast<std::byte*>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(mapped, MAP_FAILED);
  std::byte local[256] = {};
  std::memset(mapped, 7, 8192);
  EXPECT_TRUE(guardedCopy(local, mapped + 100, sizeof local));
  EXPECT_EQ(local[0], std::byte{7});
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  EXPECT_TRUE(guardedCopy(local, mapped, sizeof local)) << "the first page is still there";
  EXPECT_FALSE(guardedCopy(local, mapped + 4096, sizeof local));
  EXPECT_FALSE(guardedCopy(mapped + 4096, local, sizeof local));
  bool onAnotherThread = true;
  std::thread([&] { onAnotherThread = guardedCopy(local, mapped + 6000, 16); }).join();
  EXPECT_FALSE(onAnotherThread);
  munmap(mapped, 8192);
  close(fd);
}

}  // namespace
}  // namespace qaic::emu
