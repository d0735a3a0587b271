// SPDX-License-Identifier: Apache-2.0
// qaic-util: inspects devices, partitions and program containers; leases partitions. See --help.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "CreateCommand.hpp"
#include "ListCommand.hpp"
#include "QaicVersion.hpp"
#include "QpcCommand.hpp"
#include "QueryCommand.hpp"
#include "RemoveCommand.hpp"
#include "UtilOptions.hpp"

int main(int argc, char** argv) {
  using namespace qaic::util;
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    const UtilOptions options = parseUtilOptions(args);
    switch (options.mode) {
      case Mode::Help: std::cout << utilHelpText(); return 0;
      case Mode::Version: qaic::printVersion("qaic-util"); return 0;
      case Mode::Qpc: return runQpcCommand(options.qpcDir, std::cout, std::cerr);
      case Mode::Query: {
        QueryRequest request;
        request.devices = options.devices;
        request.json = options.json;
        request.jsonFile = options.jsonFile;
        request.refreshSeconds = options.refreshSeconds;
        request.refreshCount = options.refreshCount;
        for (const auto& [field, condition] : options.filters)
          request.filters.push_back({field, condition.substr(2), condition.rfind("==", 0) == 0});
        return runQueryCommand(request, std::cout, std::cerr);
      }
      case Mode::Create: return runCreateCommand(options.commandArgs, std::cout, std::cerr);
      case Mode::List: return runListCommand(options.commandArgs, std::cout, std::cerr);
      case Mode::Remove: return runRemoveCommand(options.commandArgs, std::cout, std::cerr);
    }
  } catch (const UsageError& e) {
    std::cerr << "qaic-util: error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "qaic-util: error: internal error: " << e.what() << '\n';
    return 1;
  }
  return 1;
}
