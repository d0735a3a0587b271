// The libdrm client program (LibdrmClient.cpp) against a real qaic-emu: a program that knows only
// libdrm and the uAPI opens the node, runs one inference on imported memfds, closes its handles.
#include <fstream>

#include "EmuTest.hpp"
#include "Subprocess.hpp"

namespace qaic::emu::test {
namespace {

using namespace std::chrono_literals;

TEST_F(EmuTest, ALibdrmProgramRunsAnInferenceOnImportedMemfds) {
  const auto work = root().path().parent_path();
  const auto qpc = work / "relu.qpc";
  std::ofstream(qpc, std::ios::binary).write(reinterpret_cast<const char*>(relu_.data()),
                                             static_cast<std::streamsize>(relu_.size()));
  const auto out = runProgramCapturingStdout(
      {(buildDir() / "tests" / "qaic_libdrm_client").string(), root().nodePath(0).string(), qpc.string()},
      (work / "client.log").string(), 60s);
  ASSERT_TRUE(out.status.exited) << "the client did not finish";
  std::ifstream log(work / "client.log");
  const std::string errors((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  ASSERT_EQ(out.status.code, 0) << out.stdoutText << errors;
  EXPECT_NE(out.stdoutText.find("driver qaic 0.0.0 (Qualcomm Cloud AI Accelerators)"), std::string::npos) << out.stdoutText;
  EXPECT_NE(out.stdoutText.find("bus id 0000:01:00.0"), std::string::npos) << out.stdoutText;
  EXPECT_NE(out.stdoutText.find("relu ok"), std::string::npos) << out.stdoutText;
  // Its handles are closed and its memfds gone: the device holds no BO of it any more.
  EXPECT_EQ(attribute("qaic-emu/networks_active"), 0u);
}

}  // namespace
}  // namespace qaic::emu::test
