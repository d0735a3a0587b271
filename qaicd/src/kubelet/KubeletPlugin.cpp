// SPDX-License-Identifier: Apache-2.0
#include "kubelet/KubeletPlugin.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <tuple>

#include "Log.hpp"
#include "driver/ManageCalls.hpp"
#include "driver/SysfsDevice.hpp"
#include "driver/SysfsNames.hpp"
#include "kubelet/KubeletRegistrar.hpp"

namespace qaic::qaicd {

KubeletPlugin::KubeletPlugin(EventLoop& loop, DeviceRegistry& registry, Options options)
    : loop_(loop), registry_(registry), options_(std::move(options)) {
  std::error_code ec;
  emulated_ = !std::filesystem::equivalent(options_.root, "/", ec);
}

KubeletPlugin::~KubeletPlugin() {
  stop();
  if (timerToken_ != 0) loop_.remove(timerToken_);
}

Result<std::unique_ptr<KubeletPlugin>> KubeletPlugin::create(EventLoop& loop, DeviceRegistry& registry,
                                                             Options options) {
  struct stat st {};
  if (::stat(options.directory.c_str(), &st) != 0) return SysError{errno, "--kubelet-dir " + options.directory};
  if (!S_ISDIR(st.st_mode)) return SysError{ENOTDIR, "--kubelet-dir " + options.directory};
  std::unique_ptr<KubeletPlugin> plugin(new KubeletPlugin(loop, registry, std::move(options)));
  plugin->timer_.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!plugin->timer_) return lastError("timerfd_create");
  itimerspec period{};
  period.it_interval.tv_nsec = static_cast<long>(kHealthPollMs) * 1'000'000;
  period.it_value = period.it_interval;
  if (::timerfd_settime(plugin->timer_.get(), 0, &period, nullptr) != 0) return lastError("timerfd_settime");
  KubeletPlugin* raw = plugin.get();
  auto token = loop.add(plugin->timer_.get(), EPOLLIN, [raw](uint64_t, uint32_t) {
    uint64_t expirations = 0;
    [[maybe_unused]] ssize_t n = ::read(raw->timer_.get(), &expirations, sizeof expirations);
    // Health reads the last status each device answered (one that hangs in a call is
    // Unhealthy); the next is asked for now, off the loop.
    raw->registry_.refreshStatus();
    raw->readHealth();
    raw->publish();
  });
  if (!token) return token.sysError();
  plugin->timerToken_ = *token;
  return plugin;
}

std::vector<std::string> KubeletPlugin::resourceNames() const {
  std::vector<std::string> names{std::string(kWholeDeviceResource)};
  for (const K8sProfile& p : options_.profiles) names.push_back(std::string(kResourceDomain) + p.name);
  return names;
}

Result<void> KubeletPlugin::serve() {
  auto registrar = KubeletRegistrar::start(RegistrarOptions{options_.directory, resourceNames()}, inventory_);
  if (!registrar) return registrar.sysError();
  registrar_ = std::move(*registrar);
  logInfo("kubelet device plugin in " + options_.directory + " for " + std::to_string(resourceNames().size()) +
          " resources");
  return {};
}

void KubeletPlugin::stop() {
  if (registrar_) registrar_->stop();
}

KubeletPlugin::DeviceFacts& KubeletPlugin::facts(uint32_t device) {
  auto it = facts_.find(device);
  if (it != facts_.end()) return it->second;
  const driver::SysfsDevice sysfs(registry_.root(), device);
  DeviceFacts f;
  // The PCI address names the card itself, whatever order the driver probed it in: the DRM
  // core's GET_UNIQUE on the node, else the name of the PCI device the class device links to.
  if (auto pci = registry_.pciAddress(device); pci && !pci->empty()) {
    f.id = *pci;
  } else {
    std::error_code ec;
    const auto link = std::filesystem::read_symlink(registry_.root().sysfsPath(device) / "device", ec);
    const std::string name = link.filename().string();  // "0000:01:00.0"
    const bool isPci = !ec && name.size() == 12 && name[4] == ':' && name[7] == ':' && name[10] == '.';
    f.id = isPci ? name : "accel" + std::to_string(device);
  }
  // Linux shows -1 when the platform does not say; readU64 refuses it, which means "unknown".
  if (auto numa = sysfs.readU64(driver::sysfs::kNumaNode)) f.numaNode = static_cast<int64_t>(*numa);
  if (emulated_)
    if (auto shm = sysfs.read(driver::sysfs::kEmuShmDir)) f.shmDir = *shm;
  // Links between cards do not change while a card is there: read once, with the rest.
  if (auto peers = driver::readP2pPeers(sysfs)) f.p2pPeers = std::move(*peers);
  struct stat st {};
  if (::stat(registry_.root().nodePath(device).c_str(), &st) == 0) {
    f.uid = st.st_uid;
    f.gid = st.st_gid;
    f.mode = st.st_mode & 0777;
  }
  f.profile = profileForDevice(options_.profiles, device);
  if (f.profile != nullptr) {
    const auto total = registry_.totals(device);
    f.slots = total ? partitionsPerDevice(*f.profile, device, *total, options_.statics) : 0;
    if (f.slots == 0)
      logWarn("device " + std::to_string(device) + " cannot hold one " + f.profile->name + " partition: it offers no " +
              std::string(kResourceDomain) + f.profile->name + " units");
  }
  return facts_.emplace(device, std::move(f)).first->second;
}

void KubeletPlugin::ensureProfilePartitions() {
  if (registry_.takingOver()) return;  // what the devices hold is not known yet; asked again then
  for (auto it = facts_.begin(); it != facts_.end();)
    it = registry_.hasDevice(it->first) ? std::next(it) : facts_.erase(it);
  for (auto it = ready_.begin(); it != ready_.end();)
    it = registry_.hasDevice(it->first) ? std::next(it) : ready_.erase(it);

  // Partitions labelled k8s:<profile>:<slot> that the configuration no longer wants go (only
  // qaicd's own: static, holder 0); a lease whose holder chose such a label is left alone.
  std::set<std::tuple<uint32_t, std::string, uint32_t>> present;
  std::vector<uint32_t> unwanted;
  for (const auto& [id, p] : registry_.partitions()) {
    const auto slot = parseProfileLabel(p.label);
    if (!slot || !p.isStatic()) continue;
    const DeviceFacts& f = facts(p.device);
    const bool wanted = f.profile != nullptr && f.profile->name == slot->profile && slot->slot < f.slots &&
                        present.emplace(p.device, slot->profile, slot->slot).second;
    if (!wanted) unwanted.push_back(id);
  }
  for (uint32_t id : unwanted) registry_.remove(id, "no longer wanted by k8s_profiles");

  for (uint32_t device : registry_.deviceIndices()) {
    const DeviceFacts& f = facts(device);
    if (f.profile == nullptr) continue;
    for (uint32_t slot = 0; slot < f.slots; ++slot) {
      if (present.count({device, f.profile->name, slot}) != 0) continue;
      const std::string label = profileLabel(f.profile->name, slot);
      const std::string key = label + "@" + std::to_string(device);
      if (!creating_.insert(key).second) continue;  // its create is outstanding
      PartitionSpec spec{f.profile->resources, f.uid, f.gid, f.mode, 0, label};
      registry_.create(device, spec, [this, key](DeviceRegistry::CreateResult created) {
        creating_.erase(key);
        if (auto* e = std::get_if<ProtocolError>(&created)) {
          // Tried again on every rescan (a reset or a released lease may make room).
          if (creationFailures_[key] != e->message) logWarn("k8s profile partition " + key + ": " + e->message);
          creationFailures_[key] = e->message;
        } else {
          creationFailures_.erase(key);
          publish();
        }
      });
    }
  }
}

void KubeletPlugin::readHealth() {
  for (uint32_t device : registry_.deviceIndices()) {
    // The firmware's state from the STATUS query over MANAGE, as the vendor's tools ask it.
    auto report = registry_.status(device);
    const std::string status = report ? driver::firmwareStateName(report->firmwareState) : std::string();
    const bool ready = report && report->firmwareState == static_cast<uint32_t>(driver::FirmwareState::Ready);
    auto [it, fresh] = ready_.try_emplace(device, ready);
    if (!fresh && it->second != ready)
      logWarn("device " + std::to_string(device) + " is " +
              (ready ? "Ready again" : "not Ready (" + (status.empty() ? "unreadable" : status) + ")") +
              ": its kubelet units are " + (ready ? "Healthy" : "Unhealthy"));
    it->second = ready;
  }
}

void KubeletPlugin::afterRescan() {
  ensureProfilePartitions();
  // Devices seen for the first time get their status read now; the others keep the last
  // health poll's until the next one.
  bool unknown = false;
  for (uint32_t device : registry_.deviceIndices()) unknown = unknown || ready_.count(device) == 0;
  if (unknown) readHealth();
  publish();
}

void KubeletPlugin::publish() {
  Inventory base;
  base.root = options_.root;
  base.emulated = emulated_;
  base.deviceSpecs = !options_.mountsOnly;
  std::vector<std::string> profiles;
  for (const K8sProfile& p : options_.profiles) profiles.push_back(p.name);
  std::vector<OfferedDevice> devices;
  for (uint32_t device : registry_.deviceIndices()) {
    const DeviceFacts& f = facts(device);
    auto ready = ready_.find(device);
    devices.push_back(OfferedDevice{device, f.id, f.numaNode, f.shmDir, ready != ready_.end() && ready->second,
                                    f.profile != nullptr ? f.profile->name : std::string(), f.slots, f.p2pPeers});
  }
  std::vector<OfferedPartition> partitions;
  for (const auto& [id, p] : registry_.partitions()) partitions.push_back({id, p.device, p.label, p.isStatic()});
  Inventory inventory = offerInventory(std::move(base), profiles, devices, partitions);

  auto current = inventory_->current();
  if (current && current->sameOffer(inventory)) return;
  inventory_->publish(std::move(inventory));
}

}  // namespace qaic::qaicd
