// SPDX-License-Identifier: Apache-2.0
#include "driver/SysfsDevice.hpp"
#include "driver/SysfsNames.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "TempDir.hpp"

namespace qaic::driver {
namespace {

TEST(SysfsDevice, ReadsAttributeWithoutTrailingNewline) {
  testing::TempDir dir;
  dir.writeFile("sys/class/accel/accel1/qaic-emu/shm_dir", "/dev/shm/qaic-emu.7\n");
  SysfsDevice device(DeviceRoot(dir.path()), 1);
  auto value = device.read("qaic-emu/shm_dir");
  ASSERT_TRUE(value) << value.message();
  EXPECT_EQ(*value, "/dev/shm/qaic-emu.7");
}

TEST(SysfsDevice, ParsesDecimalAndHexNumbers) {
  testing::TempDir dir;
  dir.writeFile("nsp_free", "14\n");
  dir.writeFile("vendor", "0x17cb\n");
  SysfsDevice device(dir.path());
  auto nsp = device.readU64("nsp_free");
  ASSERT_TRUE(nsp) << nsp.message();
  EXPECT_EQ(*nsp, 14u);
  auto vendor = device.readU64("vendor");
  ASSERT_TRUE(vendor) << vendor.message();
  EXPECT_EQ(*vendor, 0x17cbu);
}

TEST(SysfsDevice, RejectsNonNumbersWithEinvalNamingTheFile) {
  testing::TempDir dir;
  for (const char* text : {"", "12abc", "-1", "0x", " 7", "18446744073709551616"}) {
    dir.writeFile("bad", text);
    auto value = SysfsDevice(dir.path()).readU64("bad");
    ASSERT_FALSE(value) << "'" << text << "' parsed as " << *value;
    EXPECT_EQ(value.error(), EINVAL);
    EXPECT_NE(value.message().find("bad"), std::string::npos) << value.message();
  }
}

TEST(SysfsDevice, MissingAttributeIsEnoentNamingThePath) {
  testing::TempDir dir;
  auto value = SysfsDevice(dir.path()).read("nsp_total");
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error(), ENOENT);
  EXPECT_NE(value.message().find((dir.path() / "nsp_total").string()), std::string::npos);
}

TEST(SysfsDevice, RefusesOversizedAttribute) {
  testing::TempDir dir;
  dir.writeFile("huge", std::string(SysfsDevice::kMaxAttributeBytes + 1, '7'));
  auto value = SysfsDevice(dir.path()).read("huge");
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error(), EFBIG);
}

TEST(SysfsDevice, WritesValueInOneStore) {
  testing::TempDir dir;
  dir.writeFile("qaic-emu/fault/nsp_hang", "");
  SysfsDevice device(dir.path());
  ASSERT_TRUE(device.write("qaic-emu/fault/nsp_hang", "1"));
  std::ifstream in(dir.path() / "qaic-emu/fault/nsp_hang");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "1");
  auto missing = device.write("qaic-emu/fault/absent/x", "1");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), ENOENT);
}

TEST(SysfsDevice, ReadsP2pPeers) {
  testing::TempDir dir;
  SysfsDevice device(dir.path());
  EXPECT_FALSE(readP2pPeers(device).has_value()) << "no attribute: no topology";
  dir.writeFile(sysfs::kEmuP2pPeers, "2 3 17\n");
  EXPECT_EQ(readP2pPeers(device), (std::vector<uint32_t>{2, 3, 17}));
  dir.writeFile(sysfs::kEmuP2pPeers, "\n");
  EXPECT_EQ(readP2pPeers(device), std::vector<uint32_t>{});
  EXPECT_FALSE(parseP2pPeers("1,2").has_value());
  EXPECT_FALSE(parseP2pPeers("1 x").has_value());
  EXPECT_FALSE(parseP2pPeers("-1").has_value());
}

}  // namespace
}  // namespace qaic::driver
