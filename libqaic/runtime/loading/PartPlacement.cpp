// SPDX-License-Identifier: Apache-2.0
#include "runtime/loading/PartPlacement.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "container/QpcImage.hpp"
#include "container/QpcWriter.hpp"
#include "container/ResourceNeeds.hpp"
#include "driver/DeviceProtocol.hpp"
#include "driver/ManageCalls.hpp"
#include "driver/SysfsDevice.hpp"
#include "runtime/objects/ContextImpl.hpp"

namespace qaic::rt {
namespace {

std::string partsText(const container::QpcImage& image) {
  return image.sourceName() + " has " + std::to_string(image.deviceCount()) + " device parts";
}

// The cards `device` reaches peer to peer, or nullopt where it publishes no topology.
std::optional<std::vector<uint32_t>> peersOf(const ContextImpl& context, QID device) {
  return driver::readP2pPeers(driver::SysfsDevice(context.root(), device));
}

bool linked(const std::optional<std::vector<uint32_t>>& peers, QID other) {
  return peers && std::find(peers->begin(), peers->end(), other) != peers->end();
}

// Refuses devices that are not pairwise peers. Devices none of which publishes a topology (a
// real card under mainline's driver) pass: the device itself refuses an unlinked part (EXDEV)
// at activation, which undoes the parts already up.
void checkLinked(const ContextImpl& context, const std::vector<QID>& devices, const std::string& what) {
  std::vector<std::optional<std::vector<uint32_t>>> peers;
  for (QID d : devices) peers.push_back(peersOf(context, d));
  if (std::none_of(peers.begin(), peers.end(), [](const auto& p) { return p.has_value(); })) return;
  for (std::size_t i = 0; i < devices.size(); ++i)
    for (std::size_t j = i + 1; j < devices.size(); ++j)
      if (!linked(peers[i], devices[j]))
        throw Error(QS_INVAL, what + ": devices " + std::to_string(devices[i]) + " and " + std::to_string(devices[j]) +
                                  " are not linked peer to peer; the " + std::to_string(devices.size()) +
                                  " parts of a multi-device program need devices of one P2P group");
}

// The first `parts` entries of `named` (from `source`), each distinct and of the context.
std::vector<QID> takeNamed(const ContextImpl& context, const container::QpcImage& image, std::vector<QID> named,
                           const std::string& source, const std::string& what) {
  const std::size_t parts = image.deviceCount();
  if (named.size() < parts)
    throw Error(QS_INVAL, what + ": " + partsText(image) + " and needs " + std::to_string(parts) + " devices; " +
                              source + " names " + std::to_string(named.size()) + " (" + deviceListText(named) + ")");
  named.resize(parts);
  std::set<QID> seen;
  for (QID d : named) {
    if (!seen.insert(d).second)
      throw Error(QS_INVAL, what + ": " + source + " names device " + std::to_string(d) + " twice (" +
                                deviceListText(named) + "); the " + std::to_string(parts) +
                                " parts of the program need distinct devices");
    context.device(d);  // throws QS_INVAL for a device outside the context
  }
  checkLinked(context, named, what);
  // The names follow the partition config's devices (its slots), not the parts' order: a
  // pipeline's part 0 is its last stage, so the k-th name goes to the part of the k-th slot.
  std::vector<std::size_t> bySlot(parts);
  for (std::size_t p = 0; p < parts; ++p) bySlot[p] = p;
  const auto& entries = image.deviceParts();
  if (entries.size() == parts)
    std::stable_sort(bySlot.begin(), bySlot.end(),
                     [&](std::size_t a, std::size_t b) { return entries[a].slot < entries[b].slot; });
  std::vector<QID> byPart(parts);
  for (std::size_t k = 0; k < parts; ++k) byPart[bySlot[k]] = named[k];
  return byPart;
}

// The first devices of one P2P group (in the context's order) that hold their part.
std::vector<QID> pickFree(const ContextImpl& context, const container::QpcImage& image, uint32_t numActivations,
                          const std::string& what) {
  const std::size_t parts = image.deviceCount();
  std::vector<container::DevicePartNeeds> needs;
  try {
    needs = container::devicePartNeeds(image.contents(), 0, numActivations);
  } catch (const std::exception& e) {
    throw Error(QS_NO_RESOURCES, what + ": " + image.sourceName() + ": " + e.what());
  }
  std::vector<QID> cards;
  for (QID d : context.getDevices())
    if (d < driver::kFirstPartitionId) cards.push_back(d);
  if (cards.size() < parts)
    throw Error(QS_NODEV, what + ": " + partsText(image) + " and needs " + std::to_string(parts) +
                              " devices; the context has " + std::to_string(cards.size()) + " (" +
                              deviceListText(cards) + ")");
  // Groups keyed by their lowest member; a device without topology is a group of its own.
  std::map<QID, std::vector<QID>> groups;
  std::vector<std::string> refusals;
  for (QID d : cards) {
    const auto peers = peersOf(context, d);
    QID key = d;
    if (peers)
      for (uint32_t peer : *peers) key = std::min<QID>(key, peer);
    groups[key].push_back(d);
  }
  for (const auto& [key, members] : groups) {
    std::vector<QID> chosen;
    for (QID d : members) {
      if (chosen.size() == parts) break;
      auto status = driver::queryDeviceStatus(*context.device(d));
      if (!status) {
        refusals.push_back("device " + std::to_string(d) + ": " + status.message());
        continue;
      }
      const Resources& need = needs[chosen.size()].resources;
      if (driver::freeResources(*status).covers(need)) chosen.push_back(d);
    }
    if (chosen.size() == parts) return chosen;
  }
  std::string detail;
  for (const auto& r : refusals) detail += "; " + r;
  throw Error(QS_NO_RESOURCES, what + ": " + partsText(image) + "; no " + std::to_string(parts) +
                                   " devices of one P2P group among the context's (" +
                                   deviceListText(context.getDevices()) + ") have their part's NSPs and memory free" +
                                   detail);
}

}  // namespace

std::string deviceListText(const std::vector<QID>& devices) {
  std::string text;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (i > 0) text += i + 1 == devices.size() ? " and " : ", ";
    text += std::to_string(devices[i]);
  }
  return text.empty() ? "none" : text;
}

std::vector<QID> choosePartDevices(const ContextImpl& context, const container::QpcImage& image,
                                   uint32_t numActivations, const ProgramProperties& program, const std::string& what) {
  if (!program.devMapping.empty()) return takeNamed(context, image, program.devMapping, "devMapping", what);
  // Devices the application opened by name are all it may use: too few of them is its error.
  if (context.namedDevices()) return takeNamed(context, image, context.getDevices(), "the Context", what);
  return pickFree(context, image, numActivations, what);
}

std::vector<std::shared_ptr<Qpc>> partPrograms(const container::QpcImage& image) {
  std::vector<std::shared_ptr<Qpc>> parts;
  container::QpcContents own = image.contents();
  own.deviceParts.clear();
  own.partitionConfig.clear();
  const std::vector<std::byte> first = container::serializeQpc(own);
  parts.push_back(Qpc::Factory(reinterpret_cast<const uint8_t*>(first.data()), first.size()));
  for (std::size_t p = 1; p < image.deviceParts().size(); ++p) {
    const auto bytes = image.deviceParts()[p].image;
    parts.push_back(Qpc::Factory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  }
  return parts;
}

}  // namespace qaic::rt
