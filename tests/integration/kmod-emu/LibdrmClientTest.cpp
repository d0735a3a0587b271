// SPDX-License-Identifier: Apache-2.0
// The libdrm client program (LibdrmClient.cpp) against a real qaic-emu: a program that knows only
// libdrm and the uAPI opens the node, runs one inference on imported memfds, closes its handles.
#include <fstream>

#include "DeviceAttributes.hpp"
#include "EmuTest.hpp"
#include "Process.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace std::chrono_literals;

TEST_F(EmuTest, ALibdrmProgramRunsAnInferenceOnImportedMemfds) {
  const auto work = root().path().parent_path();
  const auto qpc = work / "relu.qpc";
  std::ofstream(qpc, std::ios::binary)
      .write(reinterpret_cast<const char*>(relu_.data()), static_cast<std::streamsize>(relu_.size()));
  const auto out = runCapturing(
      {(buildDir() / "tests" / "qaic_libdrm_client").string(), root().nodePath(0).string(), qpc.string()}, 60s);
  ASSERT_TRUE(out.status.exited) << "the client did not finish";
  ASSERT_EQ(out.status.code, 0) << out.out << out.err;
  EXPECT_NE(out.out.find("driver qaic 0.0.0 (Qualcomm Cloud AI Accelerators)"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("bus id 0000:01:00.0"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("relu ok"), std::string::npos) << out.out;
  // Its handles are closed and its memfds gone: the device holds no BO of it any more.
  EXPECT_EQ(attribute(driver::sysfs::kEmuNetworksActive), 0u);
}

}  // namespace
}  // namespace qaic::emu::test
