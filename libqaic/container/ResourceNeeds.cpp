// SPDX-License-Identifier: Apache-2.0
#include "container/ResourceNeeds.hpp"

#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>

#include "container/QpcImage.hpp"

namespace qaic::container {
namespace {

uint64_t times(uint64_t perActivation, uint32_t numActivations, uint64_t limit, const char* field) {
  if (perActivation != 0 && numActivations > limit / perActivation)
    throw std::overflow_error(std::string(field) + ": " + std::to_string(numActivations) + " activations of " +
                              std::to_string(perActivation) + " overflow the field");
  return perActivation * numActivations;
}

uint64_t plus(uint64_t a, uint64_t b, const char* what) {
  if (a > std::numeric_limits<uint64_t>::max() - b) throw std::overflow_error(std::string("ddrSize: ") + what);
  return a + b;
}

}  // namespace

uint64_t constantsBytes(const QpcContents& contents) {
  uint64_t total = 0;
  for (const auto& c : contents.constants) total += c.tensor.data.size();
  return total;
}

uint64_t retainedStateBytes(const QpcContents& contents) {
  uint64_t total = 0;
  for (const auto& pair : contents.retainedState) total = plus(total, pair.size, "retained state overflows");
  return total;
}

uint64_t DeviceMemoryNeeds::total() const {
  const uint64_t each = plus(ioRegion, retainedState, "IO region plus retained state overflow");
  return plus(constants, times(each, activations, std::numeric_limits<uint64_t>::max(), "ddrSize"),
              "constants plus activations overflow");
}

DeviceMemoryNeeds deviceMemoryNeeds(const QpcContents& contents, const QpcProgram& program, uint32_t activations) {
  DeviceMemoryNeeds needs;
  needs.constants = constantsBytes(contents);
  needs.ioRegion = program.ioRegionSize;
  needs.retainedState = retainedStateBytes(contents);
  needs.activations = activations;
  return needs;
}

rt::Resources resourceNeeds(const QpcContents& contents, const QpcProgram& program, uint32_t numActivations) {
  constexpr uint64_t u32 = std::numeric_limits<uint32_t>::max();
  rt::Resources n;
  n.numNsp = static_cast<uint32_t>(times(program.numCores, numActivations, u32, "numNsp"));
  n.numMcid = static_cast<uint32_t>(times(program.numMulticastIds, numActivations, u32, "numMcid"));
  n.numSem = static_cast<uint32_t>(times(program.numSemaphores, numActivations, u32, "numSem"));
  n.numVc = numActivations;
  n.ddrSize = deviceMemoryNeeds(contents, program, numActivations).total();
  return n;
}

std::vector<DevicePartNeeds> devicePartNeeds(const QpcContents& contents, uint32_t programIndex, uint32_t activations) {
  auto needsOf = [&](const QpcContents& part, uint32_t partIndex, uint32_t slot) {
    if (programIndex >= part.programs.size()) {
      throw std::invalid_argument("device part " + std::to_string(partIndex) + " has no program " +
                                  std::to_string(programIndex) + " (" + std::to_string(part.programs.size()) +
                                  " programs)");
    }
    const QpcProgram& program = part.programs[programIndex];
    return DevicePartNeeds{partIndex, slot, deviceMemoryNeeds(part, program, activations),
                           resourceNeeds(part, program, activations)};
  };
  if (contents.deviceParts.empty()) return {needsOf(contents, 0, 0)};
  std::vector<DevicePartNeeds> all;
  for (uint32_t i = 0; i < contents.deviceParts.size(); ++i) {
    const QpcDevicePart& part = contents.deviceParts[i];
    if (i == 0) {
      all.push_back(needsOf(contents, 0, part.slot));
    } else if (part.contents) {
      all.push_back(needsOf(*part.contents, i, part.slot));
    } else {
      // The writer's input: the part is still bytes.
      std::unique_ptr<QpcImage> image;
      try {
        image = QpcImage::fromBytes(part.image, "device part " + std::to_string(i));
      } catch (const QpcFormatError& e) {
        throw std::invalid_argument(e.what());
      }
      all.push_back(needsOf(image->contents(), i, part.slot));
    }
  }
  return all;
}

rt::Resources largestPartNeeds(const QpcContents& contents, uint32_t programIndex, uint32_t activations) {
  rt::Resources r;
  for (const DevicePartNeeds& part : devicePartNeeds(contents, programIndex, activations)) {
    r.numNsp = std::max(r.numNsp, part.resources.numNsp);
    r.numMcid = std::max(r.numMcid, part.resources.numMcid);
    r.numSem = std::max(r.numSem, part.resources.numSem);
    r.numVc = std::max(r.numVc, part.resources.numVc);
    r.ddrSize = std::max(r.ddrSize, part.resources.ddrSize);
  }
  return r;
}

std::string deviceMemoryText(uint64_t bytes) {
  constexpr double kKiB = 1024.0, kMiB = kKiB * 1024.0, kGiB = kMiB * 1024.0;
  char text[32];
  const double b = static_cast<double>(bytes);
  // Three significant digits: "12.0 MiB", "512 MiB", "5.31 GiB".
  auto scaled = [&](double unit, const char* name) {
    const double v = b / unit;
    std::snprintf(text, sizeof text, v < 10.0 ? "%.2f %s" : (v < 100.0 ? "%.1f %s" : "%.0f %s"), v, name);
  };
  if (bytes < 1024)
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  else if (bytes < (1ull << 20))
    scaled(kKiB, "KiB");
  else if (bytes < (1ull << 30))
    scaled(kMiB, "MiB");
  else
    scaled(kGiB, "GiB");
  return text;
}

std::string describeDeviceMemory(const DeviceMemoryNeeds& needs) {
  std::string text = deviceMemoryText(needs.total()) + " of device memory (";
  if (needs.constants > 0) text += "constants " + deviceMemoryText(needs.constants) + ", ";
  text += std::to_string(needs.activations) + (needs.activations == 1 ? " activation" : " activations") +
          " x (IO region " + deviceMemoryText(needs.ioRegion);
  if (needs.retainedState > 0) text += " + retained state " + deviceMemoryText(needs.retainedState);
  return text + "))";
}

}  // namespace qaic::container
