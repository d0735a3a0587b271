// SPDX-License-Identifier: Apache-2.0
// qaic-runner writing outputs onto a full file system (a 64 KiB tmpfs): it must fail naming the
// file it could not write, and leave only complete output files behind, no temporaries.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <regex>

#include "FaultRig.hpp"

namespace fs = std::filesystem;

namespace qaic::faults::test {
namespace {

using namespace std::chrono_literals;

constexpr std::uintmax_t kOutputBytes = 4 * sizeof(int32_t);  // "out" of the regular network

class FullDiskTest : public LiveFaultTest {
 protected:
  void SetUp() override {
    LiveFaultTest::SetUp();
    // Mounting needs root; CI runs as root, so anything else is a broken setup, not a skip.
    ASSERT_EQ(::geteuid(), 0u) << "this test mounts a tmpfs and must run as root";
    disk_ = testDir() / "disk";
    fs::create_directories(disk_);
    ASSERT_EQ(::mount("tmpfs", disk_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64k"), 0)
        << "mount -t tmpfs -o size=64k " << disk_ << ": " << std::strerror(errno);
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) {
      EXPECT_EQ(::umount2(disk_.c_str(), MNT_DETACH), 0) << disk_ << ": " << std::strerror(errno);
    }
    LiveFaultTest::TearDown();
  }

  fs::path disk_;
  bool mounted_ = false;
};

TEST_F(FullDiskTest, FullDiskFailsNamingTheFileAndLeavesOnlyCompleteFiles) {
  // 16-byte outputs, but each file takes at least a 4 KiB page of the 64 KiB: 200 cannot fit.
  auto runner = startRunner({"-n", "200", "--write-output-dir", disk_.string(), "--write-output-num-samples", "200"});
  const ExitStatus e = runner->wait(60s);
  ASSERT_TRUE(e.ended) << "the runner hung on a full disk";
  ASSERT_TRUE(e.exited) << "the runner died of signal " << e.signal;
  EXPECT_EQ(e.code, 1) << runner->output();  // the runner's "inference failed" exit code
  const std::string err = runner->errorOutput();
  std::smatch named;
  const std::regex namedFile("qaic-runner: error: [^\n]*'" + disk_.string() +
                             "/(out-inf-[0-9]+\\.bin)'[^\n]*No space left");
  ASSERT_TRUE(std::regex_search(err, named, namedFile)) << err;
  RecordProperty("runner_error", err);
  EXPECT_FALSE(fs::exists(disk_ / named[1].str())) << "the file that failed was left behind";

  const std::regex complete("out-inf-[0-9]+\\.bin");
  int files = 0;
  for (const auto& entry : fs::directory_iterator(disk_)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(std::regex_match(name, complete)) << "leftover " << name;
    EXPECT_EQ(entry.file_size(), kOutputBytes) << name;
    ++files;
  }
  EXPECT_GT(files, 0) << "nothing was written before the disk filled";
  EXPECT_LT(files, 200);
  RecordProperty("complete_files", files);
}

}  // namespace
}  // namespace qaic::faults::test
