// SPDX-License-Identifier: Apache-2.0
// `fuzz_<target> --write-seeds=DIR`: the targets whose inputs are structured generate their seed
// corpus (named inputs) instead of fuzzing.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace qaic::fuzz {

using Seeds = std::vector<std::pair<std::string, std::vector<uint8_t>>>;

// Called from LLVMFuzzerInitialize: with --write-seeds=DIR among the arguments, writes each seed
// to DIR/<name> and exits (1 when one cannot be written); otherwise returns.
template <typename MakeSeeds>
void writeSeedsIfAsked(int argc, char** argv, const char* target, MakeSeeds makeSeeds) {
  const std::string flag = "--write-seeds=";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind(flag, 0) != 0) continue;
    const std::string dir = arg.substr(flag.size());
    for (const auto& [name, bytes] : makeSeeds()) {
      std::ofstream out(dir + "/" + name, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      if (!out) {
        std::fprintf(stderr, "%s: cannot write %s/%s\n", target, dir.c_str(), name.c_str());
        std::exit(1);
      }
    }
    std::exit(0);
  }
}

}  // namespace qaic::fuzz
