// SPDX-License-Identifier: Apache-2.0
#include "RemoveCommand.hpp"

#include <charconv>
#include <ostream>

#include "QaicdAccess.hpp"
#include "UtilOptions.hpp"
#include "driver/DeviceProtocol.hpp"

namespace qaic::util {

int runRemoveCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  if (args.size() != 1) throw UsageError("remove: needs exactly one partition id");
  const std::string& text = args[0];
  uint32_t id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || end != text.data() + text.size() || id < driver::kFirstPartitionId)
    throw UsageError("remove: '" + text +
                     "' is not a partition id (a whole number >= " + std::to_string(driver::kFirstPartitionId) + ")");
  auto connection = connectQaicd();
  if (!connection.client) {
    err << "qaic-util: error: remove: " << connection.error << "; partitions are removed through qaicd\n";
    return 1;
  }
  if (auto released = connection.client->release(id); !released) {
    err << "qaic-util: error: remove: " << released.message() << "\n";
    return 1;
  }
  out << "Partition " << id << " removed\n";
  return 0;
}

}  // namespace qaic::util
