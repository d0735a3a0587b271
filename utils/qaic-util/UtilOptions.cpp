#include "UtilOptions.hpp"

#include <charconv>

namespace qaic::util {
namespace {

unsigned parseCount(const std::string& option, const std::string& text, unsigned minimum) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < minimum)
    throw UsageError("option " + option + ": '" + text + "' is not a whole number >= " + std::to_string(minimum));
  return value;
}

}  // namespace

UtilOptions parseUtilOptions(std::span<const std::string> args) {
  UtilOptions options;
  bool modeSet = false;
  auto setMode = [&](Mode mode, const std::string& arg) {
    if (modeSet) throw UsageError("option '" + arg + "' conflicts with an earlier mode option");
    options.mode = mode;
    modeSet = true;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h" || arg == "--help") {
      options.mode = Mode::Help;
      return options;
    }
    if (arg == "--qpc" || arg.rfind("--qpc=", 0) == 0) {
      setMode(Mode::Qpc, arg);
      if (arg == "--qpc") {
        if (i + 1 >= args.size()) throw UsageError("option --qpc needs a directory");
        options.qpcDir = args[++i];
      } else {
        options.qpcDir = arg.substr(6);
      }
      if (options.qpcDir.empty()) throw UsageError("option --qpc needs a directory");
      continue;
    }
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw UsageError("option " + arg + " needs a value");
      return args[++i];
    };
    if (arg == "-q") {
      if (!(modeSet && options.mode == Mode::Query)) setMode(Mode::Query, arg);
    } else if (arg == "-d") {
      options.devices.push_back(parseCount(arg, value(), 0));
    } else if (arg == "-j") {
      options.json = true;
    } else if (arg == "-t") {
      options.refreshSeconds = parseCount(arg, value(), 1);
    } else if (arg == "--count") {
      options.refreshCount = parseCount(arg, value(), 1);
    } else {
      throw UsageError("unknown option '" + arg + "' (see --help)");
    }
  }
  const bool queryOptions = !options.devices.empty() || options.json || options.refreshSeconds || options.refreshCount;
  if (queryOptions && modeSet && options.mode != Mode::Query)
    throw UsageError("-d, -j, -t and --count go with device queries, not --qpc");
  if (queryOptions) {
    options.mode = Mode::Query;
    modeSet = true;
  }
  if (options.json && options.refreshSeconds) throw UsageError("-j and -t cannot be combined");
  if (options.refreshCount && !options.refreshSeconds) throw UsageError("--count needs -t");
  if (!modeSet) throw UsageError("no option given (see --help)");
  return options;
}

std::string utilHelpText() {
  return R"(Usage: qaic-util [options]

Devices are found under $QAIC_ROOT/dev/accel and $QAIC_ROOT/sys/class/accel (QAIC_ROOT unset:
the real /dev and /sys), so the same commands work on a card and on qaic-emu.

  -q             print every device's status, resources and versions (QID 0, Status:Ready, ...)
  -d <id>        only this device; repeat for several (implies -q)
  -j             print the status as JSON instead
  -t <seconds>   a table (NSP Used / Total, NW Loaded / Active, DRAM Used / Total) redrawn every
                 <seconds> until interrupted
  --count <n>    with -t: stop after <n> tables
  --qpc <dir>    print the program container <dir>/programqpc.bin: its programs, every io
                 buffer (index, name, direction, type, dims, flags, device format), the allowed
                 shapes and the constants
  -h, --help     this text

Exit status: 0 on success; 1 a device is missing or unreadable; 2 bad usage or a bad container
(the loader's message is printed).
)";
}

}  // namespace qaic::util
