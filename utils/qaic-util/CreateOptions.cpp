// SPDX-License-Identifier: Apache-2.0
#include "CreateOptions.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>

#include "UtilOptions.hpp"
#include "container/QpcFormatError.hpp"
#include "container/QpcImage.hpp"
#include "container/ResourceNeeds.hpp"
#include "driver/DeviceProtocol.hpp"

namespace qaic::util {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
// Defaults of the explicit form: one VC with every semaphore a DBC has, 256 MB of DDR.
constexpr uint32_t kDefaultVc = 1;
constexpr uint64_t kDefaultDdrMb = 256;

uint64_t parseNumber(const std::string& option, const std::string& text, uint64_t maximum) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > maximum)
    throw UsageError("create: option " + option + ": '" + text +
                     "' is not a whole number <= " + std::to_string(maximum));
  return value;
}

// The devices the container's first program spans, and what it needs on each of them.
struct ContainerNeeds {
  std::size_t parts = 1;
  qaicd::Resources perDevice;
};

ContainerNeeds needsOfContainer(const std::string& dir, uint32_t activations) {
  const std::string path = dir + "/programqpc.bin";
  try {
    const auto image = container::QpcImage::open(path);
    if (image->programs().empty()) throw UsageError("create: " + path + ": the container has no program");
    const auto& contents = image->contents();
    return {std::max<std::size_t>(1, contents.deviceParts.size()),
            container::largestPartNeeds(contents, 0, activations)};
  } catch (const container::QpcFormatError& e) {
    throw UsageError(std::string("create: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw UsageError("create: " + path + ": " + e.what());
  } catch (const std::overflow_error& e) {
    throw UsageError("create: " + path + ": " + std::to_string(activations) + " activations: " + e.what());
  }
}

}  // namespace

qaicd::Resources readResourceFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("create: --resources " + path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  const auto doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw UsageError("create: " + path + ": not valid JSON");
  if (!doc.is_object()) throw UsageError("create: " + path + ": not a JSON object");
  for (const auto& [key, value] : doc.items()) {
    (void)value;
    if (!qaicd::isResourceField(key) && key != "l2Region")
      throw UsageError("create: " + path + ": " + key +
                       ": unknown field (numNsp, numMcid, numSem, numVc, ddrSize, l2Region)");
  }
  auto parsed = qaicd::parseResources(doc, path + ": ");
  if (auto* e = std::get_if<qaicd::ProtocolError>(&parsed)) throw UsageError("create: " + e->message);
  return std::get<qaicd::Resources>(parsed);
}

namespace {

// -d ID (one device) or -d ID,ID,... (a group on exactly those devices).
void parseDevices(const std::string& option, const std::string& text, CreateOptions& options) {
  constexpr uint64_t u32 = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> ids;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto id = static_cast<uint32_t>(parseNumber(option, item, u32));
    if (std::find(ids.begin(), ids.end(), id) != ids.end())
      throw UsageError("create: " + option + ": device " + std::to_string(id) + " is listed twice");
    ids.push_back(id);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (ids.size() > qaicd::kMaxGroupDevices)
    throw UsageError("create: " + option + ": at most " + std::to_string(qaicd::kMaxGroupDevices) + " devices");
  if (ids.size() == 1) {
    options.device = ids.front();
    options.devices.clear();
  } else {
    options.device.reset();
    options.devices = std::move(ids);
  }
}

}  // namespace

CreateOptions parseCreateOptions(std::span<const std::string> args) {
  CreateOptions options;
  std::optional<std::string> resourceFile, qpcDir;
  std::optional<uint64_t> activations, nsp, mcid, sem, vc, ddrMb;
  constexpr uint64_t u32 = std::numeric_limits<uint32_t>::max();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      options.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      if (options.command.empty()) throw UsageError("create: '--' needs a command after it");
      break;
    }
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw UsageError("create: option " + arg + " needs a value");
      return args[++i];
    };
    if (arg == "-d")
      parseDevices(arg, value(), options);
    else if (arg == "--device-count")
      options.deviceCount = static_cast<uint32_t>(parseNumber(arg, value(), qaicd::kMaxGroupDevices));
    else if (arg == "--resources")
      resourceFile = value();
    else if (arg == "--qpc")
      qpcDir = value();
    else if (arg == "--activations")
      activations = parseNumber(arg, value(), u32);
    else if (arg == "--nsp")
      nsp = parseNumber(arg, value(), u32);
    else if (arg == "--mcid")
      mcid = parseNumber(arg, value(), u32);
    else if (arg == "--sem")
      sem = parseNumber(arg, value(), u32);
    else if (arg == "--vc")
      vc = parseNumber(arg, value(), u32);
    else if (arg == "--ddr-mb")
      ddrMb = parseNumber(arg, value(), std::numeric_limits<uint64_t>::max() / kMiB);
    else if (arg == "--label")
      options.label = value();
    else
      throw UsageError("create: unknown option '" + arg + "' (see --help)");
  }
  if (!options.devices.empty() && options.deviceCount != 0 && options.deviceCount != options.devices.size())
    throw UsageError("create: --device-count " + std::to_string(options.deviceCount) + " but -d lists " +
                     std::to_string(options.devices.size()) + " devices");
  if (options.device && options.deviceCount > 1)
    throw UsageError("create: -d names one device; list the group's devices (-d 0,1) or drop -d");
  if (options.deviceCount == 1 && options.devices.empty()) options.deviceCount = 0;  // a single partition
  if (options.device && options.deviceCount == 1) options.deviceCount = 0;
  const bool counts = nsp || mcid || sem || vc || ddrMb;
  if ((resourceFile ? 1 : 0) + (qpcDir ? 1 : 0) + (counts ? 1 : 0) != 1)
    throw UsageError("create: give exactly one of --resources FILE, --qpc DIR or --nsp N");
  if (activations && !qpcDir) throw UsageError("create: --activations goes with --qpc");
  if (!qaicd::isValidLabel(options.label))
    throw UsageError("create: --label: printable ASCII, at most " + std::to_string(qaicd::kMaxLabelBytes) + " bytes");

  if (resourceFile) {
    options.resources = readResourceFile(*resourceFile);
  } else if (qpcDir) {
    if (activations && *activations == 0) throw UsageError("create: --activations must be at least 1");
    const auto needs = needsOfContainer(*qpcDir, static_cast<uint32_t>(activations.value_or(1)));
    const std::size_t parts = needs.parts;
    options.resources = needs.perDevice;
    if (parts > 1) {
      // A multi-device program: one partition per part, made together or not at all.
      const std::string what = "create: --qpc " + *qpcDir + ": a program of " + std::to_string(parts) +
                               " device parts needs a group of " + std::to_string(parts) + " partitions";
      if (options.device) throw UsageError(what + "; list its devices (-d 0,1,...) or drop -d");
      if (!options.devices.empty() && options.devices.size() != parts)
        throw UsageError(what + ", not " + std::to_string(options.devices.size()) + " (-d)");
      if (options.devices.empty() && options.deviceCount != 0 && options.deviceCount != parts)
        throw UsageError(what + ", not " + std::to_string(options.deviceCount) + " (--device-count)");
      if (options.devices.empty()) options.deviceCount = static_cast<uint32_t>(parts);
    }
  } else {
    if (!nsp || *nsp == 0) throw UsageError("create: --nsp N (at least 1) is required with explicit counts");
    if (vc && *vc == 0) throw UsageError("create: --vc must be at least 1");
    auto& r = options.resources;
    r.numNsp = static_cast<uint32_t>(*nsp);
    r.numVc = static_cast<uint32_t>(vc.value_or(kDefaultVc));
    r.numMcid = static_cast<uint32_t>(mcid.value_or(0));
    const uint64_t defaultSem = uint64_t{driver::kSemaphoresPerDbc} * r.numVc;
    if (!sem && defaultSem > u32) throw UsageError("create: --vc " + std::to_string(r.numVc) + ": too many VCs");
    r.numSem = static_cast<uint32_t>(sem.value_or(defaultSem));
    r.ddrSize = ddrMb.value_or(kDefaultDdrMb) * kMiB;
  }
  return options;
}

}  // namespace qaic::util
