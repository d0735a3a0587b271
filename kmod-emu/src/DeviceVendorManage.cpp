// SPDX-License-Identifier: Apache-2.0
// The vendor's firmware commands (driver/VendorManage.hpp) beside this project's own MANAGE
// payloads: its status query answered from the same figures as "QSTA", its image load, unload,
// activation and deactivation mapped onto the device's loads and DBCs, and every other command
// refused with the firmware's status in a reply of the command's own shape.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "Device.hpp"

namespace qaic::emu {
namespace {

namespace vendor = driver::vendor;
using vendor::Command;
using vendor::FirmwareStatus;

template <typename T>
T readAt(const std::vector<std::byte>& msg, std::size_t offset) {
  T v{};
  std::memcpy(&v, msg.data() + offset, sizeof v);
  return v;
}

template <std::size_t N>
void copyText(char (&to)[N], const std::string& from) {
  std::memset(to, 0, N);
  std::memcpy(to, from.data(), std::min(from.size(), N - 1));
}

// "1.12.2.0" -> {1, 12, 2, 0}; missing or unreadable parts are 0.
std::array<uint32_t, 4> versionParts(const std::string& text) {
  std::array<uint32_t, 4> parts{};
  std::sscanf(text.c_str(), "%u.%u.%u.%u", &parts[0], &parts[1], &parts[2], &parts[3]);
  return parts;
}

// The vendor's SKU number for a configured name, by the words its names use.
vendor::SkuType skuTypeOf(const std::string& sku) {
  using S = vendor::SkuType;
  auto has = [&](const char* word) { return sku.find(word) != std::string::npos; };
  if (has("M.2")) return S::M2;
  if (has("Auto")) return S::Auto;
  if (!has("PCIe")) return S::Invalid;
  if (has("Ultra Plus")) return S::PcieUltraPlus;
  if (has("Ultra") && has("080")) return S::PcieUltra080;
  if (has("Ultra")) return S::PcieUltra;
  if (has("080")) return S::Pcie080;
  if (has("Pro")) return S::PciePro;
  if (has("Lite")) return S::PcieLite;
  return S::Pcie;
}

// The firmware's status for what the device's own load and activation machinery refused;
// nullopt for errors the driver itself reports (a descriptor, a device gone).
std::optional<FirmwareStatus> firmwareStatusOf(int err) {
  switch (err) {
    case ENOSPC: return FirmwareStatus::NspAllocationFailed;
    case ENOMEM: return FirmwareStatus::MemoryExhausted;
    case EINVAL: return FirmwareStatus::MetadataError;  // the image is no program it can run
    case EAGAIN: return FirmwareStatus::NotInitialized;
    default: return std::nullopt;
  }
}

uint8_t clampToByte(uint64_t v) { return static_cast<uint8_t>(std::min<uint64_t>(v, UINT8_MAX)); }

template <typename Reply>
void appendReply(ManageAnswer& answer, const Reply& reply) {
  const uint32_t payload = (sizeof reply + 7) / 8 * 8;
  const qaic_manage_trans_hdr hdr{QAIC_TRANS_PASSTHROUGH_TO_USR, static_cast<uint32_t>(sizeof hdr + payload)};
  const auto* h = reinterpret_cast<const std::byte*>(&hdr);
  answer.bytes.insert(answer.bytes.end(), h, h + sizeof hdr);
  const auto* r = reinterpret_cast<const std::byte*>(&reply);
  answer.bytes.insert(answer.bytes.end(), r, r + sizeof reply);
  answer.bytes.resize(answer.bytes.size() + (payload - sizeof reply));
  ++answer.count;
}

template <typename T>
void appendTransaction(ManageAnswer& answer, const T& t) {
  const auto* p = reinterpret_cast<const std::byte*>(&t);
  answer.bytes.insert(answer.bytes.end(), p, p + sizeof t);
  ++answer.count;
}

// A reply in the shape of the request's own, all zero but its type and status: a refusal, or the
// success of a command whose reply says nothing more.
void appendBareReply(ManageAnswer& answer, uint32_t requestType, FirmwareStatus status) {
  const auto shape =
      vendor::replyShape(requestType).value_or(vendor::ReplyShape{0, sizeof(vendor::StatusOnlyReply), 4});
  std::vector<std::byte> reply((shape.size + 7) / 8 * 8);
  std::memcpy(reply.data(), &shape.type, sizeof shape.type);
  const auto code = static_cast<int32_t>(status);
  std::memcpy(reply.data() + shape.statusOffset, &code, sizeof code);
  const qaic_manage_trans_hdr hdr{QAIC_TRANS_PASSTHROUGH_TO_USR, static_cast<uint32_t>(sizeof hdr + reply.size())};
  const auto* h = reinterpret_cast<const std::byte*>(&hdr);
  answer.bytes.insert(answer.bytes.end(), h, h + sizeof hdr);
  answer.bytes.insert(answer.bytes.end(), reply.begin(), reply.end());
  ++answer.count;
}

}  // namespace

vendor::ResourceInfo Device::vendorResources(const driver::DeviceStatusResponse& report) const {
  vendor::ResourceInfo r{};
  r.dramTotalMb = static_cast<uint32_t>(report.ddrTotalBytes >> 20);
  r.dramFreeMb = static_cast<uint32_t>(report.ddrFreeBytes >> 20);
  r.vcTotal = clampToByte(report.vcTotal);
  r.vcFree = clampToByte(report.vcFree);
  r.nspTotal = clampToByte(report.nspTotal);
  r.nspFree = clampToByte(report.nspFree);
  r.mcidTotal = report.mcidTotal;
  r.mcidFree = report.mcidFree;
  r.semTotal = report.semTotal;
  r.semFree = report.semFree;
  return r;
}

vendor::PerformanceInfo Device::vendorPerformance() const {
  vendor::PerformanceInfo p{};
  p.nspHz = config_.nspFrequencyMhz * 1000000u;
  p.ddrHz = config_.ddrFrequencyMhz * 1000000u;
  return p;
}

vendor::StatusReply Device::vendorStatus(const Partition* partition) {
  const driver::DeviceStatusResponse report = statusReport(partition);
  vendor::StatusReply r{};
  r.type = static_cast<uint32_t>(Command::StatusReply);
  switch (static_cast<driver::FirmwareState>(report.firmwareState)) {
    case driver::FirmwareState::Ready: r.status = static_cast<int32_t>(FirmwareStatus::Success); break;
    case driver::FirmwareState::Initializing: r.status = static_cast<int32_t>(FirmwareStatus::NotInitialized); break;
    default: r.status = static_cast<int32_t>(FirmwareStatus::Error); break;
  }
  r.formatVersion = vendor::kDeviceInfoFormatVersion;
  vendor::DeviceInfo& d = r.device;
  const auto fw = versionParts(config_.fwVersion);
  d.fwMajor = clampToByte(fw[0]), d.fwMinor = clampToByte(fw[1]);
  d.fwPatch = clampToByte(fw[2]), d.fwBuild = clampToByte(fw[3]);
  copyText(d.fwQcImageVersion, config_.fwQcImageVersion);
  copyText(d.fwOemImageVersion, config_.fwOemImageVersion);
  copyText(d.fwImageVariant, config_.fwImageVariant);
  const auto hw = versionParts(config_.hwVersion);
  d.hwVersion = (hw[0] & 0xfu) << 28 | (hw[1] & 0xfffu) << 16 | (hw[2] & 0xffu) << 8 | (hw[3] & 0xffu);
  copyText(d.serial, config_.serial);
  copyText(d.boardSerial, config_.boardSerial);
  d.resources = vendorResources(report);
  d.performance = vendorPerformance();
  d.constantsLoaded = report.constantsLoaded;
  d.constantsInUse = report.constantsInUse;
  d.networksLoaded = clampToByte(report.networksLoaded);
  d.networksActive = clampToByte(report.networksActive);
  // The device runs this project's containers, not the vendor's network metadata: it claims no
  // metadata version (0.0), so the vendor's runtime does not send it networks of its own.
  d.protocolMajor = vendor::kCommandProtocolMajor;
  d.protocolMinor = vendor::kCommandProtocolMinor;
  d.skuType = static_cast<uint8_t>(skuTypeOf(config_.sku));
  vendor::NspInfo& n = r.nsp;
  n.major = d.fwMajor, n.minor = d.fwMinor, n.patch = d.fwPatch, n.build = d.fwBuild;
  copyText(n.qcImageVersion, config_.nspQcImageVersion);
  copyText(n.imageVariant, config_.nspImageVariant);
  return r;
}

int Device::vendorCommand(OpenFile& f, const std::vector<std::byte>& msg, std::span<const ManageTransaction> rest,
                          pid_t pid, ManageAnswer& answer, std::size_t& used) {
  used = 0;
  const ManageTransaction& self = rest.front();
  const std::size_t at = self.offset + sizeof(qaic_manage_trans_hdr);
  const std::size_t payload = self.hdr.len - sizeof(qaic_manage_trans_hdr);
  const auto type = readAt<uint32_t>(msg, at);
  // The transaction right after this one, when it is of `wanted` type and size.
  auto follower = [&](uint32_t wanted, std::size_t size) -> const ManageTransaction* {
    if (rest.size() < 2 || rest[1].hdr.type != wanted) return nullptr;
    return rest[1].hdr.len == size ? &rest[1] : nullptr;
  };
  // A request shorter than its command's structure is the firmware's length error.
  auto request = [&]<typename T>(T& out) {
    if (payload < sizeof out) return false;
    out = readAt<T>(msg, at);
    return true;
  };

  switch (static_cast<Command>(type)) {
    case Command::Status: {
      vendor::StatusRequest req;
      if (!request(req)) break;
      appendReply(answer, vendorStatus(f.partition.get()));
      return 0;
    }
    case Command::ResourceInfo: {
      vendor::ResourceInfoRequest req;
      if (!request(req)) break;
      // Only the device's (or partition's) own figures: the vendor's resource groups do not exist.
      if (req.resourceGroupId != -1) {
        appendBareReply(answer, type, FirmwareStatus::ResourceNotFound);
        return 0;
      }
      vendor::ResourceInfoReply reply{};
      reply.type = static_cast<uint32_t>(Command::ResourceInfoReply);
      reply.resourceGroupId = -1;
      reply.resources = vendorResources(statusReport(f.partition.get()));
      appendReply(answer, reply);
      return 0;
    }
    case Command::PerformanceInfo: {
      vendor::PerformanceInfoRequest req;
      if (!request(req)) break;
      vendor::PerformanceInfoReply reply{};
      reply.type = static_cast<uint32_t>(Command::PerformanceInfoReply);
      reply.performance = vendorPerformance();
      appendReply(answer, reply);
      return 0;
    }
    case Command::LoadElf: {
      vendor::LoadElfRequest req;
      if (!request(req)) break;
      const ManageTransaction* dma = follower(QAIC_TRANS_DMA_XFER_FROM_USR, sizeof(qaic_manage_trans_dma_xfer));
      if (dma == nullptr) {
        appendBareReply(answer, type, FirmwareStatus::ParameterError);
        return 0;
      }
      used = 1;
      auto t = readAt<qaic_manage_trans_dma_xfer>(msg, dma->offset);
      if (t.size == 0) return EINVAL;  // mainline's transport refuses an empty transfer
      if (t.tag != req.tag || t.size != req.length) {
        appendBareReply(answer, type, FirmwareStatus::ParameterError);
        return 0;
      }
      // The image becomes a load of the file under a fresh id, counted down from the top of the
      // load ids so that it does not meet the ids this project's clients choose from 1 up. The
      // vendor's tag is the same for every image, and its `pad` word carries a count of 1.
      uint32_t id = driver::kLoadIdMask;
      {
        std::lock_guard lock(mutex_);
        while (id > 0 && f.loads.contains(id)) --id;
      }
      if (id == 0) {
        appendBareReply(answer, type, FirmwareStatus::MemoryExhausted);
        return 0;
      }
      t.tag = id;
      t.pad = 0;
      if (int err = dmaTransfer(f, t, false, pid)) {
        const auto status = firmwareStatusOf(err);
        if (!status) return err;  // EFAULT: the image is not readable
        appendBareReply(answer, type, *status);
        return 0;
      }
      vendor::LoadReply reply{static_cast<uint32_t>(Command::LoadElfReply), id, 0, 0};
      appendReply(answer, reply);
      return 0;
    }
    case Command::UnloadElf: {
      vendor::UnloadRequest req;
      if (!request(req)) break;
      std::lock_guard lock(mutex_);
      // What an activation still runs stays with it, as when this project's clients release a load.
      const bool erased = req.id != 0 && f.loads.erase(req.id) == 1;
      appendBareReply(answer, type, erased ? FirmwareStatus::Success : FirmwareStatus::ResourceNotFound);
      return 0;
    }
    case Command::Activate: {
      vendor::ActivateRequest req;
      if (!request(req)) break;
      const ManageTransaction* setup = req.vcSetup == 1 ? follower(QAIC_TRANS_ACTIVATE_FROM_USR,
                                                                   sizeof(qaic_manage_trans_activate_to_dev))
                                                        : nullptr;
      qaic_manage_trans_activate_to_dev t{};
      if (setup != nullptr) {
        used = 1;
        t = readAt<qaic_manage_trans_activate_to_dev>(msg, setup->offset);
        // The driver checks the DBC's queue before the firmware sees the command, as for this
        // project's own ACTIVATE.
        if (t.queue_size < driver::kMinQueueSize || t.queue_size > driver::kMaxQueueSize || t.pad != 0) return EINVAL;
      }
      // Constants and reservations are never loaded or made here; a DBC comes only with the
      // activation's own setup transaction.
      FirmwareStatus refusal = FirmwareStatus::Success;
      if (req.constantsId != 0 || req.reservationType != 0 || req.resourceReservationId != -1 ||
          req.vcReservationId != -1)
        refusal = FirmwareStatus::ResourceNotFound;
      else if (setup == nullptr || req.initialState < 0 || req.initialState > 1 || req.datapathSwitching != 0)
        refusal = FirmwareStatus::ParameterError;
      else {
        std::lock_guard lock(mutex_);
        if (req.elfId == 0 || req.elfId > driver::kLoadIdMask || !f.loads.contains(req.elfId))
          refusal = FirmwareStatus::ResourceNotFound;
      }
      if (refusal != FirmwareStatus::Success) {
        appendBareReply(answer, type, refusal);
        return 0;
      }
      const uint64_t vendorOptions = t.options;
      t.options = driver::makeActivateOptions(req.elfId, 0);
      uint32_t dbc = 0;
      if (int err = activate(f, t, pid, dbc)) {
        const auto status = firmwareStatusOf(err);
        if (!status) return err;
        appendBareReply(answer, type, *status);
        return 0;
      }
      answer.activated.push_back(dbc);
      vendor::ActivateReply reply{};
      reply.type = static_cast<uint32_t>(Command::ActivateReply);
      reply.activationId = dbc + 1;  // 0 means failure on the vendor's wire
      reply.virtualChannelId = dbc;
      appendReply(answer, reply);
      qaic_manage_trans_activate_from_dev resp{};
      resp.hdr = {QAIC_TRANS_ACTIVATE_FROM_DEV, sizeof resp};
      resp.dbc_id = dbc;
      resp.options = vendorOptions;
      appendTransaction(answer, resp);
      return 0;
    }
    case Command::Deactivate: {
      vendor::DeactivateRequest req;
      if (!request(req)) break;
      // A deactivation that keeps its DBC (vcTeardown 0) has no counterpart: an activation here
      // is its DBC.
      if (req.vcTeardown != 1) {
        appendBareReply(answer, type, FirmwareStatus::UndefinedRequest);
        return 0;
      }
      const ManageTransaction* teardown = follower(QAIC_TRANS_DEACTIVATE_FROM_USR,
                                                   sizeof(qaic_manage_trans_deactivate));
      if (teardown == nullptr) {
        appendBareReply(answer, type, FirmwareStatus::ParameterError);
        return 0;
      }
      used = 1;
      const auto t = readAt<qaic_manage_trans_deactivate>(msg, teardown->offset);
      if (t.pad != 0) return EINVAL;
      if (req.activationId == 0 || req.activationId - 1 != t.dbc_id) {
        appendBareReply(answer, type, FirmwareStatus::ParameterError);
        return 0;
      }
      if (int err = deactivate(f, t.dbc_id)) {
        if (err == ENODEV) return err;
        // Another file's DBC, an idle one or one beyond the device's.
        appendBareReply(answer, type, FirmwareStatus::NoNetworkToDeactivate);
        return 0;
      }
      std::erase(answer.activated, t.dbc_id);
      appendBareReply(answer, type, FirmwareStatus::Success);
      appendTransaction(answer, qaic_manage_trans_deactivate{{QAIC_TRANS_DEACTIVATE_FROM_DEV, sizeof t}, t.dbc_id, 0});
      return 0;
    }
    default:
      // Constants, reservations, resource groups, activation states, device configuration,
      // TERMINATE, and numbers that name no request.
      appendBareReply(answer, type, FirmwareStatus::UndefinedRequest);
      return 0;
  }
  appendBareReply(answer, type, FirmwareStatus::CommandLengthError);
  return 0;
}

}  // namespace qaic::emu
