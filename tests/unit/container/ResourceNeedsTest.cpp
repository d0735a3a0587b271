// SPDX-License-Identifier: Apache-2.0
// container::resourceNeeds and deviceMemoryNeeds, the one rule for what activations of a program
// draw from a device (cut 6): the constants once, each activation's IO region and retained state,
// the other counts per activation, overflow named, and the text the refusals print.
#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

#include "QpcTestContents.hpp"
#include "container/ResourceNeeds.hpp"

namespace qaic::container {
namespace {

TEST(ResourceNeeds, ConstantsOnceIoRegionAndRetainedStatePerActivation) {
  testing::SampleContents sample;  // 24 + 5 bytes of constants, a 24576-byte IO region
  sample.contents.retainedState = {testing::retainedPair("past_key", 4096), testing::retainedPair("past_value", 1024)};
  const QpcProgram& program = sample.contents.programs[0];
  EXPECT_EQ(constantsBytes(sample.contents), 29u);
  EXPECT_EQ(retainedStateBytes(sample.contents), 5120u);

  const DeviceMemoryNeeds three = deviceMemoryNeeds(sample.contents, program, 3);
  EXPECT_EQ(three.constants, 29u);
  EXPECT_EQ(three.ioRegion, 24576u);
  EXPECT_EQ(three.retainedState, 5120u);
  EXPECT_EQ(three.perActivation(), 24576u + 5120u);
  EXPECT_EQ(three.total(), 29u + 3 * (24576u + 5120u));

  const rt::Resources need = resourceNeeds(sample.contents, program, 3);
  EXPECT_EQ(need.ddrSize, three.total());
  EXPECT_EQ(need.numNsp, 9u);
  EXPECT_EQ(need.numMcid, 6u);
  EXPECT_EQ(need.numSem, 12u);
  EXPECT_EQ(need.numVc, 3u);
  EXPECT_EQ(resourceNeeds(sample.contents, program, 0).ddrSize, 29u) << "constants alone";
}

TEST(ResourceNeeds, OverflowNamesTheField) {
  testing::SampleContents sample;
  sample.contents.retainedState = {testing::retainedPair("huge", std::numeric_limits<uint64_t>::max() / 2)};
  try {
    resourceNeeds(sample.contents, sample.contents.programs[0], 3);
    FAIL() << "3 x 2^63 bytes fitted 64 bits";
  } catch (const std::overflow_error& e) {
    EXPECT_NE(std::string(e.what()).find("ddrSize"), std::string::npos) << e.what();
  }
}

TEST(ResourceNeeds, SizesReadAsTheRefusalsPrintThem) {
  EXPECT_EQ(deviceMemoryText(512), "512 B");
  EXPECT_EQ(deviceMemoryText(40000), "39.1 KiB");
  EXPECT_EQ(deviceMemoryText(12ull << 20), "12.0 MiB");
  EXPECT_EQ(deviceMemoryText(512ull << 20), "512 MiB");
  EXPECT_EQ(deviceMemoryText(16ull << 30), "16.0 GiB");
  EXPECT_EQ(deviceMemoryText(4ull << 30), "4.00 GiB");

  DeviceMemoryNeeds llama;
  llama.constants = 5583457485;  // 5.20 GiB
  llama.ioRegion = 12ull << 20;
  llama.retainedState = 512ull << 20;
  llama.activations = 1;
  EXPECT_EQ(describeDeviceMemory(llama),
            "5.71 GiB of device memory (constants 5.20 GiB, 1 activation x (IO region 12.0 MiB + retained state "
            "512 MiB))");
  DeviceMemoryNeeds plain;  // no constants, no retained state, two activations
  plain.ioRegion = 20480;
  plain.activations = 2;
  EXPECT_EQ(describeDeviceMemory(plain), "40.0 KiB of device memory (2 activations x (IO region 20.0 KiB))");
}

}  // namespace
}  // namespace qaic::container
