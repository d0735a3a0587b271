// SPDX-License-Identifier: Apache-2.0
#include "runtime/loading/ResourceReservation.hpp"

#include <cerrno>
#include <stdexcept>

#include "container/QpcImage.hpp"
#include "container/ResourceNeeds.hpp"
#include "driver/DeviceProtocol.hpp"
#include "driver/ManageCalls.hpp"
#include "runtime/objects/ContextImpl.hpp"
#include "runtime/objects/StatusCodes.hpp"

namespace qaic::rt {
namespace {

std::string counted(uint64_t count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

std::string activationsText(uint32_t count) { return counted(count, "activation", "activations"); }

driver::ResourceGroupRequest groupRequest(driver::ResourceGroupOp op, uint32_t groupId, const Resources& resources) {
  driver::ResourceGroupRequest request{};
  request.magic = driver::kResourceGroupMagic;
  request.version = driver::kResourceGroupVersion;
  request.op = static_cast<uint32_t>(op);
  request.groupId = groupId;
  request.resources = resources;
  return request;
}

// "3 NSPs, 3 DBCs, 12 semaphores, 0 multicast ids and 4.5 MiB of device memory"; a count of 1
// in the singular.
std::string describeResources(const Resources& r) {
  return counted(r.numNsp, "NSP", "NSPs") + ", " + counted(r.numVc, "DBC", "DBCs") + ", " +
         counted(r.numSem, "semaphore", "semaphores") + ", " + counted(r.numMcid, "multicast id", "multicast ids") +
         " and " + container::deviceMemoryText(r.ddrSize) + " of device memory";
}

}  // namespace

ResourceReservation::ResourceReservation(const ContextImpl& context, const container::QpcImage& image,
                                         uint32_t programIndex, const std::map<QID, uint32_t>& activationsPerDevice,
                                         const std::string& what)
    : context_(context) {
  const auto& program = image.programs().at(programIndex);
  try {
    for (const auto& [device, count] : activationsPerDevice) {
      Resources need;
      try {
        need = container::resourceNeeds(image.contents(), program, count);
      } catch (const std::overflow_error& e) {
        // More of something than any device counts: no device holds it.
        throw Error(QS_NO_RESOURCES, what + ": " + activationsText(count) + " of " + image.sourceName() +
                                         " on device " + std::to_string(device) + " need more than a device has (" +
                                         e.what() + ")");
      }
      auto node = context_.device(device);
      auto reserved = driver::resourceGroup(*node, groupRequest(driver::ResourceGroupOp::ReserveNamed, 0, need));
      if (!reserved && reserved.error() == ENOMEM) {
        // Everything but device memory is free: say what the memory holds and what is free.
        std::string free;
        if (auto status = driver::queryDeviceStatus(*node))
          free = "; " + container::deviceMemoryText(status->ddrFreeBytes) + " of " +
                 container::deviceMemoryText(status->ddrTotalBytes) + " free";
        throw Error(
            QS_NO_RESOURCES,
            what + ": device " + std::to_string(device) + ": program '" + program.name + "' of " + image.sourceName() +
                (count == 1 ? " needs " : " need ") +
                container::describeDeviceMemory(container::deviceMemoryNeeds(image.contents(), program, count)) + free);
      }
      if (!reserved) {
        if (reserved.error() != ENOSPC)
          throw Error(statusForErrno(reserved.error()), what + ": reserving the resources of " +
                                                            activationsText(count) + " on device " +
                                                            std::to_string(device) + ": " + reserved.message());
        std::string free;
        if (auto status = driver::queryDeviceStatus(*node))
          free = "; the device has " + describeResources(driver::freeResources(*status)) + " free";
        throw Error(QS_NO_RESOURCES, what + ": " + activationsText(count) + " of " + image.sourceName() +
                                         (count == 1 ? " needs " : " need ") + describeResources(need) + " on device " +
                                         std::to_string(device) + free);
      }
      groups_[device] = Group{std::move(node), reserved->groupId};
    }
  } catch (...) {
    releaseAll();
    throw;
  }
}

ResourceReservation::~ResourceReservation() { releaseAll(); }

uint32_t ResourceReservation::groupOn(QID device) const {
  auto it = groups_.find(device);
  return it == groups_.end() ? 0 : it->second.id;
}

void ResourceReservation::releaseAll() noexcept {
  for (const auto& [device, group] : groups_) {
    auto released = driver::resourceGroup(*group.node, groupRequest(driver::ResourceGroupOp::Release, group.id, {}));
    // A device that went away or reset took the group with it; anything else is worth a line.
    if (!released && released.error() != ENOENT && statusForErrno(released.error()) != QS_DEV_REMOVED)
      context_.log(QL_WARN, "releasing resource group " + std::to_string(group.id) + " on device " +
                                std::to_string(device) + ": " + released.message());
  }
  groups_.clear();
}

}  // namespace qaic::rt
