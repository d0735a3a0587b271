// qaic-emu's diagnostics on stderr: errors always, details with -v.
#pragma once

#include <string_view>

namespace qaic::emu {

void setVerbose(bool verbose);
bool verbose();
void logError(std::string_view message);
void logInfo(std::string_view message);  // only with -v

}  // namespace qaic::emu
