// SPDX-License-Identifier: Apache-2.0
// What the qaic-runner suites share, set up once per suite: a real qaic-emu on a temporary root
// (QAIC_ROOT points at it) and a temporary directory holding networks from
// tests/integration/qaic-runner/data compiled there by qaic-exec, one subdirectory each.
#pragma once

#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "CompileProgram.hpp"
#include "EmulatorProcess.hpp"
#include "Process.hpp"
#include "TempDir.hpp"

// A raw buffer file of T, as the runner reads inputs and writes outputs.
template <typename T>
void writeRaw(const std::filesystem::path& path, const std::vector<T>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(T)));
}

template <typename T>
std::vector<T> readRaw(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

class RunnerSuite : public ::testing::Test {
 protected:
  // From SetUpTestSuite. `dirPrefix` names the temporary directory; `emulatorArguments` go to
  // qaic-emu (e.g. --trace-requests).
  static void startSuite(const std::string& dirPrefix, std::initializer_list<const char*> networks,
                         std::vector<std::string> emulatorArguments = {}) {
    qaic::testing::EmulatorOptions options;
    options.arguments = std::move(emulatorArguments);
    emulator_ = new qaic::testing::EmulatorProcess(options);
    ::setenv("QAIC_ROOT", emulator_->rootPath().c_str(), 1);
    suiteDir_ = new qaic::testing::TempDir(dirPrefix);
    for (const char* network : networks) {
      const auto source = qaic::testing::sourceDir() / "tests/integration/qaic-runner/data" /
                          (std::string(network) + ".json");
      const auto r = qaic::testing::runCompiler(source, *suiteDir_ / network);
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
  static const qaic::testing::EmulatorProcess& emulator() { return *emulator_; }

 private:
  inline static qaic::testing::EmulatorProcess* emulator_ = nullptr;
  inline static qaic::testing::TempDir* suiteDir_ = nullptr;
};
