// SPDX-License-Identifier: Apache-2.0
#include "base/MappedFile.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "TempDir.hpp"

namespace qaic {
namespace {

TEST(MappedFile, SharesWritesWithTheFile) {
  testing::TempDir dir;
  dir.writeFile("bo-0000000100000000", std::string(8192, '\0'));
  {
    auto file = MappedFile::open(dir.path() / "bo-0000000100000000", 8192);
    ASSERT_TRUE(file) << file.message();
    EXPECT_GE(file->fd(), 0);
    std::memcpy(file->data() + 4096, "device", 6);
  }
  std::ifstream in(dir.path() / "bo-0000000100000000", std::ios::binary);
  std::string text(8192, 'x');
  in.read(text.data(), 8192);
  EXPECT_EQ(text.substr(4096, 6), "device");
}

TEST(MappedFile, ShortFileIsRefusedInsteadOfFaultingLater) {
  testing::TempDir dir;
  dir.writeFile("small", std::string(100, '\0'));
  auto file = MappedFile::open(dir.path() / "small", 4096);
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error(), EPROTO);
  EXPECT_NE(file.message().find("small"), std::string::npos) << file.message();
}

TEST(MappedFile, MissingFileAndSymlinkAreErrors) {
  testing::TempDir dir;
  auto missing = MappedFile::open(dir.path() / "absent", 4096);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), ENOENT);
  dir.writeFile("real", std::string(4096, '\0'));
  std::filesystem::create_symlink(dir.path() / "real", dir.path() / "link");
  auto link = MappedFile::open(dir.path() / "link", 4096);
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error(), ELOOP);
}

TEST(MappedFile, MoveTransfersOwnership) {
  testing::TempDir dir;
  dir.writeFile("f", std::string(4096, '\0'));
  auto file = MappedFile::open(dir.path() / "f", 4096);
  ASSERT_TRUE(file);
  MappedFile moved = std::move(*file);
  EXPECT_EQ(file->data(), nullptr);
  EXPECT_NE(moved.data(), nullptr);
  moved.data()[0] = std::byte{1};
}

}  // namespace
}  // namespace qaic
