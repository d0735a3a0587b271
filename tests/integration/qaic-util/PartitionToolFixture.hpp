// SPDX-License-Identifier: Apache-2.0
// The fixture of the partition tests of qaic-util: the test support's emulator + qaicd fixture
// (QaicdFixture.hpp) with QAIC_ROOT pointing at the emulator, QAICD_SOCKET pointing into the
// private directory, and qaicd started only on request (startQaicd()).
#pragma once

#include <string>

#include "QaicdFixture.hpp"

namespace qaic::testing {

class PartitionToolTest : public QaicdFixture {
 protected:
  std::string emulatorConfig() const override {
    return R"({"devices": [{"nsps": 8, "dbcs": 8}], "compute_threads": 1})";
  }
  bool qaicdAtSetUp() const override { return false; }
  void SetUp() override;
  void TearDown() override;
};

// The lines of `text` from "QID <id>" up to the next "QID " block.
std::string queryBlock(const std::string& text, unsigned id);
// The number after `prefix` in `text` ("Partition " -> 100), or -1.
long numberAfter(const std::string& text, const std::string& prefix);

}  // namespace qaic::testing
