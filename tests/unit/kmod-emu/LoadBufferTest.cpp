// SPDX-License-Identifier: Apache-2.0
// A load's bytes (LoadBuffer): read from a process's memory into a memory file whose all-zero
// steps stay holes, grown by appends without losing what it held, 64-byte aligned.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "LoadBuffer.hpp"
#include "UserMemory.hpp"

namespace qaic::emu {
namespace {

constexpr std::size_t kMiB = 1u << 20;

uint64_t allocatedBytes(const LoadBuffer& buffer) {
  struct stat st {};
  EXPECT_EQ(::fstat(buffer.fd(), &st), 0);
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

TEST(LoadBuffer, ZeroStepsReadFromTheCallerStayHoles) {
  // 64 MiB of zeros with one marked byte in the 40th MiB.
  const std::size_t size = 64 * kMiB;
  void* region = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(region, MAP_FAILED);
  auto* bytes = static_cast<std::byte*>(region);
  bytes[40 * kMiB + 123] = std::byte{0x7e};
  LoadBuffer buffer;
  ASSERT_EQ(buffer.appendFrom(UserMemory(::getpid()), reinterpret_cast<uint64_t>(region), size), 0);
  ASSERT_EQ(buffer.size(), size);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % 64, 0u);
  EXPECT_EQ(buffer.data()[40 * kMiB + 123], std::byte{0x7e});
  // One 1 MiB step was written; the other 63 are holes.
  EXPECT_LE(allocatedBytes(buffer), 2 * kMiB);
  EXPECT_EQ(buffer.data()[0], std::byte{0});
  ::munmap(region, size);
}

TEST(LoadBuffer, AppendsKeepWhatWasThereAndAnUnreadableRangeIsAFault) {
  std::vector<std::byte> first(3 * kMiB + 5, std::byte{1});
  auto buffer = LoadBuffer::copyOf(first);
  std::vector<std::byte> second(kMiB, std::byte{2});
  ASSERT_EQ(buffer->appendFrom(UserMemory(::getpid()), reinterpret_cast<uint64_t>(second.data()), second.size()), 0);
  ASSERT_EQ(buffer->size(), first.size() + second.size());
  EXPECT_EQ(buffer->data()[first.size() - 1], std::byte{1});
  EXPECT_EQ(buffer->data()[first.size()], std::byte{2});
  EXPECT_EQ(buffer->data()[buffer->size() - 1], std::byte{2});

  void* unreadable = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(unreadable, MAP_FAILED);
  LoadBuffer other;
  EXPECT_EQ(other.appendFrom(UserMemory(::getpid()), reinterpret_cast<uint64_t>(unreadable), 4096), EFAULT);
  ::munmap(unreadable, 4096);
}

}  // namespace
}  // namespace qaic::emu
