// SPDX-License-Identifier: Apache-2.0
// The driver a fuzz target is linked with in the suite's own build (gcc, and its ASan/UBSan and
// TSan variants): it replays the committed corpus through LLVMFuzzerTestOneInput, one input at a
// time in name order, without libFuzzer. Fuzzing itself (new inputs, coverage) is `make fuzz`,
// which needs clang's -fsanitize=fuzzer.
//
// Usage: fuzz_replay_<target> [-libfuzzer_flag=value ...] PATH...
//   PATH is an input file or a directory of them. Flags are passed to LLVMFuzzerInitialize, as
//   libFuzzer would (--write-seeds=DIR writes the seed corpus and exits there), and otherwise
//   ignored. Exits 0 after the last input; a crash, a sanitizer report or an escaped exception
//   names the input that caused it first.
#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

namespace fs = std::filesystem;

// The input being replayed, for the reports of a crash (written from a signal handler, so a
// fixed buffer, not a std::string).
char currentInput[4096] = "(before the first input)";

void writeAll(const char* text) {
  std::size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t written = ::write(STDERR_FILENO, text, left);
    if (written <= 0) return;
    text += written;
    left -= static_cast<std::size_t>(written);
  }
}

void reportCrash(int signal) {
  writeAll("fuzz replay: crashed (");
  writeAll(strsignal(signal));
  writeAll(") on input ");
  writeAll(currentInput);
  writeAll("\n");
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void reportTermination() {
  writeAll("fuzz replay: terminated by an exception on input ");
  writeAll(currentInput);
  writeAll("\n");
  std::abort();
}

// Every input under the given paths, directories expanded (not recursively), in name order so a
// failure reproduces in the same place.
bool collectInputs(const std::vector<std::string>& paths, std::vector<fs::path>& inputs) {
  for (const auto& path : paths) {
    std::error_code error;
    if (fs::is_directory(path, error)) {
      std::vector<fs::path> files;
      for (const auto& entry : fs::directory_iterator(path, error)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      if (error) {
        std::fprintf(stderr, "fuzz replay: cannot list %s: %s\n", path.c_str(), error.message().c_str());
        return false;
      }
      std::sort(files.begin(), files.end());
      inputs.insert(inputs.end(), files.begin(), files.end());
    } else if (fs::is_regular_file(path, error)) {
      inputs.emplace_back(path);
    } else {
      std::fprintf(stderr, "fuzz replay: %s: no such input file or directory\n", path.c_str());
      return false;
    }
  }
  return true;
}

// One input in a heap buffer of exactly its size, as libFuzzer hands it over: never a null
// pointer (even for an empty input), and a read past its end is caught by ASan here too.
struct Input {
  std::unique_ptr<uint8_t[]> bytes;
  std::size_t size = 0;
};

bool readInput(const fs::path& path, Input& input) {
  std::error_code error;
  const auto size = fs::file_size(path, error);
  if (error) return false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  input.bytes.reset(new uint8_t[size]);
  input.size = static_cast<std::size_t>(size);
  in.read(reinterpret_cast<char*>(input.bytes.get()), static_cast<std::streamsize>(size));
  return static_cast<std::size_t>(in.gcount()) == input.size;
}

}  // namespace

int main(int argc, char** argv) {
  for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(signal, reportCrash);
  std::set_terminate(reportTermination);
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);

  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] != '-') paths.emplace_back(argv[i]);
  }
  if (paths.empty()) {
    std::fprintf(stderr, "usage: %s [-flag=value ...] CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> inputs;
  if (!collectInputs(paths, inputs)) return 1;
  if (inputs.empty()) {
    std::fprintf(stderr, "fuzz replay: no inputs under the given paths (an empty corpus is not a pass)\n");
    return 1;
  }

  std::size_t totalBytes = 0;
  for (const auto& path : inputs) {
    std::snprintf(currentInput, sizeof currentInput, "%s", path.c_str());
    Input input;
    if (!readInput(path, input)) {
      std::fprintf(stderr, "fuzz replay: cannot read %s\n", path.c_str());
      return 1;
    }
    totalBytes += input.size;
    LLVMFuzzerTestOneInput(input.bytes.get(), input.size);
  }
  std::printf("fuzz replay: %zu inputs (%zu bytes) replayed without a finding\n", inputs.size(), totalBytes);
  return 0;
}
