// SPDX-License-Identifier: Apache-2.0
// The device's sysfs directory, sys/class/accel/accelN (and a partition's, accel100+): the
// attribute names; reading them (mainline's attributes, the firmware's identity and telemetry,
// the STATUS query's figures under qaic-emu/); writing the fault files; and the status report
// itself, which the STATUS query over MANAGE answers with (DeviceManage.cpp).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>
#include <utility>

#include "Device.hpp"
#include "driver/SysfsNames.hpp"

namespace qaic::emu {
namespace sysfs = driver::sysfs;
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

const std::vector<std::string> kFaultFiles = {sysfs::kFaultNspHang,  sysfs::kFaultDmaFail, sysfs::kFaultError,
                                              sysfs::kFaultReset,    sysfs::kFaultRemove,  sysfs::kFaultControlHang,
                                              sysfs::kFaultResetHang};

// Parses "<unsigned>" fields of a fault write; trailing newline allowed.
std::vector<uint64_t> parseNumbers(const std::string& text, bool& ok) {
  std::vector<uint64_t> out;
  std::istringstream in(text);
  std::string word;
  ok = true;
  while (in >> word) {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc() || p != word.data() + word.size()) ok = false;
    out.push_back(v);
  }
  return out;
}

// The STATUS query's figures as qaic-emu/ files.
const std::vector<std::string> kFigureNames = {sysfs::kEmuStatus,
                                               sysfs::kEmuNspTotal,
                                               sysfs::kEmuNspFree,
                                               sysfs::kEmuVcTotal,
                                               sysfs::kEmuVcFree,
                                               sysfs::kEmuMcidTotal,
                                               sysfs::kEmuMcidFree,
                                               sysfs::kEmuSemTotal,
                                               sysfs::kEmuSemFree,
                                               sysfs::kEmuDramTotal,
                                               sysfs::kEmuDramFree,
                                               sysfs::kEmuNetworksLoaded,
                                               sysfs::kEmuNetworksActive,
                                               sysfs::kEmuConstantsLoaded,
                                               sysfs::kEmuConstantsInUse,
                                               sysfs::kEmuPciAddress,
                                               sysfs::kEmuFwVersion,
                                               sysfs::kEmuHwVersion,
                                               sysfs::kEmuSku,
                                               sysfs::kEmuNspFrequencyMhz};
const std::vector<std::string> kPciNames = {
    sysfs::kPciVendor,          sysfs::kPciDevice, sysfs::kPciClass,    sysfs::kPciSubsystemVendor,
    sysfs::kPciSubsystemDevice, sysfs::kPciIrq,    sysfs::kPciResource, sysfs::kPciConfig,
    sysfs::kPciUevent,          sysfs::kCeCount,   sysfs::kUeCount,     sysfs::kUeNonfatalCount};

// The PCI identity of the emulated card: an AIC100 in the processing-accelerator class, its
// subsystem ids the same as its own.
constexpr uint16_t kVendorId = 0x17cb, kDeviceId = 0xa100;
constexpr uint32_t kClassCode = 0x120000;
// Where a card's BARs sit in the emulated host's memory map: 4 MiB apart per device, so each
// BAR is aligned to its size (BAR2 2 MiB, BAR0 4 KiB, BAR4 64 KiB; mainline's layout).
constexpr uint64_t kBarWindowBase = 0xf0000000, kBarWindowStride = 0x400000;
struct Bar {
  unsigned index;
  uint64_t offset, size;
};
constexpr Bar kBars[] = {{0, 0x200000, 0x1000}, {2, 0, 0x200000}, {4, 0x210000, 0x10000}};
constexpr uint64_t kMem64ResourceFlags = 0x140204;  // IORESOURCE_MEM | MEM_64 | SIZEALIGN, 64-bit

// The `resource` file: one "start end flags" line per region, 13 as a kernel with SR-IOV
// support prints for an endpoint (6 BARs, the ROM, 6 IOV BARs); unused ones are zeros.
std::string pciResourceText(uint32_t index) {
  std::string text;
  char line[64];
  for (unsigned region = 0; region < 13; ++region) {
    uint64_t start = 0, end = 0, flags = 0;
    for (const Bar& bar : kBars)
      if (bar.index == region) {
        start = kBarWindowBase + kBarWindowStride * index + bar.offset;
        end = start + bar.size - 1;
        flags = kMem64ResourceFlags;
      }
    std::snprintf(line, sizeof line, "0x%016llx 0x%016llx 0x%016llx\n", static_cast<unsigned long long>(start),
                  static_cast<unsigned long long>(end), static_cast<unsigned long long>(flags));
    text += line;
  }
  return text;
}

// The PCIe link speed code of a max_link_speed text ("16.0 GT/s PCIe": 4), as Link
// Capabilities and Link Status encode it; 0 for a text that names no PCIe generation.
uint32_t linkSpeedCode(const std::string& speed) {
  static const std::pair<const char*, uint32_t> kCodes[] = {{"2.5 GT/s", 1},  {"5.0 GT/s", 2},  {"8.0 GT/s", 3},
                                                            {"16.0 GT/s", 4}, {"32.0 GT/s", 5}, {"64.0 GT/s", 6}};
  for (const auto& [text, code] : kCodes)
    if (speed.starts_with(text)) return code;
  return 0;
}

// The standard 256-byte configuration space: ids, class, the 64-bit memory BARs, subsystem ids,
// interrupt pin A, and one capability, PCI Express (an endpoint), whose link registers carry the
// configured link (libpci reads them for the vendor's qaic-util).
constexpr std::size_t kPcieCapability = 0x40;
std::string pciConfigSpace(uint32_t index, const DeviceConfig& c) {
  std::string config(256, '\0');
  auto put = [&](std::size_t at, uint64_t value, std::size_t bytes) {
    for (std::size_t i = 0; i < bytes; ++i) config[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
  };
  put(0x00, kVendorId, 2);
  put(0x02, kDeviceId, 2);
  put(0x04, 0x0006, 2);         // command: memory space and bus master enabled
  put(0x06, 0x0010, 2);         // status: a capability list
  put(0x09, kClassCode, 3);     // programming interface, subclass, class
  for (const Bar& bar : kBars)  // a 64-bit BAR takes two registers: low dword with type 0b10, high
    put(0x10 + 4 * bar.index, (kBarWindowBase + kBarWindowStride * index + bar.offset) | 0x4, 8);
  put(0x2c, kVendorId, 2);
  put(0x2e, kDeviceId, 2);
  put(0x34, kPcieCapability, 1);
  put(0x3d, 1, 1);                         // interrupt pin INTA
  put(kPcieCapability + 0x00, 0x10, 1);    // capability id: PCI Express; the last in the list
  put(kPcieCapability + 0x02, 0x0002, 2);  // version 2, a PCI Express endpoint
  put(kPcieCapability + 0x0c, linkSpeedCode(c.maxLinkSpeed) | (c.maxLinkWidth & 0x3f) << 4, 4);
  put(kPcieCapability + 0x12, linkSpeedCode(c.currentLinkSpeed) | (c.currentLinkWidth & 0x3f) << 4, 2);
  return config;
}
const std::vector<std::string> kPartitionFiles = {sysfs::kPartitionParent,    sysfs::kPartitionOwnerUid,
                                                  sysfs::kPartitionOwnerGid,  sysfs::kPartitionMode,
                                                  sysfs::kPartitionHolderPid, sysfs::kPartitionLabel};

template <std::size_t N>
void copyText(char (&to)[N], const std::string& from) {
  std::memset(to, 0, N);
  std::memcpy(to, from.data(), std::min(from.size(), N - 1));
}

// A figure of the report as its qaic-emu/ file shows it; nullopt for another name.
std::optional<std::string> renderFigure(const driver::DeviceStatusResponse& r, const std::string& name) {
  auto n = [](uint64_t v) { return std::to_string(v) + "\n"; };
  if (name == sysfs::kEmuStatus) return std::string(driver::firmwareStateName(r.firmwareState)) + "\n";
  if (name == sysfs::kEmuNspTotal) return n(r.nspTotal);
  if (name == sysfs::kEmuNspFree) return n(r.nspFree);
  if (name == sysfs::kEmuVcTotal) return n(r.vcTotal);
  if (name == sysfs::kEmuVcFree) return n(r.vcFree);
  if (name == sysfs::kEmuMcidTotal) return n(r.mcidTotal);
  if (name == sysfs::kEmuMcidFree) return n(r.mcidFree);
  if (name == sysfs::kEmuSemTotal) return n(r.semTotal);
  if (name == sysfs::kEmuSemFree) return n(r.semFree);
  if (name == sysfs::kEmuDramTotal) return n(r.ddrTotalBytes / kMiB);
  if (name == sysfs::kEmuDramFree) return n(r.ddrFreeBytes / kMiB);
  if (name == sysfs::kEmuNetworksLoaded) return n(r.networksLoaded);
  if (name == sysfs::kEmuNetworksActive) return n(r.networksActive);
  if (name == sysfs::kEmuConstantsLoaded) return n(r.constantsLoaded);
  if (name == sysfs::kEmuConstantsInUse) return n(r.constantsInUse);
  if (name == sysfs::kEmuFwVersion) return std::string(r.fwVersion) + "\n";
  if (name == sysfs::kEmuHwVersion) return std::string(r.hwVersion) + "\n";
  if (name == sysfs::kEmuSku) return std::string(r.sku) + "\n";
  if (name == sysfs::kEmuNspFrequencyMhz) return n(r.nspFrequencyMhz);
  return std::nullopt;
}

}  // namespace

std::string Device::pciAddress() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0000:%02x:00.0", index_ + 1);
  return buf;
}

// Identity and telemetry: the firmware's strings under qaic-emu/ (mainline's driver publishes
// none of them), the PCI function's link attributes (the kernel's own names and formats) and an
// hwmon directory (millidegrees, microwatts) under device/.
namespace {
const std::string kHwmon0 = std::string(sysfs::kHwmonDir) + "/hwmon0/";
}  // namespace

const std::vector<std::string> Device::kIdentityAttributes = {
    sysfs::kEmuSerial,
    sysfs::kEmuBoardSerial,
    sysfs::kEmuFwQcImageVersion,
    sysfs::kEmuFwOemImageVersion,
    sysfs::kEmuFwImageVariant,
    sysfs::kEmuNspVersion,
    sysfs::kEmuNspQcImageVersion,
    sysfs::kEmuNspImageVariant,
    sysfs::kEmuDeviceCapabilities,
    sysfs::kEmuP2pPeers,
    sysfs::kEmuDdrFrequencyMhz,
    sysfs::kMaxLinkSpeed,
    sysfs::kMaxLinkWidth,
    sysfs::kCurrentLinkSpeed,
    sysfs::kCurrentLinkWidth,
    kHwmon0 + sysfs::kHwmonName,
    kHwmon0 + sysfs::kHwmonTemperature,
    kHwmon0 + sysfs::kHwmonPower,
    kHwmon0 + sysfs::kHwmonPowerCap,
};

// Caller holds mutex_.
std::optional<std::string> Device::readIdentityAttribute(const std::string& name) const {
  const DeviceConfig& c = config_;
  auto line = [](const std::string& text) { return text + "\n"; };
  if (name == sysfs::kEmuSerial) return line(c.serial);
  if (name == sysfs::kEmuBoardSerial) return line(c.boardSerial);
  if (name == sysfs::kEmuFwQcImageVersion) return line(c.fwQcImageVersion);
  if (name == sysfs::kEmuFwOemImageVersion) return line(c.fwOemImageVersion);
  if (name == sysfs::kEmuFwImageVariant) return line(c.fwImageVariant);
  if (name == sysfs::kEmuNspVersion) return line(c.fwVersion);
  if (name == sysfs::kEmuNspQcImageVersion) return line(c.nspQcImageVersion);
  if (name == sysfs::kEmuNspImageVariant) return line(c.nspImageVariant);
  if (name == sysfs::kEmuDeviceCapabilities) {
    std::string text;
    for (const auto& [capability, supported] : c.capabilities)
      text += (text.empty() ? "" : " ") + capability + (supported ? "+" : "-");
    return line(text);
  }
  if (name == sysfs::kEmuP2pPeers) {
    std::string text;
    for (uint32_t peer : c.p2pPeers) text += (text.empty() ? "" : " ") + std::to_string(peer);
    return line(text);
  }
  if (name == sysfs::kEmuDdrFrequencyMhz) return line(std::to_string(c.ddrFrequencyMhz));
  if (name == sysfs::kMaxLinkSpeed) return line(c.maxLinkSpeed);
  if (name == sysfs::kMaxLinkWidth) return line(std::to_string(c.maxLinkWidth));
  if (name == sysfs::kCurrentLinkSpeed) return line(c.currentLinkSpeed);
  if (name == sysfs::kCurrentLinkWidth) return line(std::to_string(c.currentLinkWidth));
  if (name == sysfs::kNumaNode) return c.numaNode ? line(std::to_string(*c.numaNode)) : std::string("-1\n");
  if (name == kHwmon0 + sysfs::kHwmonName) return line("qaic");
  // The NSPs working (claimed by activations or partitions) draw power, up to the cap.
  const double busyNsps = static_cast<double>(total_.numNsp - free_.numNsp);
  const double powerW = std::min(c.tdpCapW, c.idlePowerW + c.powerPerNspW * busyNsps);
  if (name == kHwmon0 + sysfs::kHwmonPower) return line(std::to_string(std::llround(powerW * 1e6)));
  if (name == kHwmon0 + sysfs::kHwmonPowerCap) return line(std::to_string(std::llround(c.tdpCapW * 1e6)));
  if (name == kHwmon0 + sysfs::kHwmonTemperature)
    return line(std::to_string(std::llround((c.idleTemperatureC + c.degreesPerW * (powerW - c.idlePowerW)) * 1000)));
  return std::nullopt;
}

std::vector<std::string> Device::attributeNames(uint32_t dbcs) {
  std::vector<std::string> names(kIdentityAttributes.begin(), kIdentityAttributes.end());
  names.push_back(sysfs::kNumaNode);
  names.push_back(sysfs::kDev);
  names.push_back(sysfs::kUevent);
  for (uint32_t i = 0; i < dbcs; ++i) names.push_back(sysfs::dbcState(i));
  names.insert(names.end(), kPciNames.begin(), kPciNames.end());
  names.insert(names.end(), kFigureNames.begin(), kFigureNames.end());
  names.push_back(sysfs::kEmuShmDir);
  names.push_back(sysfs::kEmuPassthrough);
  names.push_back(sysfs::kEmuPid);
  names.push_back(sysfs::kEmuComputeThreads);
  names.push_back(sysfs::kEmuComputeBusy);
  names.push_back(sysfs::kEmuComputeBusyMax);
  names.push_back(sysfs::kEmuDoorbellSleeps);
  names.push_back(sysfs::kEmuDoorbellPolls);
  names.push_back(sysfs::kEmuResponseInterrupts);
  names.push_back(sysfs::kEmuResponseWakes);
  names.push_back(sysfs::kEmuP2pTxBytes);
  names.push_back(sysfs::kEmuP2pRxBytes);
  names.insert(names.end(), kFaultFiles.begin(), kFaultFiles.end());
  return names;
}

std::vector<std::string> Device::writableAttributeNames() { return kFaultFiles; }

std::vector<std::string> Device::partitionAttributeNames() {
  std::vector<std::string> names;
  for (const std::string& n : attributeNames(0))
    if (!attributeWritable(n)) names.push_back(n);
  names.insert(names.end(), kPartitionFiles.begin(), kPartitionFiles.end());
  return names;
}

std::optional<Device::NodeOwner> Device::partitionOwner(uint32_t partitionId) {
  std::lock_guard lock(mutex_);
  auto it = partitions_.find(partitionId);
  if (it == partitions_.end() || it->second->ended) return std::nullopt;
  return NodeOwner{it->second->ownerUid, it->second->ownerGid, it->second->mode};
}

bool Device::attributeWritable(const std::string& name) {
  for (const auto& f : kFaultFiles)
    if (f == name) return true;
  return false;
}

driver::DeviceStatusResponse Device::statusReport(const Partition* partition) {
  std::lock_guard lock(mutex_);
  return statusReportLocked(partition);
}

driver::DeviceStatusResponse Device::statusReportLocked(const Partition* partition) {
  driver::DeviceStatusResponse r{};
  r.magic = driver::kDeviceStatusMagic;
  r.version = driver::kDeviceStatusVersion;
  r.firmwareState = static_cast<uint32_t>(status_ == Status::Ready          ? driver::FirmwareState::Ready
                                          : status_ == Status::Initializing ? driver::FirmwareState::Initializing
                                                                            : driver::FirmwareState::Error);
  const rt::Resources& total = partition ? partition->capacity : total_;
  const rt::Resources& free = partition ? partition->free : free_;
  r.nspTotal = total.numNsp, r.nspFree = free.numNsp;
  r.mcidTotal = total.numMcid, r.mcidFree = free.numMcid;
  r.semTotal = total.numSem, r.semFree = free.numSem;
  r.vcTotal = total.numVc, r.vcFree = free.numVc;
  r.ddrTotalBytes = total.ddrSize, r.ddrFreeBytes = free.ddrSize;
  // A load counts as a network; its constants count once an activation uses them.
  for (auto& [id, weak] : files_) {
    auto f = weak.lock();
    if (!f || (partition != nullptr && f->partition.get() != partition)) continue;
    r.networksLoaded += static_cast<uint32_t>(f->loads.size());
    r.networksActive += static_cast<uint32_t>(f->activations.size());
    std::set<const void*> withConstants;
    for (auto& [dbc, act] : f->activations) {
      if (!act->program || act->program->needs().constantsBytes == 0) continue;
      withConstants.insert(act->load.get());
      ++r.constantsInUse;
    }
    r.constantsLoaded += static_cast<uint32_t>(withConstants.size());
  }
  r.nspFrequencyMhz = config_.nspFrequencyMhz;
  copyText(r.fwVersion, config_.fwVersion);
  copyText(r.hwVersion, config_.hwVersion);
  copyText(r.sku, config_.sku);
  return r;
}

std::optional<std::string> Device::readAttribute(const std::string& name, uint32_t partitionId) {
  std::lock_guard lock(mutex_);
  const Partition* partition = nullptr;
  if (partitionId != 0) {
    auto it = partitions_.find(partitionId);
    if (it == partitions_.end()) return std::nullopt;
    partition = it->second.get();
    if (auto own = readPartitionAttribute(*partition, name)) return own;
    // A partition shows its parent card's identity and telemetry, not its DBCs or fault files.
    if (name.starts_with("dbc") || attributeWritable(name)) return std::nullopt;
  }
  auto n = [](uint64_t v) { return std::to_string(v) + "\n"; };
  auto hex = [](unsigned v, int digits) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%0*x\n", digits, v);
    return std::string(buf);
  };
  const uint32_t minor = partitionId != 0 ? partitionId : index_;
  if (name == sysfs::kDev) return std::to_string(sysfs::kAccelMajor) + ":" + n(minor);
  if (name == sysfs::kUevent)
    return "MAJOR=" + n(sysfs::kAccelMajor) + "MINOR=" + n(minor) + "DEVNAME=accel/accel" + n(minor);
  if (name == sysfs::kPciVendor || name == sysfs::kPciSubsystemVendor) return hex(kVendorId, 4);
  if (name == sysfs::kPciDevice || name == sysfs::kPciSubsystemDevice) return hex(kDeviceId, 4);
  if (name == sysfs::kPciClass) return hex(kClassCode, 6);
  if (name == sysfs::kPciResource) return pciResourceText(index_);
  if (name == sysfs::kPciIrq) return std::string("0\n");  // MSI only: no legacy line routed
  if (name == sysfs::kPciConfig) return pciConfigSpace(index_, config_);
  if (name == sysfs::kPciUevent) {
    char ids[160];
    std::snprintf(
        ids, sizeof ids,
        "PCI_CLASS=%X\nPCI_ID=%04X:%04X\nPCI_SUBSYS_ID=%04X:%04X\nMODALIAS=pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X\n",
        kClassCode, kVendorId, kDeviceId, kVendorId, kDeviceId, kVendorId, kDeviceId, kVendorId, kDeviceId,
        kClassCode >> 16, (kClassCode >> 8) & 0xff, kClassCode & 0xff);
    return "DRIVER=qaic\n" + std::string(ids) + "PCI_SLOT_NAME=" + pciAddress() + "\n";
  }
  // The emulated card raises no RAS events: its error counters stay 0.
  if (name == sysfs::kCeCount || name == sysfs::kUeCount || name == sysfs::kUeNonfatalCount) return std::string("0\n");
  if (auto identity = readIdentityAttribute(name)) return identity;
  if (name == sysfs::kEmuPciAddress) return pciAddress() + "\n";
  if (name == sysfs::kEmuShmDir) return ctx_.shm->path() + "\n";
  if (name == sysfs::kEmuPassthrough) return std::string(ctx_.passthrough && ctx_.passthrough->load() ? "1\n" : "0\n");
  if (name == sysfs::kEmuPid) return n(static_cast<uint64_t>(getpid()));
  if (name == sysfs::kEmuComputeThreads) return n(ctx_.compute->cores());
  if (name == sysfs::kEmuComputeBusy) return n(ctx_.compute->busy());
  if (name == sysfs::kEmuComputeBusyMax) return n(ctx_.compute->busyMax());
  if (name == sysfs::kFaultNspHang) return std::string(nspHang_ ? "1\n" : "0\n");
  if (name == sysfs::kFaultControlHang) return std::string(controlHang_ ? "1\n" : "0\n");
  if (name == sysfs::kFaultResetHang) return std::string(resetHang_ ? "1\n" : "0\n");
  if (name == sysfs::kEmuDoorbellSleeps) return n(datapath_.doorbellSleeps.load());
  if (name == sysfs::kEmuDoorbellPolls) return n(datapath_.doorbellPolls.load());
  if (name == sysfs::kEmuResponseInterrupts) return n(datapath_.responseInterrupts.load());
  if (name == sysfs::kEmuResponseWakes) return n(datapath_.responseWakes.load());
  if (name == sysfs::kEmuP2pTxBytes) return n(ctx_.peerGroups->deviceTransfer(index_).sent);
  if (name == sysfs::kEmuP2pRxBytes) return n(ctx_.peerGroups->deviceTransfer(index_).received);
  if (name == sysfs::kFaultDmaFail) return std::to_string(dmaFailCode_) + " " + std::to_string(dmaFailCount_) + "\n";
  if (name == sysfs::kFaultError) return std::string(status_ == Status::Error ? "1\n" : "0\n");
  if (name == sysfs::kFaultReset || name == sysfs::kFaultRemove) return std::string("0\n");
  if (name.starts_with(sysfs::kEmuDir)) return renderFigure(statusReportLocked(partition), name);
  if (name.size() > 9 && name.starts_with("dbc") && name.ends_with("_state")) {
    const std::string digits = name.substr(3, name.size() - 9);
    uint32_t i = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), i);
    if (ec == std::errc() && p == digits.data() + digits.size() && i < dbcState_.size())
      return n(static_cast<uint64_t>(dbcState_[i]));
  }
  return std::nullopt;
}

int Device::writeAttribute(const std::string& name, const std::string& text) {
  bool ok = false;
  auto values = parseNumbers(text, ok);
  if (!ok || values.empty()) return EINVAL;
  if (name == sysfs::kFaultNspHang || name == sysfs::kFaultControlHang || name == sysfs::kFaultResetHang) {
    if (values.size() != 1 || values[0] > 1) return EINVAL;
    {
      std::lock_guard lock(mutex_);
      (name == sysfs::kFaultNspHang       ? nspHang_
       : name == sysfs::kFaultControlHang ? controlHang_
                                          : resetHang_) = values[0] == 1;
    }
    faultChanged_.notify_all();
    // A hung card's parts of multi-device programs never reach their next collective.
    if (name == sysfs::kFaultNspHang && values[0] == 1) breakPeerGroups("hung (NSP hang)");
    return 0;
  }
  if (name == sysfs::kFaultDmaFail) {
    // "<code> [count]": the next count (default 1) requests complete with code; "0" clears.
    if (values.size() > 2 || values[0] > driver::DBC_COMPLETION_ABORTED) return EINVAL;
    std::lock_guard lock(mutex_);
    dmaFailCode_ = static_cast<uint16_t>(values[0]);
    dmaFailCount_ = values[0] == 0 ? 0 : static_cast<uint32_t>(values.size() == 2 ? values[1] : 1);
    return 0;
  }
  if (name == sysfs::kFaultError) {
    if (values.size() != 1 || values[0] > 1) return EINVAL;
    if (values[0] == 1) {
      enterError();
    } else {
      std::lock_guard lock(mutex_);
      if (status_ == Status::Error) status_ = Status::Ready;
    }
    return 0;
  }
  if (name == sysfs::kFaultReset || name == sysfs::kFaultRemove) {
    if (values.size() != 1 || values[0] != 1) return EINVAL;
    if (name == sysfs::kFaultReset) return reset();
    remove();
    return 0;
  }
  return EACCES;
}

// A partition's own files; the rest of its directory is its parent's.
std::optional<std::string> Device::readPartitionAttribute(const Partition& p, const std::string& name) {
  auto n = [](uint64_t v) { return std::to_string(v) + "\n"; };
  if (name == sysfs::kPartitionParent) return n(index_);
  if (name == sysfs::kPartitionOwnerUid) return n(p.ownerUid);
  if (name == sysfs::kPartitionOwnerGid) return n(p.ownerGid);
  if (name == sysfs::kPartitionMode) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04o\n", p.mode);
    return std::string(buf);
  }
  if (name == sysfs::kPartitionHolderPid) return std::to_string(p.holderPid) + "\n";
  if (name == sysfs::kPartitionLabel) return p.label + "\n";
  return std::nullopt;
}

}  // namespace qaic::emu
