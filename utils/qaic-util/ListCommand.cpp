// SPDX-License-Identifier: Apache-2.0
#include "ListCommand.hpp"

#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <vector>

#include <qaic/Util.hpp>

#include "QaicdAccess.hpp"
#include "UtilOptions.hpp"
#include "driver/DeviceProtocol.hpp"
#include "driver/DeviceRoot.hpp"

namespace qaic::util {
namespace {

struct Row {
  unsigned id = 0, parent = 0;
  uint64_t nsp = 0, mcid = 0, sem = 0, vc = 0;
  std::string ddr;  // "256 MB", or exact bytes from qaicd when not whole MB
  uint64_t ddrMb = 0;
  // What the partition's activations left free of it, live: "192 MB" ("-" when its node did not
  // answer).
  std::string ddrFree = "-";
  std::optional<uint64_t> ddrFreeMb;
  uint64_t ownerUid = 0;
  int64_t holderPid = 0;
  std::string holder;
  std::string label;
};

std::string ddrText(uint64_t bytes) {
  constexpr uint64_t kMiB = 1ull << 20;
  return bytes % kMiB == 0 ? std::to_string(bytes / kMiB) + " MB" : std::to_string(bytes) + " B";
}

std::string holderOf(int64_t pid, bool isStatic) {
  if (isStatic || pid == 0) return "static";
  const std::string name = processName(pid);
  return std::to_string(pid) + (name.empty() ? "" : " (" + name + ")");
}

// `usage`: the devices answer's partition_usage of every device (the live free figures).
std::vector<Row> rowsFromQaicd(const std::vector<qaicd::PartitionInfo>& partitions,
                               const std::vector<qaicd::DeviceInfo>& devices) {
  std::map<uint32_t, uint64_t> freeBytes;
  for (const auto& d : devices)
    for (const auto& u : d.partitionUsage) freeBytes[u.id] = u.free.ddrSize;
  std::vector<Row> rows;
  for (const auto& p : partitions) {
    const auto& r = p.resources;
    Row row{p.id,
            p.device,
            r.numNsp,
            r.numMcid,
            r.numSem,
            r.numVc,
            ddrText(r.ddrSize),
            r.ddrSize >> 20,
            "-",
            std::nullopt,
            p.ownerUid,
            p.holderPid,
            holderOf(p.holderPid, p.isStatic),
            p.label};
    if (auto it = freeBytes.find(p.id); it != freeBytes.end()) {
      row.ddrFree = ddrText(it->second);
      row.ddrFreeMb = it->second >> 20;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<Row> rowsFromSysTree() {
  const auto root = driver::DeviceRoot::fromEnvironment();
  std::vector<Row> rows;
  for (unsigned id : root.listDevices()) {
    if (id < driver::kFirstPartitionId) continue;
    rt::QDevInfo s;
    try {
      s = rt::Util::getDeviceInfo(id);
    } catch (const std::exception&) {
      continue;  // released between listing and reading
    }
    if (!s.partition) continue;
    const auto& p = *s.partition;
    rows.push_back({id, p.parent, s.nspTotal, s.mcidTotal, s.semTotal, s.vcTotal, std::to_string(s.dramTotalMb) + " MB",
                    s.dramTotalMb, std::to_string(s.dramFreeMb) + " MB", s.dramFreeMb, p.ownerUid, p.holderPid,
                    holderOf(p.holderPid, false), p.label});
  }
  return rows;
}

void printTable(const std::vector<Row>& rows, std::ostream& out) {
  out << std::left << std::setw(6) << "ID" << std::setw(6) << "QID" << std::setw(6) << "NSP" << std::setw(6) << "MCID"
      << std::setw(6) << "SEM" << std::setw(5) << "VC" << std::setw(12) << "DDR" << std::setw(12) << "DDR Free"
      << std::setw(8) << "Owner" << std::setw(26) << "Holder"
      << "Label\n";
  for (const Row& r : rows)
    out << std::setw(6) << r.id << std::setw(6) << r.parent << std::setw(6) << r.nsp << std::setw(6) << r.mcid
        << std::setw(6) << r.sem << std::setw(5) << r.vc << std::setw(12) << r.ddr << std::setw(12) << r.ddrFree
        << std::setw(8) << r.ownerUid << std::setw(26) << r.holder << r.label << "\n";
}

nlohmann::json toJson(const std::vector<Row>& rows, const std::string& source) {
  nlohmann::json list = nlohmann::json::array();
  for (const Row& r : rows)
    list.push_back({{"id", r.id},
                    {"parent", r.parent},
                    {"numNsp", r.nsp},
                    {"numMcid", r.mcid},
                    {"numSem", r.sem},
                    {"numVc", r.vc},
                    {"ddr", r.ddr},
                    {"ddr_mb", r.ddrMb},
                    {"ddr_free", r.ddrFree},
                    {"ddr_free_mb", r.ddrFreeMb ? nlohmann::json(*r.ddrFreeMb) : nlohmann::json(nullptr)},
                    {"owner_uid", r.ownerUid},
                    {"holder_pid", r.holderPid},
                    {"holder", r.holder},
                    {"label", r.label}});
  return {{"source", source}, {"partitions", list}};
}

}  // namespace

int runListCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  bool json = false;
  for (const auto& a : args) {
    if (a == "-j")
      json = true;
    else
      throw UsageError("list: unknown option '" + a + "' (see --help)");
  }
  std::vector<Row> rows;
  std::string source;
  auto connection = connectQaicd(std::chrono::seconds(2));
  if (connection.client) {
    auto listed = connection.client->list();
    if (!listed) {
      err << "qaic-util: error: list: " << listed.message() << "\n";
      return 1;
    }
    // The free figures are a second request; without them the column says "-".
    auto devices = connection.client->devices();
    rows = rowsFromQaicd(*listed, devices ? *devices : std::vector<qaicd::DeviceInfo>{});
    source = "qaicd";
  } else {
    err << "qaic-util: note: " << connection.error << "; partitions read from the sys tree\n";
    rows = rowsFromSysTree();
    source = "sysfs";
  }
  if (json)
    out << toJson(rows, source).dump(2) << "\n";
  else
    printTable(rows, out);
  return 0;
}

}  // namespace qaic::util
