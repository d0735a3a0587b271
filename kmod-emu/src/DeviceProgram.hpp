// SPDX-License-Identifier: Apache-2.0
// What an activation runs on its NSPs: a program loaded from a validated container. The device
// only needs its resource needs and addresses, and a way to run it over the activation's IO
// region; ContainerProgram.cpp builds one from programqpc.bin.
#pragma once

#include <qaic/Resources.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include "LoadBuffer.hpp"
#include "base/CacheLineAllocator.hpp"

namespace qaic::kernels {
class PeerExchange;
}

namespace qaic::emu {

struct ProgramNeeds {
  // What the first activation of a load is charged: container::resourceNeeds for one, the same
  // rule libqaic sizes partitions and resource groups with. Its ddrSize is constantsBytes (once
  // per load, shared by the load's activations) + ioRegionSize + retainedStateBytes (each one's).
  rt::Resources charge;
  uint64_t ioRegionSize = 0;        // device memory of the activation
  uint64_t constantsBytes = 0;      // DDR the constants occupy
  uint64_t retainedStateBytes = 0;  // DDR of the activation's retained state
  std::string programName;          // for the messages
  uint64_t doorbellAddress = 0;     // device address whose write starts the program
  uint32_t doneSemaphore = 0;       // INC'd when a run finishes
  // Host threads a run computes on (its NSPs, capped by the compute pool): its kernels were
  // built for that many, and the channel holds as many of the pool's before it runs.
  uint32_t computeThreads = 1;
};

// Client memory (a BO's pages) that a request's DMA moves to or from the IO region around a run:
// instead of the channel copying it, the program may read (to the device) or write (from the
// device) it in place.
struct DirectTransfer {
  uint64_t deviceOffset = 0;
  std::span<std::byte> host;  // the client's bytes, `length` of them
  bool toDevice = true;
  // Set by run(): bytes of `host`, from its start, the program read or wrote itself (a
  // to-device transfer is always consumed, in place or copied; the channel copies the rest of a
  // from-device one afterwards).
  uint64_t done = 0;
  // Set by run(): the kernels read or wrote `host` itself, no copy in between.
  bool inPlace = false;
  // Set by run(): the client's memory faulted under the run (a truncated file).
  bool faulted = false;
};

class DeviceProgram {
 public:
  virtual ~DeviceProgram() = default;
  virtual const ProgramNeeds& needs() const = 0;
  // The exchange of the program's collectives with the other parts of its multi-device
  // program, given before attach() when the activation is a part of a peer group. Without one, a
  // program with collectives fails to attach.
  virtual void setPeers(std::shared_ptr<kernels::PeerExchange> /*peers*/) {}
  // The activation's IO region (needs().ioRegionSize bytes, fixed for the activation's life),
  // given once before the first run. Throws std::exception naming the problem when the program
  // cannot be prepared to run over it.
  virtual void attach(std::span<std::byte> /*ioRegion*/) {}
  // One run over the IO region: reads the request descriptor and inputs, writes the outputs and
  // the response descriptor. Returns the completion code (0 = success); never throws. Runs come
  // one at a time, from any thread (the activation's channel thread, not the one that built it).
  virtual uint16_t run(std::span<std::byte> ioRegion) = 0;
  // The same run with this request's pending transfers: every to-device one is in the IO region
  // before anything reads it (copied, or read in place), a from-device one may be written in
  // place. This default copies the to-device ones (DMA_FAILED when the client's memory faults)
  // and runs as above.
  virtual uint16_t run(std::span<std::byte> ioRegion, std::span<DirectTransfer> direct);
};

// Validates the container and builds program `programIndex`; nullptr with `error` naming the
// problem when it is invalid.
using ProgramLoader = std::function<std::unique_ptr<DeviceProgram>(const LoadBytes& container, uint32_t programIndex,
                                                                   std::string& error)>;

// The loader for real containers (QpcImage + HostProgram): a program computes on one host thread
// per NSP (-aic-num-cores), at most `maxComputeThreads` (the compute pool's cores).
ProgramLoader containerProgramLoader(unsigned maxComputeThreads);

}  // namespace qaic::emu
