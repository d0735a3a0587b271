// qaic-util -q / -d / -j / -t: device status as the vendor tool prints it.
#pragma once

#include <iosfwd>
#include <optional>
#include <vector>

namespace qaic::util {

struct QueryRequest {
  std::vector<unsigned> devices;       // empty: every device under $QAIC_ROOT
  bool json = false;                   // -j
  std::optional<unsigned> refreshSeconds;  // -t N: a table redrawn every N seconds
  std::optional<unsigned> refreshCount;    // --count N: stop after N tables (default: until ^C)
};

// Exit status: 0; 1 when a requested device is missing or unreadable (the message names it).
int runQueryCommand(const QueryRequest& request, std::ostream& out, std::ostream& err);

}  // namespace qaic::util
