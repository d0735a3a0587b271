// SPDX-License-Identifier: Apache-2.0
// qaic-util -q / -d / -j / -t: device status as the vendor tool prints it.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace qaic::util {

// -f "<field>==<value>" (or !=): <field> is a -q label ("Status", "Nsp Free", "Board serial"),
// any case; a number matches a numeric value whatever its unit ("Dram Free==16384").
struct QueryFilter {
  std::string field;
  std::string value;
  bool equal = true;
};

struct QueryRequest {
  std::vector<unsigned> devices;           // empty: every device under $QAIC_ROOT
  bool json = false;                       // -j
  std::string jsonFile;                    // -j FILE: the JSON goes to FILE instead of stdout
  std::vector<QueryFilter> filters;        // -f, all must hold
  std::optional<unsigned> refreshSeconds;  // -t N: a table redrawn every N seconds
  std::optional<unsigned> refreshCount;    // --count N: stop after N tables (default: until ^C)
};

// Exit status: 0; 1 when a requested device is missing or unreadable (the message names it, and
// stdout says "Failed to find requested device ID <id>" as the vendor tool does); 2 for a filter
// on an unknown field.
int runQueryCommand(const QueryRequest& request, std::ostream& out, std::ostream& err);

}  // namespace qaic::util
