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
#include "Process.hpp"
#include "TempDir.hpp"

class RunnerSuite : public ::testing::Test {
 protected:
  // From SetUpTestSuite. `dirPrefix` names the temporary directory.
  static void startSuite(const std::string& dirPrefix, std::initializer_list<const char*> networks) {
    emulator_ = new qaic::testing::EmulatorProcess();
    ::setenv("QAIC_ROOT", emulator_->rootPath().c_str(), 1);
    suiteDir_ = new qaic::testing::TempDir(dirPrefix);
    for (const char* network : networks) {
      const auto source = qaic::testing::sourceDir() / "tests/integration/runner/data" / (std::string(network) + ".json");
      const auto r = qaic::testing::runTool("qaic-exec", {"-m=" + source.string(), "-aic-binary-dir=" + (*suiteDir_ / network).string()});
      ASSERT_EQ(r.exitCode, 0) << r.err;
    }
  }
  // From TearDownTestSuite.
  static void stopSuite() {
    delete emulator_;
    emulator_ = nullptr;
    delete suiteDir_;
    suiteDir_ = nullptr;
  }
  static const std::filesystem::path& suiteDir() { return suiteDir_->path(); }

 private:
  inline static qaic::testing::EmulatorProcess* emulator_ = nullptr;
  inline static qaic::testing::TempDir* suiteDir_ = nullptr;
};
