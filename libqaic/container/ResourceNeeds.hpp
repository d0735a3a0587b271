// SPDX-License-Identifier: Apache-2.0
// What activations of one program draw from a device: NSPs, multicast ids, semaphores, one
// virtual channel (DBC) each, and device memory (DDR): the program's constants once, shared by
// all its activations, plus each activation's IO region and retained state. This is the one rule
// for it: libqaic sizes a partition and reserves a resource group with it and the emulator
// charges activations with it, so a partition sized for N activations always holds exactly N.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <qaic/Resources.hpp>

#include "container/QpcModel.hpp"

namespace qaic::container {

// Bytes of every constant's data: on the device once per loaded program.
uint64_t constantsBytes(const QpcContents& contents);

// Bytes of the retained state (the retained_state entries, one buffer per pair): every
// activation holds its own.
uint64_t retainedStateBytes(const QpcContents& contents);

// The device memory of `activations` activations of one program, by what holds it.
struct DeviceMemoryNeeds {
  uint64_t constants = 0;      // once, whatever the number of activations
  uint64_t ioRegion = 0;       // per activation
  uint64_t retainedState = 0;  // per activation
  uint32_t activations = 0;

  uint64_t perActivation() const { return ioRegion + retainedState; }
  // constants + activations x perActivation(); throws std::overflow_error naming ddrSize when
  // it does not fit 64 bits.
  uint64_t total() const;
};

DeviceMemoryNeeds deviceMemoryNeeds(const QpcContents& contents, const QpcProgram& program, uint32_t activations);

// What `numActivations` activations of `program` (one of `contents`' programs) need: numNsp =
// QpcProgram::numCores, numMcid = numMulticastIds, numSem = numSemaphores and numVc = 1 (its
// DBC) per activation, ddrSize = deviceMemoryNeeds(...).total(). Throws std::overflow_error
// naming the field when a total does not fit its type.
rt::Resources resourceNeeds(const QpcContents& contents, const QpcProgram& program, uint32_t numActivations = 1);

// One device's share of a program: what a loader reserves on that card. A multi-device program
// (device_parts) has one per part, each from that part's own container (part 0: the outer one).
struct DevicePartNeeds {
  uint32_t part = 0;
  uint32_t slot = 0;  // the partition config's deviceId; 0 for a single-device program
  DeviceMemoryNeeds memory;
  rt::Resources resources;
};

// `activations` activations of program `programIndex` on every device the program spans, part 0
// first. A single-device program gives one entry whose figures are deviceMemoryNeeds' and
// resourceNeeds'. Throws std::invalid_argument naming the part when a part has no such program
// (or, for the writer's input, a nested image that does not load), std::overflow_error as
// resourceNeeds does.
std::vector<DevicePartNeeds> devicePartNeeds(const QpcContents& contents, uint32_t programIndex, uint32_t activations);

// What each device a program spans must hold for `activations` activations: every field the
// largest any part needs (devicePartNeeds), so one partition size fits whichever part a card
// gets, as qaicd's groups of partitions are all of one size. A single-device program's
// resourceNeeds. Throws as devicePartNeeds does.
rt::Resources largestPartNeeds(const QpcContents& contents, uint32_t programIndex, uint32_t activations);

// "12.0 MiB", "5.31 GiB", "512 B": a size as the device-memory messages print it.
std::string deviceMemoryText(uint64_t bytes);

// "5.31 GiB of device memory (constants 5.20 GiB, 1 activation x (IO region 12.0 MiB + retained
// state 512 MiB))": what libqaic's error and the emulator's log line say a program needs. No
// constants term when there are none (or they are already on the device), no retained term
// without retained state.
std::string describeDeviceMemory(const DeviceMemoryNeeds& needs);

}  // namespace qaic::container
