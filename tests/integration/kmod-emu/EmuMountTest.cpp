// SPDX-License-Identifier: Apache-2.0
// qaic-emu as a process: the tree it serves, start/stop, stale mounts, --daemon, faults, and
// the control ioctls on a raw device node.
#include <grp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "DeviceAttributes.hpp"
#include "DeviceClient.hpp"
#include "EmulatorProcess.hpp"
#include "RawDevice.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace std::chrono_literals;

// A foreground qaic-emu on `root` with `arguments`.
EmulatorOptions foreground(const std::filesystem::path& root, std::vector<std::string> arguments = {},
                           std::string config = {}) {
  return EmulatorOptions{std::move(config), std::move(arguments), root, true};
}

bool statable(const std::filesystem::path& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

TEST(EmuMount, ServesDeviceNodeAndSysfsAttributes) {
  TempDir root;
  EmulatorProcess emu(foreground(root.path()));
  struct stat st;
  ASSERT_EQ(stat(emu.nodePath(0).c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 0777, getgrnam("qaic") ? 0660u : 0666u);
  EXPECT_EQ(emu.attribute(0, driver::sysfs::kEmuStatus), "Ready");
  EXPECT_EQ(emu.attribute(0, driver::sysfs::kEmuNspTotal), "16");
  EXPECT_EQ(emu.attribute(0, driver::sysfs::kEmuNspFree), "16");
  EXPECT_EQ(emu.attribute(0, driver::sysfs::kEmuVcTotal), "16");
  EXPECT_EQ(emu.attribute(0, driver::sysfs::kPciVendor), "0x17cb");
  EXPECT_EQ(emu.attribute(0, driver::sysfs::kPciDevice), "0xa100");
  EXPECT_EQ(emu.attribute(0, driver::sysfs::kEmuPid), std::to_string(emu.pid()));
  EXPECT_EQ(emu.attribute(0, driver::sysfs::dbcState(15)), "0");
  EXPECT_EQ(emu.attribute(0, driver::sysfs::kEmuNetworksActive), "0");
  const std::string shm = emu.attribute(0, driver::sysfs::kEmuShmDir);
  ASSERT_EQ(stat(shm.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0711u);
  EXPECT_FALSE(statable(emu.attributePath(1, driver::sysfs::kEmuStatus)));  // one device by default
}

TEST(EmuMount, DevicesOptionClonesTheDefaultDevice) {
  TempDir root;
  EmulatorProcess emu(foreground(root.path(), {"--devices", "3"}));
  for (int d = 0; d < 3; ++d) EXPECT_EQ(emu.attribute(d, driver::sysfs::kEmuNspTotal), "16");
  EXPECT_NE(emu.attribute(0, driver::sysfs::kEmuPciAddress), emu.attribute(2, driver::sysfs::kEmuPciAddress));
  EXPECT_FALSE(statable(emu.nodePath(3)));
}

TEST(EmuMount, ConfigFileSetsResourcesAndNodePolicy) {
  TempDir root;
  EmulatorProcess emu(foreground(root.path(), {}, R"({"devices": [{"nsps": 4, "dbcs": 2, "ddr_mb": 64, "sku": "tiny"}],
                                                      "nodes": {"mode": "0600"}})"));
  EXPECT_EQ(emu.attribute(0, driver::sysfs::kEmuNspTotal), "4");
  EXPECT_EQ(emu.attribute(0, driver::sysfs::kEmuDramTotal), "64");
  EXPECT_EQ(emu.attribute(0, driver::sysfs::kEmuSku), "tiny");
  EXPECT_EQ(emu.attribute(0, driver::sysfs::dbcState(1)), "0");
  EXPECT_FALSE(statable(emu.attributePath(0, driver::sysfs::dbcState(2))));
  struct stat st;
  ASSERT_EQ(stat(emu.nodePath(0).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(EmuMount, BadConfigIsRejectedNamingTheField) {
  TempDir dir;
  const auto config = dir.writeFile("config.json", R"({"devices": [{"nsps": "many"}]})");
  std::filesystem::create_directory(dir / "root");
  const RunResult run = runCapturing(
      {EmulatorProcess::binary().string(), "--root", (dir / "root").string(), "--config", config.string()}, 20s);
  EXPECT_EQ(run.exitCode, 2);
  EXPECT_NE(run.err.find("nsps"), std::string::npos) << run.err;
}

// --ddr-mb sets every device's memory over the configuration's ddr_mb; a size outside
// 1..1048576 MiB is a usage error naming the option.
TEST(EmuMount, DdrMbSetsEveryDevicesMemory) {
  EmulatorOptions options;
  options.config = R"({"devices": [{"ddr_mb": 64}, {"ddr_mb": 128}]})";
  options.arguments = {"--ddr-mb", "96"};
  EmulatorProcess emu(options);
  for (unsigned device : {0u, 1u}) {
    EXPECT_EQ(emu.attribute(device, driver::sysfs::kEmuDramTotal), "96") << device;
    EXPECT_EQ(emu.attribute(device, driver::sysfs::kEmuDramFree), "96") << device;
  }

  TempDir dir;
  std::filesystem::create_directory(dir / "root");
  for (const char* bad : {"0", "1048577", "-5", "16G", ""}) {
    const RunResult run = runCapturing(
        {EmulatorProcess::binary().string(), "--root", (dir / "root").string(), "--ddr-mb", bad}, 20s);
    EXPECT_EQ(run.exitCode, 2) << bad;
    EXPECT_NE(run.err.find("--ddr-mb needs a size in MiB from 1 to 1048576"), std::string::npos) << bad << run.err;
  }
}

// --p2p-groups replaces the configuration's p2p_groups, checked against the device count
// --devices gives; a malformed or out-of-range group is exit 2 naming the option.
TEST(EmuMount, P2pGroupsOptionLinksTheCards) {
  EmulatorOptions options;
  options.config = R"({"p2p_groups": [[0]]})";
  options.arguments = {"--devices", "3", "--p2p-groups", "0,2:1"};
  EmulatorProcess emu(options);
  EXPECT_EQ(emu.attribute(0, driver::sysfs::kEmuP2pPeers), "2");
  EXPECT_EQ(emu.attribute(2, driver::sysfs::kEmuP2pPeers), "0");
  EXPECT_EQ(emu.attribute(1, driver::sysfs::kEmuP2pPeers), "");

  TempDir dir;
  std::filesystem::create_directory(dir / "root");
  const RunResult malformed = runCapturing(
      {EmulatorProcess::binary().string(), "--root", (dir / "root").string(), "--p2p-groups", "0;1"}, 20s);
  EXPECT_EQ(malformed.exitCode, 2);
  EXPECT_NE(malformed.err.find("--p2p-groups '0;1': '0;1' is not a device index, 0 to 63"), std::string::npos)
      << malformed.err;
  const RunResult outOfRange = runCapturing({EmulatorProcess::binary().string(), "--root", (dir / "root").string(),
                                             "--devices", "2", "--p2p-groups", "0,1,2"},
                                            20s);
  EXPECT_EQ(outOfRange.exitCode, 2);
  EXPECT_NE(outOfRange.err.find("--p2p-groups[0][2]: device 2 is out of range (the emulator has 2 devices, 0 to 1)"),
            std::string::npos)
      << outOfRange.err;
}

// The emulator's OpenMP threads sleep between parallel regions unless the caller chose how they
// wait (ComputeThreadsWaitPolicy.hpp): it execs itself with OMP_WAIT_POLICY=PASSIVE, same pid.
TEST(EmuMount, ComputeThreadsSleepBetweenRunsUnlessTheCallerChose) {
  const auto environmentOf = [](pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    std::vector<std::string> entries;
    for (std::string entry; std::getline(in, entry, '\0');) entries.push_back(entry);
    return entries;
  };
  const auto has = [](const std::vector<std::string>& entries, const std::string& entry) {
    return std::find(entries.begin(), entries.end(), entry) != entries.end();
  };
  const char* inherited = std::getenv("OMP_WAIT_POLICY");
  const std::string saved = inherited ? inherited : "";
  unsetenv("OMP_WAIT_POLICY");
  {
    EmulatorProcess emu;
    EXPECT_TRUE(has(environmentOf(emu.pid()), "OMP_WAIT_POLICY=PASSIVE"));
  }
  setenv("OMP_WAIT_POLICY", "ACTIVE", 1);
  {
    EmulatorProcess emu;
    const auto entries = environmentOf(emu.pid());
    EXPECT_TRUE(has(entries, "OMP_WAIT_POLICY=ACTIVE"));
    EXPECT_FALSE(has(entries, "OMP_WAIT_POLICY=PASSIVE"));
  }
  if (inherited != nullptr) {
    setenv("OMP_WAIT_POLICY", saved.c_str(), 1);
  } else {
    unsetenv("OMP_WAIT_POLICY");
  }
}

TEST(EmuMount, SigtermUnmountsAndExitsZero) {
  TempDir root;
  EmulatorProcess emu(foreground(root.path()));
  EXPECT_TRUE(emu.stop()) << emu.log();
  EXPECT_FALSE(statable(root / "dev"));  // the mount is gone
}

TEST(EmuMount, StaleMountIsRecoveredAtStart) {
  TempDir root;
  {
    EmulatorProcess crashed(foreground(root.path()));
    crashed.kill();
    struct stat st;
    ASSERT_NE(stat(root.path().c_str(), &st), 0);
    ASSERT_EQ(errno, ENOTCONN);
  }
  EmulatorProcess emu(foreground(root.path()));
  EXPECT_EQ(emu.attribute(0, driver::sysfs::kEmuStatus), "Ready");
  EXPECT_TRUE(emu.stop()) << emu.log();
}

// The process state letter of /proc/<pid>/stat ('Z' for a zombie), or 0 when it is gone.
char processState(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return 0;
  const auto close = line.rfind(')');  // the command name may hold spaces and parentheses
  return close == std::string::npos || close + 2 >= line.size() ? 0 : line[close + 2];
}

// A killed emulator that nobody has reaped yet still has its pid; its instance lock went with
// its descriptors, so the next start removes its shared memory at once (and the stale mount on
// the same root).
TEST(EmuMount, NextStartRemovesAKilledInstancesSharedMemoryWhileItIsAZombie) {
  TempDir root;
  EmulatorProcess killed(foreground(root.path()));
  const std::filesystem::path deadShm = killed.attribute(0, driver::sysfs::kEmuShmDir);
  ASSERT_TRUE(std::filesystem::exists(deadShm / driver::kInstanceLockName)) << deadShm;
  ASSERT_EQ(::kill(killed.pid(), SIGKILL), 0);  // and no wait: the test is its parent
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (processState(killed.pid()) != 'Z' && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  ASSERT_EQ(processState(killed.pid()), 'Z') << "the killed emulator did not become a zombie";

  EmulatorProcess next(foreground(root.path()));
  EXPECT_FALSE(std::filesystem::exists(deadShm)) << deadShm << " outlived its dead emulator";
  EXPECT_EQ(processState(killed.pid()), 'Z') << "the dead instance was reaped meanwhile: the test proves nothing";
  const std::filesystem::path liveShm = next.attribute(0, driver::sysfs::kEmuShmDir);
  EXPECT_TRUE(std::filesystem::exists(liveShm / driver::kInstanceLockName)) << liveShm;
  EXPECT_EQ(next.attribute(0, driver::sysfs::kEmuStatus), "Ready");
  EXPECT_TRUE(next.stop()) << next.log();
  EXPECT_FALSE(std::filesystem::exists(liveShm)) << "a clean stop leaves its shared memory behind";
}

TEST(EmuMount, DaemonReturnsOnceTheTreeIsVisible) {
  TempDir root;
  const RunResult launcher = runCapturing({EmulatorProcess::binary().string(), "--root", root.str(), "--daemon"}, 30s);
  ASSERT_EQ(launcher.exitCode, 0) << launcher.err;
  EXPECT_TRUE(statable(root / "dev/accel/accel0"));
  const pid_t pid = std::stoi(launcher.out);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  EXPECT_TRUE(waitForExit(pid, 20s));
  EXPECT_FALSE(statable(root / "dev"));
}

class EmuDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    emu_ = std::make_unique<EmulatorProcess>(foreground(root_.path()));
    shm_ = emu_->attribute(0, driver::sysfs::kEmuShmDir);
  }
  void TearDown() override {
    EXPECT_TRUE(emu_->stop()) << emu_->log();  // under LeakSanitizer, 0 also means nothing leaked
    emu_.reset();
  }
  TempDir root_;
  std::unique_ptr<EmulatorProcess> emu_;
  std::string shm_;
};

// mmap of the node at the MMAP_BO offset maps the BO (FUSE passthrough onto the node's memory
// file, where the BO's pages sit at the same offset); freeing it punches its pages out.
TEST_F(EmuDevice, BufferObjectRoundTripThroughTheNodeAndItsMemoryFile) {
  RawDevice dev(emu_->nodePath(0));
  ASSERT_GE(dev.fd(), 0);
  uint32_t handle = 0;
  ASSERT_EQ(dev.createBo(10000, handle), 0);
  EXPECT_GT(handle, 0u);
  uint64_t offset = 0;
  ASSERT_EQ(dev.mmapOffset(handle, offset), 0);
  EXPECT_EQ(offset % 4096, 0u);
  const std::string file = shm_ + "/" + driver::deviceMemoryFileName(0);
  struct stat st, node;
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  ASSERT_EQ(stat(emu_->nodePath(0).c_str(), &node), 0);
  EXPECT_EQ(st.st_mode & 0777, node.st_mode & 0666);
  EXPECT_EQ(st.st_uid, node.st_uid);
  EXPECT_GE(static_cast<uint64_t>(st.st_size), offset + 12288);
  void* p = mmap(nullptr, 12288, PROT_READ | PROT_WRITE, MAP_SHARED, dev.fd(), static_cast<off_t>(offset));
  ASSERT_NE(p, MAP_FAILED) << std::strerror(errno);
  std::memset(p, 0x5a, 12288);
  munmap(p, 12288);
  int fd = open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::vector<unsigned char> seen(12288);
  ASSERT_EQ(pread(fd, seen.data(), seen.size(), static_cast<off_t>(offset)), 12288);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 0x5a), 12288);
  // A second BO gets another offset; closing the file frees both: their pages are holes again.
  uint32_t second = 0;
  uint64_t offset2 = 0;
  ASSERT_EQ(dev.createBo(1, second), 0);
  ASSERT_EQ(dev.mmapOffset(second, offset2), 0);
  EXPECT_NE(offset, offset2);
  dev.close();
  EXPECT_TRUE(eventually([&] {
    return pread(fd, seen.data(), seen.size(), static_cast<off_t>(offset)) == 12288 &&
           std::count(seen.begin(), seen.end(), 0) == 12288;
  }));
  close(fd);
}

TEST_F(EmuDevice, BufferObjectIoctlsValidateLikeTheKernel) {
  RawDevice dev(emu_->nodePath(0));
  uint32_t handle = 0;
  EXPECT_EQ(dev.createBo(0, handle), EINVAL);
  qaic_create_bo badPad{4096, 0, 1};
  EXPECT_EQ(rawIoctl(dev.fd(), DRM_IOCTL_QAIC_CREATE_BO, &badPad), EINVAL);
  uint64_t offset = 0;
  EXPECT_EQ(dev.mmapOffset(1234, offset), ENOENT);
  ASSERT_EQ(dev.createBo(4096, handle), 0);
  qaic_attach_slice_entry entry{};
  entry.size = 4096;
  qaic_attach_slice attach{{1, 0, handle, QAIC_DIR_TO_DEVICE, 4096}, reinterpret_cast<uint64_t>(&entry)};
  EXPECT_EQ(rawIoctl(dev.fd(), DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &attach), EINVAL);  // no activation
  attach.hdr.dbc_id = 99;
  EXPECT_EQ(rawIoctl(dev.fd(), DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &attach), EINVAL);
  qaic_detach_slice detach{handle, 0};
  EXPECT_EQ(rawIoctl(dev.fd(), DRM_IOCTL_QAIC_DETACH_SLICE_BO, &detach), EINVAL);  // not sliced
  qaic_wait wait{handle, 10, 0, 0};
  EXPECT_EQ(rawIoctl(dev.fd(), DRM_IOCTL_QAIC_WAIT_BO, &wait), EPERM);  // DBC 0 is not this file's
  qaic_execute exec{{1, 0}, 0};
  EXPECT_EQ(rawIoctl(dev.fd(), DRM_IOCTL_QAIC_EXECUTE_BO, &exec), EFAULT);  // entries read first
  qaic_emu_dbc_info info{};
  EXPECT_EQ(rawIoctl(dev.fd(), DRM_IOCTL_QAIC_EMU_DBC_INFO, &info), EPERM);
  // Numbers the driver does not define are EINVAL, as drm_ioctl() answers; other types ENOTTY.
  EXPECT_EQ(rawIoctl(dev.fd(), _IOWR('d', 0x40 + 0x30, qaic_wait), &wait), EINVAL);
  EXPECT_EQ(rawIoctl(dev.fd(), _IOWR('q', 0x40, qaic_wait), &wait), ENOTTY);
}

TEST_F(EmuDevice, ManageStatusAnswersInPlace) {
  RawDevice dev(emu_->nodePath(0));
  std::vector<std::byte> msg;
  appendBytes(msg, qaic_manage_trans_status_to_dev{{QAIC_TRANS_STATUS_FROM_USR, 8}});
  uint32_t len = 0, count = 0;
  ASSERT_EQ(dev.manage(msg, 8, 1, len, count), 0);
  ASSERT_EQ(len, sizeof(qaic_manage_trans_status_from_dev));
  ASSERT_EQ(count, 1u);
  qaic_manage_trans_status_from_dev s;
  std::memcpy(&s, msg.data(), sizeof s);
  EXPECT_EQ(s.hdr.type, static_cast<uint32_t>(QAIC_TRANS_STATUS_TO_USR));
  EXPECT_EQ(s.major, QAIC_PROTOCOL_MAJOR);
  EXPECT_EQ(s.minor, 0);
}

TEST_F(EmuDevice, ManageRejectsMalformedMessages) {
  RawDevice dev(emu_->nodePath(0));
  uint32_t len = 0, count = 0;
  std::vector<std::byte> msg;
  appendBytes(msg, qaic_manage_trans_hdr{QAIC_TRANS_STATUS_FROM_USR, 8});
  EXPECT_EQ(dev.manage(msg, 8, 2, len, count), EINVAL);  // count does not match
  msg.clear();
  appendBytes(msg, qaic_manage_trans_hdr{QAIC_TRANS_STATUS_FROM_USR, 4000});
  EXPECT_EQ(dev.manage(msg, 8, 1, len, count), EINVAL);  // transaction longer than message
  msg.clear();
  appendBytes(msg, qaic_manage_trans_hdr{QAIC_TRANS_TERMINATE_TO_DEV, 8});
  EXPECT_EQ(dev.manage(msg, 8, 1, len, count), EINVAL);  // not a user transaction
  qaic_manage_msg bad{8, 1, 0x10};                       // unreadable pointer
  EXPECT_EQ(rawIoctl(dev.fd(), DRM_IOCTL_QAIC_MANAGE, &bad), EFAULT);
  qaic_manage_msg tooLong{QAIC_MANAGE_MAX_MSG_LENGTH + 1, 1, 0x10};
  EXPECT_EQ(rawIoctl(dev.fd(), DRM_IOCTL_QAIC_MANAGE, &tooLong), EINVAL);
  // A program load that is not a container cannot be activated.
  std::vector<std::byte> junk(100, std::byte{7});
  msg.clear();
  appendBytes(msg, qaic_manage_trans_dma_xfer{
                       {QAIC_TRANS_DMA_XFER_FROM_USR, 32}, 5, 0, reinterpret_cast<uint64_t>(junk.data()), junk.size()});
  appendBytes(msg, qaic_manage_trans_activate_to_dev{
                       {QAIC_TRANS_ACTIVATE_FROM_USR, 24}, 0, 0, driver::makeActivateOptions(5, 0), 0});
  EXPECT_EQ(dev.manage(msg, 56, 2, len, count), EINVAL);
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuNetworksActive), "0");
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuNspFree), "16");
}

driver::ResourceGroupRequest groupRequest(driver::ResourceGroupOp op, uint32_t group, uint32_t nsp) {
  return {driver::kResourceGroupMagic,
          driver::kResourceGroupVersion,
          static_cast<uint32_t>(op),
          group,
          {nsp, 1, 2, 1, 1 << 20}};
}

int passthrough(RawDevice& dev, const driver::ResourceGroupRequest& req, driver::ResourceGroupResponse& resp) {
  std::vector<std::byte> msg;
  const uint32_t len = sizeof(qaic_manage_trans_hdr) + sizeof req;
  appendBytes(msg, qaic_manage_trans_hdr{QAIC_TRANS_PASSTHROUGH_FROM_USR, len});
  appendBytes(msg, req);
  uint32_t outLen = 0, outCount = 0;
  int rc = dev.manage(msg, len, 1, outLen, outCount);
  if (rc == 0) std::memcpy(&resp, msg.data() + sizeof(qaic_manage_trans_hdr), sizeof resp);
  return rc;
}

TEST_F(EmuDevice, ResourceGroupsAreReservedAndFreedWithTheFile) {
  RawDevice dev(emu_->nodePath(0));
  driver::ResourceGroupResponse resp{};
  ASSERT_EQ(passthrough(dev, groupRequest(driver::ResourceGroupOp::Reserve, 0, 10), resp), 0);
  ASSERT_EQ(resp.status, 0);
  EXPECT_EQ(resp.resources.numNsp, 10u);
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuNspFree), "6");
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuVcFree), "15");
  {
    RawDevice other(emu_->nodePath(0));
    driver::ResourceGroupResponse r2{};
    ASSERT_EQ(passthrough(other, groupRequest(driver::ResourceGroupOp::Reserve, 0, 7), r2), 0);
    EXPECT_EQ(r2.status, -ENOSPC);
  }
  driver::ResourceGroupResponse released{};
  ASSERT_EQ(passthrough(dev, groupRequest(driver::ResourceGroupOp::Release, resp.groupId, 0), released), 0);
  EXPECT_EQ(released.status, 0);
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuNspFree), "16");
  ASSERT_EQ(passthrough(dev, groupRequest(driver::ResourceGroupOp::Reserve, 0, 16), resp), 0);
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuNspFree), "0");
  dev.close();  // TERMINATE semantics: the reservation goes with the file
  EXPECT_TRUE(eventually([&] { return emu_->attribute(0, driver::sysfs::kEmuNspFree) == "16"; }));
}

TEST_F(EmuDevice, RemovedDeviceDisappearsAndOpenFilesGetEnodev) {
  RawDevice dev(emu_->nodePath(0));
  uint32_t handle = 0;
  ASSERT_EQ(dev.createBo(4096, handle), 0);
  ASSERT_TRUE(emu_->setAttribute(0, driver::sysfs::kFaultRemove, "1"));
  struct stat st;
  EXPECT_NE(stat(emu_->nodePath(0).c_str(), &st), 0);
  EXPECT_NE(stat(emu_->attributePath(0, driver::sysfs::kEmuStatus).c_str(), &st), 0);
  EXPECT_EQ(dev.createBo(4096, handle), ENODEV);
}

TEST_F(EmuDevice, ResetKeepsTheDeviceUsable) {
  ASSERT_TRUE(emu_->setAttribute(0, driver::sysfs::kFaultReset, "1"));
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuStatus), "Ready");
  ASSERT_TRUE(emu_->setAttribute(0, driver::sysfs::kFaultDmaFail, "3 2"));
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kFaultDmaFail), "3 2");
  EXPECT_FALSE(emu_->setAttribute(0, driver::sysfs::kFaultDmaFail, "banana"));
  EXPECT_FALSE(emu_->setAttribute(0, driver::sysfs::kEmuStatus, "Error"));
}

}  // namespace
}  // namespace qaic::emu::test
