// SPDX-License-Identifier: Apache-2.0
#include "QaicdFixture.hpp"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "driver/DeviceProtocol.hpp"
#include "driver/SysfsDevice.hpp"
#include "driver/SysfsNames.hpp"

namespace qaic::testing {

std::string QaicdFixture::emulatorConfig() const {
  return R"({"devices": [{"nsps": 8, "dbcs": 8}], "semaphore_timeout_ms": 2000, "compute_threads": 1})";
}

void QaicdFixture::SetUp() {
  ::signal(SIGPIPE, SIG_IGN);  // a killed client child must not take the test down with it
  // Other users (the cross-user tests) must reach the socket and the emulator's tree.
  work_.setMode(0711);
  EmulatorOptions options;
  options.config = emulatorConfig();
  options.arguments = emulatorArguments();
  emu_ = std::make_unique<EmulatorProcess>(options);
  beforeQaicd();
  if (HasFatalFailure() || !qaicdAtSetUp()) return;
  startQaicd(qaicdArgs());
}

void QaicdFixture::TearDown() {
  if (qaicd_ && HasFailure()) std::cerr << "--- qaicd log ---\n" << qaicd_->log();
  qaicd_.reset();
  // How the emulator itself shuts down is the emulator suite's business; here it only has to go.
  if (emu_ && !emu_->stop()) std::fprintf(stderr, "note: qaic-emu had to be killed\n");
  emu_.reset();
}

void QaicdFixture::startQaicd(const std::vector<std::string>& extra) {
  qaicd_ = std::make_unique<QaicdProcess>(rootPath(), socketPath(), work_ / "qaicd.log", extra);
}

bool QaicdFixture::stopQaicd() {
  if (!qaicd_) return true;
  const bool clean = qaicd_->stop();
  return clean;
}

qaicd::QaicdClient QaicdFixture::connect() const {
  auto client = qaicd::QaicdClient::connect(socketPath(), std::chrono::seconds(30));
  if (!client) throw std::runtime_error("connect: " + client.message());
  return std::move(*client);
}

uint64_t QaicdFixture::attribute(unsigned index, const std::string& name) const {
  auto v = driver::SysfsDevice(emu_->root(), index).readU64(name);
  if (!v) throw std::runtime_error(v.message());
  return *v;
}

std::vector<unsigned> QaicdFixture::partitionNodes() const {
  std::vector<unsigned> out;
  for (unsigned index : emu_->root().listDevices())
    if (index >= driver::kFirstPartitionId) out.push_back(index);
  return out;
}

bool QaicdFixture::addDevice(qaicd::QaicdClient& client, std::size_t devices) const {
  std::ofstream(emu_->root().path() / "sys/bus/qaic-emu/add_device") << "1";
  return eventually(
      [&] {
        auto listed = client.devices();
        return listed && listed->size() == devices;
      },
      std::chrono::seconds(10));
}

bool QaicdFixture::nodeExists(unsigned index) const {
  struct stat st {};
  return ::stat(emu_->root().nodePath(index).c_str(), &st) == 0;
}

bool QaicdFixture::deviceWhole(unsigned index) const {
  try {
    return attribute(index, driver::sysfs::kEmuNspFree) == kDeviceNsps &&
           attribute(index, driver::sysfs::kEmuVcFree) == kDeviceVcs && partitionNodes().empty();
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace qaic::testing
