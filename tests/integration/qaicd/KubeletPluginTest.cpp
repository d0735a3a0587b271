// SPDX-License-Identifier: Apache-2.0
// qaicd as the kubelet's device plugin, tested without a cluster: a kubelet stand-in (a gRPC
// Registration server on a temporary kubelet.sock) sees the registrations, then the test dials
// the plugin's sockets as the kubelet does. A real qaic-emu (three devices, two of them given
// to a 4-NSP profile) and a real qaicd serve everything; health flips, removals and hot adds go
// through the emulator's own files.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "DeviceAttributes.hpp"
#include "KubeletStandIn.hpp"
#include "OwnedFd.hpp"
#include "Process.hpp"
#include "QaicdTest.hpp"

namespace qaic::qaicd::test {
namespace {

using namespace std::chrono_literals;

constexpr auto kWait = 10s;  // bound of every wait for qaicd to notice something
const std::string kWhole = "qualcomm.com/qaic";
const std::string kProfile = "qualcomm.com/qaic-4nsp";

// The emulator's PCI address of device N, which qaicd uses as the device's ID.
std::string pci(unsigned device) {
  char text[16];
  std::snprintf(text, sizeof text, "0000:%02x:00.0", device + 1);
  return text;
}

std::vector<std::string> ids(const DeviceWatch::Devices& devices) {
  std::vector<std::string> out;
  for (const auto& d : devices) out.push_back(d.id());
  return out;
}

class KubeletPluginTest : public QaicdTest {
 protected:
  std::string emulatorConfig() const override {
    return R"({"devices": [{"nsps": 8, "dbcs": 8, "numa_node": 0}, {"nsps": 8, "dbcs": 8, "numa_node": 1},
                           {"nsps": 8, "dbcs": 8, "numa_node": 1}],
               "semaphore_timeout_ms": 2000})";
  }
  virtual std::string qaicdConfig() const {
    return R"({"k8s_profiles": [{"name": "qaic-4nsp", "devices": [1, 2], "numNsp": 4, "numVc": 2, "numSem": 16}]})";
  }
  void beforeQaicd() override {
    kubeletDir_ = work() / "device-plugins";
    std::filesystem::create_directories(kubeletDir_);
    std::ofstream(work() / "qaicd.json") << qaicdConfig();
    kubelet_ = std::make_unique<KubeletStandIn>(kubeletDir_);
  }
  std::vector<std::string> qaicdArgs() const override {
    return {"--kubelet-dir", kubeletDir_.string(), "--config", (work() / "qaicd.json").string()};
  }
  void TearDown() override {
    watches_.clear();
    if (qaicd_) {
      EXPECT_TRUE(qaicd_->stop()) << "qaicd did not stop within 10 s of SIGTERM";
      expectNoSanitizerReport(qaicd_->log());
    }
    kubelet_.reset();
    QaicdTest::TearDown();
  }

  static void expectNoSanitizerReport(const std::string& log) {
    for (const char* marker : {"ThreadSanitizer", "AddressSanitizer", "LeakSanitizer", "runtime error:"})
      EXPECT_EQ(log.find(marker), std::string::npos) << "qaicd's log reports " << marker << ":\n" << log;
  }

  std::filesystem::path socketOf(const std::string& resource) const {
    return kubeletDir_ / ("qaicd-" + resource.substr(resource.find('/') + 1) + ".sock");
  }
  v1beta1::DevicePlugin::Stub& plugin(const std::string& resource) {
    auto& stub = stubs_[resource];
    if (!stub) stub = dialPlugin(socketOf(resource));
    return *stub;
  }
  DeviceWatch& watch(const std::string& resource) {
    watches_.push_back(std::make_unique<DeviceWatch>(plugin(resource)));
    return *watches_.back();
  }
  // Both resources registered with the stand-in.
  void awaitRegistrations(KubeletStandIn& kubelet, std::size_t count = 2) {
    ASSERT_GE(kubelet.waitForRegistrations(count, kWait).size(), count) << qaicd_->log();
  }
  // `file` is one of the fault files (driver::sysfs::kFault...).
  void fault(unsigned device, const char* file, const std::string& value) {
    auto r = driver::SysfsDevice(emu_->root(), device).write(file, value);
    ASSERT_TRUE(r) << r.message();
  }
  // The partition qaicd made for `slot` of the profile on `device`.
  std::optional<unsigned> profilePartition(unsigned device, unsigned slot) const {
    for (unsigned id : partitionNodes()) {
      driver::SysfsDevice sysfs(emu_->root(), id);
      auto label = sysfs.read(driver::sysfs::kPartitionLabel);
      auto parent = sysfs.readU64(driver::sysfs::kPartitionParent);
      if (label && parent && *parent == device && *label == "k8s:qaic-4nsp:" + std::to_string(slot)) return id;
    }
    return std::nullopt;
  }
  grpc::Status allocate(const std::string& resource, const std::vector<std::vector<std::string>>& containers,
                        v1beta1::AllocateResponse& response) {
    v1beta1::AllocateRequest request;
    for (const auto& c : containers) {
      auto* r = request.add_container_requests();
      for (const auto& id : c) r->add_devices_ids(id);
    }
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kWait);
    return plugin(resource).Allocate(&context, request, &response);
  }
  // Runs qaic-util -q -d <QAIC_VISIBLE_DEVICES> with the environment an Allocate answer gives a
  // container (what a container's own tools would see); returns its stdout, or "" on failure.
  std::string utilWithEnvironment(const v1beta1::ContainerAllocateResponse& container) {
    const char* saved = std::getenv("QAIC_ROOT");
    const std::string previous = saved != nullptr ? saved : "";
    ::setenv("QAIC_ROOT", container.envs().at("QAIC_ROOT").c_str(), 1);
    const auto run = testing::runTool("qaic-util", {"-q", "-d", container.envs().at("QAIC_VISIBLE_DEVICES")}, kWait);
    if (saved != nullptr)
      ::setenv("QAIC_ROOT", previous.c_str(), 1);
    else
      ::unsetenv("QAIC_ROOT");
    return run.exitCode == 0 ? run.out : std::string();
  }
  grpc::Status prefer(const std::string& resource, const std::vector<std::string>& available,
                      const std::vector<std::string>& mustInclude, int size, std::vector<std::string>& chosen) {
    v1beta1::PreferredAllocationRequest request;
    auto* r = request.add_container_requests();
    for (const auto& id : available) r->add_available_deviceids(id);
    for (const auto& id : mustInclude) r->add_must_include_deviceids(id);
    r->set_allocation_size(size);
    v1beta1::PreferredAllocationResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kWait);
    auto status = plugin(resource).GetPreferredAllocation(&context, request, &response);
    chosen.clear();
    if (status.ok() && response.container_responses_size() == 1)
      chosen.assign(response.container_responses(0).deviceids().begin(),
                    response.container_responses(0).deviceids().end());
    return status;
  }

  std::filesystem::path kubeletDir_;
  std::unique_ptr<KubeletStandIn> kubelet_;
  std::map<std::string, std::unique_ptr<v1beta1::DevicePlugin::Stub>> stubs_;
  std::vector<std::unique_ptr<DeviceWatch>> watches_;
};

std::string unit(unsigned device, unsigned slot) { return pci(device) + "-qaic-4nsp-" + std::to_string(slot); }

TEST_F(KubeletPluginTest, RegistersEachResourceWithTheKubelet) {
  awaitRegistrations(*kubelet_);
  std::map<std::string, v1beta1::RegisterRequest> byResource;
  for (const auto& r : kubelet_->registrations()) byResource[r.resource_name()] = r;
  ASSERT_EQ(byResource.size(), 2u);
  for (const std::string& resource : {kWhole, kProfile}) {
    const auto& r = byResource.at(resource);
    EXPECT_EQ(r.version(), "v1beta1");
    EXPECT_EQ(r.endpoint(), socketOf(resource).filename().string()) << "the endpoint is a file name in the directory";
    EXPECT_TRUE(std::filesystem::exists(socketOf(resource)));
    EXPECT_FALSE(r.options().pre_start_required());
    EXPECT_TRUE(r.options().get_preferred_allocation_available());
    v1beta1::DevicePluginOptions options;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kWait);
    ASSERT_TRUE(plugin(resource).GetDevicePluginOptions(&context, v1beta1::Empty(), &options).ok());
    EXPECT_TRUE(options.get_preferred_allocation_available());
  }
}

TEST_F(KubeletPluginTest, ListsWholeDevicesAndProfilePartitionsWithTopology) {
  awaitRegistrations(*kubelet_);
  auto whole = watch(kWhole).waitFor([](const auto& d) { return !d.empty(); }, kWait);
  ASSERT_TRUE(whole);
  // Devices 1 and 2 belong to the profile: only device 0 is offered whole.
  ASSERT_EQ(ids(*whole), std::vector<std::string>{pci(0)});
  EXPECT_EQ((*whole)[0].health(), "Healthy");
  ASSERT_EQ((*whole)[0].topology().nodes_size(), 1);
  EXPECT_EQ((*whole)[0].topology().nodes(0).id(), 0);

  auto parts = watch(kProfile).waitFor([](const auto& d) { return countHealthy(d) == 4; }, kWait);
  ASSERT_TRUE(parts) << qaicd_->log();
  EXPECT_EQ(ids(*parts), (std::vector<std::string>{unit(1, 0), unit(1, 1), unit(2, 0), unit(2, 1)}));
  for (const auto& d : *parts) {
    ASSERT_EQ(d.topology().nodes_size(), 1);
    EXPECT_EQ(d.topology().nodes(0).id(), 1);
    EXPECT_LE(d.id().size(), 63u);
  }
  // The partitions are on the devices, each of the profile's shape, and fill them.
  for (unsigned device : {1u, 2u}) {
    for (unsigned slot : {0u, 1u}) {
      auto id = profilePartition(device, slot);
      ASSERT_TRUE(id) << "no partition for slot " << slot << " of device " << device;
      EXPECT_EQ(attribute(*id, driver::sysfs::kEmuNspTotal), 4u);
      EXPECT_EQ(attribute(*id, driver::sysfs::kEmuVcTotal), 2u);
      EXPECT_EQ(attribute(*id, driver::sysfs::kPartitionHolderPid), 0u) << "profile partitions are qaicd's own";
    }
    EXPECT_EQ(attribute(device, driver::sysfs::kEmuNspFree), 0u);
  }
  EXPECT_EQ(attribute(0, driver::sysfs::kEmuNspFree), kDeviceNsps) << "a whole device is not carved";
}

TEST_F(KubeletPluginTest, HealthFollowsTheDeviceStatus) {
  awaitRegistrations(*kubelet_);
  DeviceWatch& whole = watch(kWhole);
  DeviceWatch& parts = watch(kProfile);
  ASSERT_TRUE(whole.waitFor([](const auto& d) { return countHealthy(d) == 1; }, kWait));
  ASSERT_TRUE(parts.waitFor([](const auto& d) { return countHealthy(d) == 4; }, kWait));

  fault(0, driver::sysfs::kFaultError, "1");
  auto sick = whole.waitFor([](const auto& d) { return d.size() == 1 && d[0].health() == "Unhealthy"; }, kWait);
  ASSERT_TRUE(sick) << "device 0 in error never became Unhealthy\n" << qaicd_->log();
  fault(0, driver::sysfs::kFaultError, "0");
  ASSERT_TRUE(whole.waitFor([](const auto& d) { return countHealthy(d) == 1; }, kWait, whole.updates()));

  // A device in error takes its partitions' units with it; they stay listed.
  fault(1, driver::sysfs::kFaultError, "1");
  // Waits for that state itself: on a loaded machine a listing may pass through others (a status
  // query slower than qaicd's bound shows a live device Unresponsive for a moment).
  auto halfSick = parts.waitFor(
      [&](const auto& d) {
        const auto* one = findDevice(d, unit(1, 0));
        const auto* two = findDevice(d, unit(2, 0));
        return d.size() == 4 && countHealthy(d) == 2 && one != nullptr && one->health() == "Unhealthy" &&
               two != nullptr && two->health() == "Healthy";
      },
      kWait);
  ASSERT_TRUE(halfSick) << qaicd_->log();
  EXPECT_EQ(findDevice(*halfSick, unit(1, 0))->health(), "Unhealthy");
  EXPECT_EQ(findDevice(*halfSick, unit(2, 0))->health(), "Healthy");
  // A reset clears the error and ends the device's partitions; qaicd makes them again, under the
  // same unit IDs.
  fault(1, driver::sysfs::kFaultReset, "1");
  auto back = parts.waitFor([](const auto& d) { return countHealthy(d) == 4; }, kWait, parts.updates());
  ASSERT_TRUE(back) << qaicd_->log();
  EXPECT_EQ(ids(*back), (std::vector<std::string>{unit(1, 0), unit(1, 1), unit(2, 0), unit(2, 1)}));
  EXPECT_TRUE(testing::eventually([&] { return profilePartition(1, 0) && profilePartition(1, 1); }, kWait));
}

TEST_F(KubeletPluginTest, RemovedDevicesDisappearAndHotAddedOnesAppear) {
  awaitRegistrations(*kubelet_);
  DeviceWatch& whole = watch(kWhole);
  DeviceWatch& parts = watch(kProfile);
  ASSERT_TRUE(whole.waitFor([](const auto& d) { return d.size() == 1; }, kWait));
  ASSERT_TRUE(parts.waitFor([](const auto& d) { return countHealthy(d) == 4; }, kWait));

  fault(0, driver::sysfs::kFaultRemove, "1");
  ASSERT_TRUE(whole.waitFor([](const auto& d) { return d.empty(); }, kWait)) << "removed device 0 is still listed";
  fault(2, driver::sysfs::kFaultRemove, "1");
  auto left = parts.waitFor([](const auto& d) { return d.size() == 2; }, kWait);
  ASSERT_TRUE(left);
  EXPECT_EQ(ids(*left), (std::vector<std::string>{unit(1, 0), unit(1, 1)}));

  // A new device is configured like the first one (NUMA node 0) and belongs to no profile.
  std::ofstream(emu_->root().path() / "sys/bus/qaic-emu/add_device") << "1";
  auto added = whole.waitFor([](const auto& d) { return d.size() == 1 && d[0].id() == pci(3); }, kWait);
  ASSERT_TRUE(added) << "hot-added device 3 never appeared\n" << qaicd_->log();
  EXPECT_EQ((*added)[0].health(), "Healthy");
  ASSERT_EQ((*added)[0].topology().nodes_size(), 1);
  EXPECT_EQ((*added)[0].topology().nodes(0).id(), 0);
}

TEST_F(KubeletPluginTest, AllocateGivesTheContainerTheDeviceAndWhatLibqaicNeeds) {
  awaitRegistrations(*kubelet_);
  ASSERT_TRUE(watch(kWhole).waitFor([](const auto& d) { return d.size() == 1; }, kWait));
  v1beta1::AllocateResponse response;
  auto status = allocate(kWhole, {{pci(0)}}, response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.container_responses_size(), 1);
  const auto& c = response.container_responses(0);
  const std::string root = std::filesystem::canonical(rootPath()).string();
  ASSERT_EQ(c.devices_size(), 1);
  EXPECT_EQ(c.devices(0).container_path(), "/dev/accel/accel0");
  EXPECT_EQ(c.devices(0).host_path(), root + "/dev/accel/accel0");
  EXPECT_EQ(c.devices(0).permissions(), "rw");
  EXPECT_EQ(c.envs().at("QAIC_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(c.envs().count("QAIC_PARTITION"), 0u);
  // An emulated root: the container sees qaic-emu's tree (only its device) and the memory the
  // device's buffers live in, at the host's paths, and libqaic finds them through QAIC_ROOT.
  EXPECT_EQ(c.envs().at("QAIC_ROOT"), root);
  std::map<std::string, bool> mounts;          // container path -> read-only
  std::map<std::string, std::string> sources;  // container path -> host path
  for (const auto& m : c.mounts()) {
    EXPECT_TRUE(std::filesystem::exists(m.host_path())) << m.host_path();
    mounts[m.container_path()] = m.read_only();
    sources[m.container_path()] = m.host_path();
  }
  EXPECT_EQ(mounts.count(root + "/dev/accel/accel0"), 1u);
  ASSERT_EQ(mounts.count(root + "/sys/class/accel/accel0"), 1u);
  EXPECT_TRUE(mounts[root + "/sys/class/accel/accel0"]);
  // The class directory's `device` link, resolved from where the container sees that directory,
  // leads to the card's PCI function (numa_node, hwmon), mounted read-only there.
  const std::filesystem::path classDir = root + "/sys/class/accel/accel0";
  const std::string seenFunction =
      (classDir / std::filesystem::read_symlink(classDir / "device")).lexically_normal().string();
  ASSERT_EQ(mounts.count(seenFunction), 1u);
  EXPECT_TRUE(mounts[seenFunction]);
  EXPECT_EQ(sources[seenFunction], std::filesystem::canonical(classDir / "device").string());
  EXPECT_TRUE(std::filesystem::exists(sources[seenFunction] + "/numa_node"));
  const std::string shm = driver::SysfsDevice(emu_->root(), 0).read(driver::sysfs::kEmuShmDir).value();
  ASSERT_EQ(mounts.count(shm), 1u);
  EXPECT_FALSE(mounts[shm]);
  for (const std::string& same : {root + "/dev/accel/accel0", root + "/sys/class/accel/accel0", shm})
    EXPECT_EQ(sources[same], same);
  EXPECT_EQ(mounts.size(), 4u);
  // With that environment the stack's own tools find the device.
  const std::string util = utilWithEnvironment(c);
  EXPECT_NE(util.find("QID 0"), std::string::npos) << util;
  EXPECT_NE(util.find("Status:Ready"), std::string::npos) << util;
}

TEST_F(KubeletPluginTest, AllocateOfPartitionsNamesTheirNodes) {
  awaitRegistrations(*kubelet_);
  ASSERT_TRUE(watch(kProfile).waitFor([](const auto& d) { return countHealthy(d) == 4; }, kWait));
  const unsigned first = profilePartition(1, 0).value(), second = profilePartition(2, 1).value();
  v1beta1::AllocateResponse response;
  // Two containers, answered in order.
  auto status = allocate(kProfile, {{unit(1, 0)}, {unit(2, 1), unit(1, 1)}}, response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.container_responses_size(), 2);
  const auto& one = response.container_responses(0);
  EXPECT_EQ(one.envs().at("QAIC_PARTITION"), std::to_string(first));
  EXPECT_EQ(one.envs().at("QAIC_VISIBLE_DEVICES"), std::to_string(first));
  ASSERT_EQ(one.devices_size(), 1);
  EXPECT_EQ(one.devices(0).container_path(), "/dev/accel/accel" + std::to_string(first));
  EXPECT_EQ(one.devices(0).host_path(),
            std::filesystem::canonical(rootPath()).string() + "/dev/accel/accel" + std::to_string(first));
  const auto& two = response.container_responses(1);
  EXPECT_EQ(two.devices_size(), 2);
  const unsigned other = profilePartition(1, 1).value();
  const auto [low, high] = std::minmax(second, other);
  EXPECT_EQ(two.envs().at("QAIC_PARTITION"), std::to_string(low) + "," + std::to_string(high));
  EXPECT_EQ(attribute(first, driver::sysfs::kEmuNspTotal), 4u);
  const std::string util = utilWithEnvironment(one);
  EXPECT_NE(util.find("QID " + std::to_string(first)), std::string::npos) << util;
  EXPECT_NE(util.find("Parent QID:1"), std::string::npos) << util;
  EXPECT_NE(util.find("Nsp Total:4"), std::string::npos) << util;
}

TEST_F(KubeletPluginTest, PreferredAllocationPacksOntoFewDevices) {
  awaitRegistrations(*kubelet_);
  ASSERT_TRUE(watch(kProfile).waitFor([](const auto& d) { return countHealthy(d) == 4; }, kWait));
  std::vector<std::string> chosen;
  const std::vector<std::string> all = {unit(1, 0), unit(2, 0), unit(1, 1), unit(2, 1)};
  ASSERT_TRUE(prefer(kProfile, all, {}, 2, chosen).ok());
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen[0].substr(0, 12), chosen[1].substr(0, 12))
      << chosen[0] << " and " << chosen[1] << " are on two devices";
  // The device that fits the request exactly is taken over the one with more room.
  ASSERT_TRUE(prefer(kProfile, {unit(1, 0), unit(2, 0), unit(2, 1)}, {}, 1, chosen).ok());
  EXPECT_EQ(chosen, std::vector<std::string>{unit(1, 0)});
  ASSERT_TRUE(prefer(kProfile, {unit(1, 0), unit(2, 0), unit(2, 1)}, {}, 2, chosen).ok());
  EXPECT_EQ(chosen, (std::vector<std::string>{unit(2, 0), unit(2, 1)}));
  // must_include comes first and its device is filled before another one.
  ASSERT_TRUE(prefer(kProfile, all, {unit(2, 1)}, 2, chosen).ok());
  EXPECT_EQ(chosen, (std::vector<std::string>{unit(2, 1), unit(2, 0)}));
  ASSERT_TRUE(prefer(kProfile, all, {}, 4, chosen).ok());
  EXPECT_EQ(std::set<std::string>(chosen.begin(), chosen.end()), std::set<std::string>(all.begin(), all.end()));
  ASSERT_TRUE(prefer(kWhole, {pci(0)}, {}, 1, chosen).ok());
  EXPECT_EQ(chosen, std::vector<std::string>{pci(0)});
}

// Five whole cards, {0, 1, 2} behind one switch and {3, 4} behind another (the emulator's
// p2p_groups): a pod asking for several gets cards of one group when a group can hold them.
class KubeletP2pTest : public KubeletPluginTest {
 protected:
  std::string emulatorConfig() const override {
    return R"({"devices": [{"nsps": 2, "dbcs": 2}, {"nsps": 2, "dbcs": 2}, {"nsps": 2, "dbcs": 2},
                           {"nsps": 2, "dbcs": 2}, {"nsps": 2, "dbcs": 2}],
               "p2p_groups": [[0, 1, 2], [3, 4]], "semaphore_timeout_ms": 2000, "compute_threads": 1})";
  }
  std::string qaicdConfig() const override { return "{}"; }
};

TEST_F(KubeletP2pTest, PreferredAllocationKeepsAPodToOneP2pGroup) {
  awaitRegistrations(*kubelet_, 1);
  ASSERT_TRUE(watch(kWhole).waitFor([](const auto& d) { return countHealthy(d) == 5; }, kWait));
  const std::vector<std::string> all = {pci(0), pci(1), pci(2), pci(3), pci(4)};
  std::vector<std::string> chosen;
  auto sorted = [&] {
    std::sort(chosen.begin(), chosen.end());
    return chosen;
  };
  // Two cards: the group that holds them exactly, not the first two cards.
  ASSERT_TRUE(prefer(kWhole, all, {}, 2, chosen).ok());
  EXPECT_EQ(sorted(), (std::vector<std::string>{pci(3), pci(4)}));
  ASSERT_TRUE(prefer(kWhole, all, {}, 3, chosen).ok());
  EXPECT_EQ(sorted(), (std::vector<std::string>{pci(0), pci(1), pci(2)}));
  // A must-include card takes its own group's peers first.
  ASSERT_TRUE(prefer(kWhole, all, {pci(1)}, 2, chosen).ok());
  EXPECT_EQ(chosen, (std::vector<std::string>{pci(1), pci(0)}));
  // Four span two groups, the fewest that hold them: all of {0, 1, 2} and one of {3, 4}.
  ASSERT_TRUE(prefer(kWhole, all, {}, 4, chosen).ok());
  EXPECT_EQ(sorted(), (std::vector<std::string>{pci(0), pci(1), pci(2), pci(3)}));
  // The same request, the same answer.
  std::vector<std::string> again;
  ASSERT_TRUE(prefer(kWhole, all, {}, 4, again).ok());
  std::sort(again.begin(), again.end());
  EXPECT_EQ(again, chosen);
  // An impossible request is refused naming the field.
  const auto tooMany = prefer(kWhole, all, {}, 6, chosen);
  EXPECT_EQ(tooMany.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(tooMany.error_message(), "container_requests[0]: allocation_size 6 is more than the 5 available devices");
  const auto notOffered = prefer(kWhole, {pci(0), pci(1)}, {pci(3)}, 2, chosen);
  EXPECT_EQ(notOffered.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(notOffered.error_message().find("is not among available_deviceIDs"), std::string::npos)
      << notOffered.error_message();
}

TEST_F(KubeletPluginTest, HostileRequestsAreRefusedAndQaicdServesOn) {
  awaitRegistrations(*kubelet_);
  DeviceWatch& parts = watch(kProfile);
  ASSERT_TRUE(parts.waitFor([](const auto& d) { return countHealthy(d) == 4; }, kWait));
  v1beta1::AllocateResponse response;

  auto unknown = allocate(kProfile, {{unit(1, 0), "no-such-device"}}, response);
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(unknown.error_message().find("unknown device ID \"no-such-device\" for qualcomm.com/qaic-4nsp"),
            std::string::npos)
      << unknown.error_message();
  auto wrongResource = allocate(kWhole, {{unit(1, 0)}}, response);
  EXPECT_EQ(wrongResource.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << "a partition unit is not a whole device";
  auto tooMany = allocate(kWhole, {{pci(0), pci(1)}}, response);
  EXPECT_EQ(tooMany.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(tooMany.error_message().find("2 qualcomm.com/qaic devices requested, but this node has 1"),
            std::string::npos)
      << tooMany.error_message();
  auto twice = allocate(kProfile, {{unit(1, 0), unit(1, 0)}}, response);
  EXPECT_EQ(twice.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  auto none = allocate(kProfile, {}, response);
  EXPECT_EQ(none.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // IDs are quoted with their control characters escaped; one that is not UTF-8 is not even a
  // proto3 string, and gRPC refuses the message before qaicd's code sees it.
  auto control = allocate(kProfile, {{std::string("\x01\"x", 3)}}, response);
  EXPECT_EQ(control.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(control.error_message().find("\"\\x01\\x22x\""), std::string::npos) << control.error_message();
  auto binary = allocate(kProfile, {{std::string("\xff\xfe", 2)}}, response);
  EXPECT_FALSE(binary.ok());

  std::vector<std::string> thousands;
  for (int i = 0; i < 10'000; ++i) thousands.push_back(unit(1, 0) + "-" + std::to_string(i));
  auto flood = allocate(kProfile, {thousands}, response);
  EXPECT_EQ(flood.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(flood.error_message().find("10000 qualcomm.com/qaic-4nsp devices requested"), std::string::npos)
      << flood.error_message();
  std::vector<std::string> chosen;
  auto floodPrefer = prefer(kProfile, thousands, {}, 2, chosen);
  EXPECT_EQ(floodPrefer.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << floodPrefer.error_message();
  EXPECT_EQ(prefer(kProfile, {unit(1, 0)}, {}, 2, chosen).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(prefer(kProfile, {unit(1, 0)}, {unit(2, 0)}, 1, chosen).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(prefer(kProfile, {unit(1, 0)}, {}, 0, chosen).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // Over the plugin's receive limit (1 MiB): gRPC refuses it before qaicd's code runs.
  auto oversized = allocate(kProfile, {{std::string(2 * 1024 * 1024, 'x')}}, response);
  EXPECT_EQ(oversized.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << oversized.error_message();

  // A kubelet keeps one stream per resource; a crowd of them is turned away.
  std::vector<std::unique_ptr<DeviceWatch>> crowd;
  for (int i = 0; i < 6; ++i) crowd.push_back(std::make_unique<DeviceWatch>(plugin(kProfile)));
  bool refused = false;
  for (int i = 0; i < 500 && !refused; ++i) {
    for (const auto& w : crowd)
      if (auto f = w->finished(); f && f->error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) refused = true;
    if (!refused) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(refused) << "more than " << 4 << " ListAndWatch streams were served at once";
  crowd.clear();

  // Nothing was harmed: the plugin allocates, its first stream is still open, qaicd's own
  // clients are served, and no partition went away.
  ASSERT_TRUE(allocate(kProfile, {{unit(1, 0)}}, response).ok());
  EXPECT_FALSE(parts.finished().has_value());
  auto client = connect();
  ASSERT_TRUE(client.hello());
  EXPECT_EQ(partitionNodes().size(), 4u);
}

TEST_F(KubeletPluginTest, RegistersAgainWhenItsSocketIsDeleted) {
  awaitRegistrations(*kubelet_);
  ASSERT_EQ(::unlink(socketOf(kWhole).c_str()), 0);
  auto all = kubelet_->waitForRegistrations(3, kWait);
  ASSERT_EQ(all.size(), 3u) << qaicd_->log();
  EXPECT_EQ(all[2].resource_name(), kWhole);
  ASSERT_TRUE(std::filesystem::exists(socketOf(kWhole)));
  stubs_.clear();
  auto devices = watch(kWhole).waitFor([](const auto& d) { return d.size() == 1; }, kWait);
  ASSERT_TRUE(devices) << "the new socket does not serve ListAndWatch";
}

TEST_F(KubeletPluginTest, RegistersAgainWhenTheKubeletRestarts) {
  awaitRegistrations(*kubelet_);
  // A kubelet restarting clears the plugin directory and serves a new kubelet.sock.
  kubelet_.reset();
  for (const auto& entry : std::filesystem::directory_iterator(kubeletDir_)) std::filesystem::remove(entry.path());
  kubelet_ = std::make_unique<KubeletStandIn>(kubeletDir_);
  awaitRegistrations(*kubelet_);
  std::set<std::string> resources;
  for (const auto& r : kubelet_->registrations()) resources.insert(r.resource_name());
  EXPECT_EQ(resources, (std::set<std::string>{kWhole, kProfile}));
  stubs_.clear();
  ASSERT_TRUE(watch(kProfile).waitFor([](const auto& d) { return countHealthy(d) == 4; }, kWait));

  // Only its socket replaced (the plugin sockets kept): registering again all the same.
  kubelet_.reset();
  kubelet_ = std::make_unique<KubeletStandIn>(kubeletDir_);
  awaitRegistrations(*kubelet_);
}

TEST_F(KubeletPluginTest, ServesItsClientsWhileTheKubeletDoesNotAnswer) {
  awaitRegistrations(*kubelet_);
  // A "kubelet" that accepts connections and never says a word: qaicd's Register waits for it
  // (on the plugin's thread), and meanwhile qaicd answers its own clients.
  kubelet_.reset();
  UniqueFd mute(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = (kubeletDir_ / "kubelet.sock").string();
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  ASSERT_EQ(::bind(mute.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(mute.get(), 8), 0);
  UniqueFd caller(::accept4(mute.get(), nullptr, nullptr, SOCK_CLOEXEC));  // qaicd dials it
  ASSERT_TRUE(caller);
  auto client = connect();
  auto hello = client.hello();
  ASSERT_TRUE(hello) << hello.message();
  auto p = client.createPartition(Resources{1, 0, 0, 1, 0}, 0u, "meanwhile");
  ASSERT_TRUE(p) << p.message();
  ASSERT_TRUE(client.release(p->id));
  v1beta1::AllocateResponse response;
  EXPECT_TRUE(allocate(kWhole, {{pci(0)}}, response).ok()) << "the plugin stopped serving while registering";
  ::unlink(path.c_str());
}

TEST_F(KubeletPluginTest, UnitIdsAndPartitionsSurviveAQaicdRestart) {
  awaitRegistrations(*kubelet_);
  auto before = watch(kProfile).waitFor([](const auto& d) { return countHealthy(d) == 4; }, kWait);
  ASSERT_TRUE(before);
  const auto nodes = partitionNodes();
  watches_.clear();
  stubs_.clear();
  ASSERT_TRUE(stopQaicd());
  EXPECT_FALSE(std::filesystem::exists(socketOf(kWhole))) << "qaicd left its socket behind";
  EXPECT_FALSE(std::filesystem::exists(socketOf(kProfile)));
  EXPECT_EQ(partitionNodes(), nodes) << "profile partitions stay on their devices while qaicd is down";
  startQaicd(qaicdArgs());
  awaitRegistrations(*kubelet_, 4);
  auto after = watch(kProfile).waitFor([](const auto& d) { return countHealthy(d) == 4; }, kWait);
  ASSERT_TRUE(after);
  EXPECT_EQ(ids(*after), ids(*before));
  EXPECT_EQ(partitionNodes(), nodes) << "the restarted qaicd re-adopted them";
}

TEST_F(KubeletPluginTest, StoppingEndsTheStreams) {
  awaitRegistrations(*kubelet_);
  DeviceWatch& whole = watch(kWhole);
  ASSERT_TRUE(whole.waitFor([](const auto& d) { return d.size() == 1; }, kWait));
  ASSERT_TRUE(stopQaicd()) << "qaicd did not stop on SIGTERM";
  EXPECT_TRUE(testing::eventually([&] { return whole.finished().has_value(); }, kWait)) << "the stream outlived qaicd";
  EXPECT_FALSE(std::filesystem::exists(socketOf(kWhole)));
}

// A configuration that takes every device for one profile leaves nothing whole; "per_device"
// limits how many partitions each device holds.
class KubeletAllDevicesTest : public KubeletPluginTest {
 protected:
  std::string qaicdConfig() const override {
    return R"({"k8s_profiles": [{"name": "qaic-2nsp", "numNsp": 2, "numVc": 1, "per_device": 3}]})";
  }
};

TEST_F(KubeletAllDevicesTest, EveryDeviceGoesToTheProfile) {
  awaitRegistrations(*kubelet_);
  const std::string resource = "qualcomm.com/qaic-2nsp";
  auto parts = watch(resource).waitFor([](const auto& d) { return countHealthy(d) == 9; }, kWait);
  ASSERT_TRUE(parts) << qaicd_->log();
  EXPECT_EQ(findDevice(*parts, pci(2) + "-qaic-2nsp-2")->health(), "Healthy");
  auto whole = watch(kWhole).waitFor([](const auto&) { return true; }, kWait);
  ASSERT_TRUE(whole);
  EXPECT_TRUE(whole->empty());
  for (unsigned device : {0u, 1u, 2u}) EXPECT_EQ(attribute(device, driver::sysfs::kEmuNspFree), kDeviceNsps - 6);
}

}  // namespace
}  // namespace qaic::qaicd::test
