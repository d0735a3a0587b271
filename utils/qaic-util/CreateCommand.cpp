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
  auto created = connection.client->createPartition(options.resources, options.device, options.label);
  if (!created) {
    err << "qaic-util: error: create: " << created.message() << "\n";
    return 1;
  }
  const qaicd::Resources& r = created->resources;
  out << "Partition " << created->id << " created on QID " << created->device << "\n"
      << "\tNode:" << created->node << "\n"
      << "\tResources:numNsp " << r.numNsp << " numMcid " << r.numMcid << " numSem " << r.numSem << " numVc " << r.numVc
      << " ddrSize " << r.ddrSize << "\n";
  out.flush();

  int status = 0;
  if (options.command.empty()) {
    hold.waitForSignal();
  } else {
    std::string error;
    status = hold.run(options.command, {{"QAIC_PARTITION", std::to_string(created->id)}}, error);
    if (!error.empty()) err << "qaic-util: error: create: cannot run " << error << "\n";
  }
  // Closing the connection would release it as well; asking makes it certain before we exit.
  if (auto released = connection.client->release(created->id); !released)
    err << "qaic-util: warning: release of partition " << created->id << ": " << released.message() << "\n";
  else
    out << "Partition " << created->id << " released\n";
  return status;
}

}  // namespace qaic::util
