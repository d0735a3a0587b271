#include "PartitionToolFixture.hpp"

#include <stdlib.h>
#include <sys/stat.h>

#include <thread>

#include "driver/DeviceProtocol.hpp"
#include "driver/SysfsDevice.hpp"

namespace qaic::testing {

void PartitionToolTest::SetUp() {
  emu_ = std::make_unique<EmulatorProcess>(R"({"devices": [{"nsps": 8, "dbcs": 8}], "compute_threads": 1})");
  ::setenv("QAIC_ROOT", emu_->rootPath().c_str(), 1);
  ::setenv("QAICD_SOCKET", socketPath().c_str(), 1);
}

void PartitionToolTest::TearDown() {
  if (qaicd_ && HasFailure()) std::cerr << "--- qaicd log ---\n" << qaicd_->log();
  qaicd_.reset();
  emu_.reset();
  ::unsetenv("QAIC_ROOT");
  ::unsetenv("QAICD_SOCKET");
}

void PartitionToolTest::startQaicd() {
  qaicd_ = std::make_unique<QaicdProcess>(emu_->rootPath(), socketPath(), work_ / "qaicd.log");
}

uint64_t PartitionToolTest::attribute(unsigned id, const std::string& name) const {
  auto v = driver::SysfsDevice(emu_->root(), id).readU64(name);
  if (!v) throw std::runtime_error(v.message());
  return *v;
}

bool PartitionToolTest::nodeExists(unsigned id) const {
  struct stat st {};
  return ::stat(emu_->root().nodePath(id).c_str(), &st) == 0;
}

std::vector<unsigned> PartitionToolTest::partitions() const {
  std::vector<unsigned> out;
  for (unsigned id : emu_->root().listDevices())
    if (id >= driver::kFirstPartitionId) out.push_back(id);
  return out;
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
