// SPDX-License-Identifier: Apache-2.0
#include "CreateCommand.hpp"

#include <ostream>

#include "CreateOptions.hpp"
#include "HeldCommand.hpp"
#include "QaicdAccess.hpp"

namespace qaic::util {

int runCreateCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  const CreateOptions options = parseCreateOptions(args);
  // Signals are taken over before the lease exists, so ^C at any point releases it in order.
  HeldCommand hold;
  auto connection = connectQaicd();
  if (!connection.client) {
    err << "qaic-util: error: create: " << connection.error << "\n";
    return 1;
  }
  std::vector<qaicd::PartitionInfo> partitions;
  if (!options.devices.empty() || options.deviceCount != 0) {
    auto group = connection.client->createGroup(options.resources, options.devices, options.deviceCount, options.label);
    if (!group) {
      err << "qaic-util: error: create: " << group.message() << "\n";
      return 1;
    }
    partitions = std::move(*group);
  } else {
    auto created = connection.client->createPartition(options.resources, options.device, options.label);
    if (!created) {
      err << "qaic-util: error: create: " << created.message() << "\n";
      return 1;
    }
    partitions.push_back(std::move(*created));
  }
  std::string ids;
  for (const auto& p : partitions) {
    const qaicd::Resources& r = p.resources;
    out << "Partition " << p.id << " created on QID " << p.device << "\n"
        << "\tNode:" << p.node << "\n"
        << "\tResources:numNsp " << r.numNsp << " numMcid " << r.numMcid << " numSem " << r.numSem << " numVc "
        << r.numVc << " ddrSize " << r.ddrSize << "\n";
    ids += (ids.empty() ? "" : ",") + std::to_string(p.id);
  }
  out.flush();

  int status = 0;
  if (options.command.empty()) {
    hold.waitForSignal();
  } else {
    std::string error;
    // QAIC_PARTITION is the first (the only one without a group); QAIC_PARTITIONS lists them all.
    status = hold.run(options.command,
                      {{"QAIC_PARTITION", std::to_string(partitions.front().id)}, {"QAIC_PARTITIONS", ids}}, error);
    if (!error.empty()) err << "qaic-util: error: create: cannot run " << error << "\n";
  }
  // Closing the connection would release them as well; asking makes it certain before we exit.
  for (const auto& p : partitions) {
    if (auto released = connection.client->release(p.id); !released)
      err << "qaic-util: warning: release of partition " << p.id << ": " << released.message() << "\n";
    else
      out << "Partition " << p.id << " released\n";
  }
  return status;
}

}  // namespace qaic::util
