// SPDX-License-Identifier: Apache-2.0
// The kernel-like device tree qaic-emu serves (each card a PCI function under sys/devices with
// its accel device, and the links udev and a PCI scan follow), and `qaic-emu --namespace`, which
// shows that tree at /sys and /dev/accel to a program that knows nothing of the emulator
// (KernelTreeClient.c: a PCI scan, libudev, the node's ioctls).
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "DeviceAttributes.hpp"
#include "EmulatorProcess.hpp"
#include "Paths.hpp"
#include "Process.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string linkTarget(const fs::path& link) {
  std::error_code ec;
  return fs::read_symlink(link, ec).string();
}

// `qaic-emu --devices N --namespace -- qaic_kernel_tree_client`: the plain C client
// (KernelTreeClient.c) in the namespace of an emulator of its own.
RunResult runKernelTreeClient(int devices) {
  return runCapturing({EmulatorProcess::binary().string(), "--devices", std::to_string(devices), "--namespace", "--",
                       (buildDir() / "tests" / "qaic_kernel_tree_client").string()},
                      60s);
}

class KernelTree : public ::testing::Test {
 protected:
  TempDir rootDir_;
  EmulatorProcess emu_{EmulatorOptions{{}, {"--devices", "2"}, rootDir_.path(), true}};
  fs::path sys_ = rootDir_.path() / "sys";
};

TEST_F(KernelTree, EachCardIsAPciFunctionWithItsAccelDevice) {
  for (unsigned i = 0; i < 2; ++i) {
    SCOPED_TRACE("accel" + std::to_string(i));
    const std::string bdf = "0000:0" + std::to_string(i + 1) + ":00.0";
    const std::string accel = "accel" + std::to_string(i);
    const fs::path pci = sys_ / "devices/pci0000:00" / bdf;
    ASSERT_TRUE(fs::is_directory(pci)) << pci;
    EXPECT_EQ(linkTarget(sys_ / "bus/pci/devices" / bdf), "../../../devices/pci0000:00/" + bdf);
    EXPECT_EQ(linkTarget(sys_ / "bus/pci/drivers/qaic" / bdf), "../../../../devices/pci0000:00/" + bdf);
    EXPECT_EQ(linkTarget(pci / "driver"), "../../../bus/pci/drivers/qaic");
    EXPECT_EQ(readFile(pci / "vendor"), "0x17cb\n");
    EXPECT_EQ(readFile(pci / "device"), "0xa100\n");
    EXPECT_EQ(readFile(pci / "class"), "0x120000\n");
    EXPECT_EQ(readFile(pci / "subsystem_vendor"), "0x17cb\n");
    EXPECT_EQ(readFile(pci / "numa_node"), "-1\n");
    EXPECT_EQ(readFile(pci / "irq"), "0\n");
    EXPECT_NE(readFile(pci / "uevent").find("PCI_SLOT_NAME=" + bdf + "\n"), std::string::npos)
        << readFile(pci / "uevent");
    // 13 regions, the three BARs of mainline's layout in use (BAR0 4 KiB, BAR2 2 MiB, BAR4 64 KiB).
    std::istringstream resource(readFile(pci / "resource"));
    std::vector<uint64_t> sizes;
    for (std::string start, end, flags; resource >> start >> end >> flags;)
      sizes.push_back(std::stoull(end, nullptr, 16) - std::stoull(start, nullptr, 16) + (start == end ? 0 : 1));
    ASSERT_EQ(sizes.size(), 13u);
    EXPECT_EQ(sizes[0], 0x1000u);
    EXPECT_EQ(sizes[2], 0x200000u);
    EXPECT_EQ(sizes[4], 0x10000u);
    const std::string config = readFile(pci / "config");
    ASSERT_EQ(config.size(), 256u);
    EXPECT_EQ(static_cast<uint8_t>(config[0]) | static_cast<uint8_t>(config[1]) << 8, 0x17cb);
    EXPECT_EQ(static_cast<uint8_t>(config[0xb]), 0x12) << "class code: processing accelerator";

    const fs::path dev = pci / "accel" / accel;
    EXPECT_EQ(readFile(dev / "dev"), "261:" + std::to_string(i) + "\n");
    EXPECT_EQ(readFile(dev / "uevent"), "MAJOR=261\nMINOR=" + std::to_string(i) + "\nDEVNAME=accel/" + accel + "\n");
    EXPECT_EQ(linkTarget(dev / "subsystem"), "../../../../../class/accel");
    EXPECT_EQ(linkTarget(dev / "device"), "../../../" + bdf);
    EXPECT_EQ(linkTarget(sys_ / "class/accel" / accel), "../../devices/pci0000:00/" + bdf + "/accel/" + accel);
    EXPECT_EQ(linkTarget(sys_ / "dev/char" / ("261:" + std::to_string(i))),
              "../../devices/pci0000:00/" + bdf + "/accel/" + accel);
    EXPECT_TRUE(fs::equivalent(sys_ / "class/accel" / accel / "device", pci));
    // The paths the tools read before keep working through the links.
    EXPECT_EQ(emu_.attribute(i, driver::sysfs::kPciVendor), "0x17cb");
    EXPECT_EQ(emu_.attribute(i, driver::sysfs::kEmuStatus), "Ready");
    EXPECT_EQ(emu_.attribute(i, driver::sysfs::kEmuPciAddress), bdf);
  }
}

// The names the vendor's qaic-util reads, in millidegrees and microwatts.
TEST_F(KernelTree, HwmonHasTheVendorToolsNames) {
  const fs::path hwmon = sys_ / "bus/pci/devices/0000:01:00.0/hwmon/hwmon0";
  EXPECT_EQ(readFile(hwmon / "name"), "qaic\n");
  EXPECT_GT(std::stoll(readFile(hwmon / "temp2_input")), 1000);
  EXPECT_GT(std::stoll(readFile(hwmon / "power1_input")), 1000000);
  EXPECT_GT(std::stoll(readFile(hwmon / "power1_max")), std::stoll(readFile(hwmon / "power1_input")) - 1);
  EXPECT_FALSE(fs::exists(hwmon / "temp1_input"));
  EXPECT_FALSE(fs::exists(hwmon / "power1_cap"));
}

// A program that knows only /sys, libudev and /dev/accel finds both cards and talks to them.
TEST(EmuNamespace, APlainClientFindsTheCardsByPciScanAndUdev) {
  const auto out = runKernelTreeClient(2);
  ASSERT_TRUE(out.status.exited) << "did not finish";
  ASSERT_EQ(out.exitCode, 0) << out.out << out.err;
  for (const char* line : {"pci 0000:01:00.0 accel0 dev 261:0\n", "pci 0000:02:00.0 accel1 dev 261:1\n",
                           "udev 0000:01:00.0 accel0 node /dev/accel/accel0 dev 261:0 vendor 0x17cb driver qaic\n",
                           "udev 0000:02:00.0 accel1 node /dev/accel/accel1 dev 261:1 vendor 0x17cb driver qaic\n",
                           "ioctl /dev/accel/accel0 bo 1 offset 0x100000000\n", "found 2 by PCI scan, 2 by udev\n",
                           // libdrm takes no accel node for a DRM one, card or emulated.
                           "libdrm /dev/accel/accel1 node type -1 (Invalid argument) device2 -22 version qaic\n"})
    EXPECT_NE(out.out.find(line), std::string::npos) << line << "in:\n" << out.out;
}

// Unmodified libdrm PRIME (drmPrimeHandleToFD with fd -1) works inside the namespace: the
// emulator's supervisor makes the export on the caller's open file and installs the descriptor
// in the caller (ExportSupervisor). The client checks flags, sharing with the node's mapping
// (mmap of the node at the MMAP_BO offset, FUSE passthrough), import on a second open
// file, mainline's EINVAL and ENOENT, and that the same request number on other descriptors
// gets the kernel's own answers; it exits 1 naming the first check that failed.
TEST(EmuNamespace, APlainClientExportsWithLibdrmAndImportsOnASecondFile) {
  const auto out = runKernelTreeClient(2);
  ASSERT_TRUE(out.status.exited) << "did not finish";
  EXPECT_EQ(out.exitCode, 0) << out.out << out.err;
  EXPECT_EQ(out.err.find("PRIME"), std::string::npos) << out.err;
  // Handle 1 is the client's first BO on the second open file; the first file's export is
  // its own BO (handle 1 there, after the node's first BO was closed on another file).
  for (const char* line : {"prime /dev/accel/accel0 export 8192 bytes, import handle 1, own export back as 1\n",
                           "prime /dev/accel/accel1 export 8192 bytes, import handle 1, own export back as 1\n"})
    EXPECT_NE(out.out.find(line), std::string::npos) << line << "in:\n" << out.out;
  EXPECT_EQ(out.out.find("mmap /dev/accel"), std::string::npos) << "mmap of the node did not map:\n" << out.out;
}

// The same client asks the firmware's status in the vendor's protocol and prints the fields
// qaic-util -q shows: the device's figures with the default configuration (16 NSPs and DBCs,
// 16 GiB DDR, firmware 1.12.2.0, a PCIe SKU), protocol 17.0.
TEST(EmuNamespace, APlainClientReadsTheStatusInTheVendorsProtocol) {
  const auto out = runKernelTreeClient(1);
  ASSERT_TRUE(out.status.exited) << "did not finish";
  ASSERT_EQ(out.exitCode, 0) << out.out << out.err;
  const std::string line =
      "vendor status /dev/accel/accel0 FW Version:1.12.2.0 HW Serial:0x5e1a0000 Dram Total:16384 MB "
      "Dram Free:16384 MB Vc Total:16 Vc Free:16 Nsp Total:16 Nsp Free:16 Networks Active:0 "
      "NNC Command Protocol Version:17.0 Sku Type:2\n";
  EXPECT_NE(out.out.find(line), std::string::npos) << line << "in:\n" << out.out;
}

// libpci (through lspci, as the vendor's discovery uses it) parses the functions' attributes and
// configuration space: ids, class, BARs, driver, and the PCI Express link the vendor's tools show.
TEST(EmuNamespace, LspciListsTheCardsWithTheirBars) {
  const auto out = runCapturing({EmulatorProcess::binary().string(), "--devices", "2", "--namespace", "--", "lspci",
                                 "-vvv", "-nn", "-d", "17cb:a100"},
                                60s);
  ASSERT_EQ(out.exitCode, 0) << out.out << out.err;
  for (const char* line :
       {"01:00.0 Processing accelerators [1200]: Qualcomm Technologies, Inc Device [17cb:a100]",
        "02:00.0 Processing accelerators [1200]:", "Region 0: Memory at f0200000 (64-bit, non-prefetchable) [size=4K]",
        "Region 2: Memory at f0400000 (64-bit, non-prefetchable) [size=2M]",
        "Region 4: Memory at f0210000 (64-bit, non-prefetchable) [size=64K]", "Kernel driver in use: qaic",
        "Capabilities: [40] Express (v2) Endpoint", "LnkCap:\tPort #0, Speed 16GT/s, Width x8",
        "LnkSta:\tSpeed 16GT/s, Width x8"})
    EXPECT_NE(out.out.find(line), std::string::npos) << line << " in:\n" << out.out;
}

TEST(EmuNamespace, TheCommandsExitStatusIsQaicEmus) {
  const std::string emu = EmulatorProcess::binary().string();
  // Inside, QAIC_ROOT is unset and the tree is at /.
  auto seven = runCapturing({emu, "--namespace", "--", "/bin/sh", "-c",
                             "test -z \"$QAIC_ROOT\" && test \"$SYSTEMD_DEVICE_VERIFY_SYSFS\" = 0 && "
                             "test -r /sys/class/accel/accel0/qaic-emu/status && exit 7"},
                            60s);
  EXPECT_EQ(seven.exitCode, 7) << seven.out << seven.err;
  auto missing = runCapturing({emu, "--namespace", "--", "/nonexistent/program"}, 60s);
  EXPECT_EQ(missing.exitCode, 127) << missing.err;
  EXPECT_NE(missing.err.find("/nonexistent/program"), std::string::npos) << missing.err;
  auto noCommand = runCapturing({emu, "--namespace"}, 60s);
  EXPECT_EQ(noCommand.exitCode, 2) << noCommand.err;
  // Outside, nothing of it is left mounted over the host's /sys.
  EXPECT_FALSE(std::filesystem::exists("/sys/bus/qaic-emu"));
}

}  // namespace
}  // namespace qaic::emu::test
