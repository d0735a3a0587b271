// SPDX-License-Identifier: Apache-2.0
// The bytes of one request on the ring (docs/device-protocol.md section 4): the request
// descriptor, then every present input (the last one rings the program's doorbell), then every
// present output and the response descriptor (the first waits for the program's done semaphore,
// the last releases it and asks for a completion). Pure functions over a ProgramLayout.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "driver/DeviceProtocol.hpp"
#include "runtime/loading/ProgramLayout.hpp"

namespace qaic::rt {

// One request's elements carry req_id 0; RequestRing::submit stamps the ring's own.
struct RequestPlan {
  uint32_t sequence = 0;
  uint32_t inputBo = 0;       // handle of the to-device staging BO
  uint32_t outputBo = 0;      // handle of the from-device staging BO
  std::vector<bool> present;  // by mapping index
  std::vector<IoDims> dims;   // by mapping index (empty for dropped buffers)
  // Zero copy: by mapping index, the IO virtual address of the user's own DMA buffer (0: the
  // staging BO) and, for outputs, how many bytes to bring back into it.
  std::vector<uint64_t> direct;
  std::vector<uint64_t> directBytes;
  bool resetState = false;  // driver::kRequestFlagResetState
};

void writeRequestDescriptor(std::span<std::byte> out, const ProgramLayout& layout, const RequestPlan& plan);
std::vector<driver::RequestElement> buildRequest(const ProgramLayout& layout, const RequestPlan& plan);

struct ResponseInfo {
  uint16_t status = 0;        // a DBC completion code
  std::vector<bool> present;  // by mapping index
  std::vector<IoDims> dims;   // by mapping index
  // When the program ran (driver::ResponseTimestamps), if the device reported it.
  std::optional<std::pair<std::chrono::steady_clock::time_point, std::chrono::steady_clock::time_point>> programRun;
};

// Throws Error(QS_DEVICE_ERROR) naming the field when the descriptor is malformed.
ResponseInfo readResponseDescriptor(std::span<const std::byte> in, const ProgramLayout& layout);
// What a program that failed (PROGRAM_FAILED) says about why; "" when it says nothing.
std::string readResponseDiagnostic(std::span<const std::byte> in, const ProgramLayout& layout);

}  // namespace qaic::rt
