// What the qaic-runner suites share, set up once per suite: a real qaic-emu on a temporary root
// (QAIC_ROOT points at it) and a temporary directory holding networks from
// tests/integration/runner/data compiled there by qaic-exec, one subdirectory each.
#pragma once

#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <initializer_list>
#include <string>

#include "EmulatorProcess.hpp"
#include "RunTool.hpp"

class RunnerSuite : public ::testing::Test {
 protected:
  // From SetUpTestSuite. `dirPrefix` names the temporary directory (/tmp/PREFIX-XXXXXX).
  static void startSuite(const std::string& dirPrefix, std::initializer_list<const char*> networks) {
    emulator_ = new qaic::emu::test::EmulatorProcess();
    ::setenv("QAIC_ROOT", emulator_->root().path().c_str(), 1);
    std::string tmpl = "/tmp/" + dirPrefix + "-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    suiteDir_ = new std::filesystem::path(tmpl);
    for (const char* network : networks) {
      const auto source =
          std::filesystem::path(QAIC_TEST_SOURCE_DIR) / "tests/integration/runner/data" / (std::string(network) + ".json");
      const auto r = qaic::testing::runProgram(qaic::testing::toolPath("qaic-exec"),
                                               {"-m=" + source.string(), "-aic-binary-dir=" + (*suiteDir_ / network).string()});
      ASSERT_EQ(r.exitCode, 0) << r.err;
    }
  }
  // From TearDownTestSuite.
  static void stopSuite() {
    delete emulator_;
    emulator_ = nullptr;
    if (suiteDir_ != nullptr) std::filesystem::remove_all(*suiteDir_);
    delete suiteDir_;
    suiteDir_ = nullptr;
  }
  static const std::filesystem::path& suiteDir() { return *suiteDir_; }

 private:
  inline static qaic::emu::test::EmulatorProcess* emulator_ = nullptr;
  inline static std::filesystem::path* suiteDir_ = nullptr;
};
