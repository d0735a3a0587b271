// SPDX-License-Identifier: Apache-2.0
#include "PartitionToolFixture.hpp"

#include <stdlib.h>
#include <sys/stat.h>

#include <thread>

namespace qaic::testing {

void PartitionToolTest::SetUp() {
  QaicdFixture::SetUp();
  ::setenv("QAIC_ROOT", rootPath().c_str(), 1);
  ::setenv("QAICD_SOCKET", socketPath().c_str(), 1);
}

void PartitionToolTest::TearDown() {
  QaicdFixture::TearDown();
  ::unsetenv("QAIC_ROOT");
  ::unsetenv("QAICD_SOCKET");
}

std::string queryBlock(const std::string& text, unsigned id) {
  const std::string head = "QID " + std::to_string(id) + "\n";
  std::size_t start = text.rfind(head, 0) == 0 ? 0 : text.find("\n" + head);
  if (start == std::string::npos) return {};
  if (start != 0) ++start;
  const std::size_t end = text.find("\nQID ", start + head.size() - 1);
  return text.substr(start, end == std::string::npos ? std::string::npos : end + 1 - start);
}

long numberAfter(const std::string& text, const std::string& prefix) {
  const std::size_t at = text.find(prefix);
  if (at == std::string::npos) return -1;
  std::size_t i = at + prefix.size();
  long value = 0;
  bool any = false;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    value = value * 10 + (text[i++] - '0');
    any = true;
  }
  return any ? value : -1;
}

}  // namespace qaic::testing
