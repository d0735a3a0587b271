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
  if (!args.empty()) {
    static const std::pair<const char*, Mode> kSubcommands[] = {
        {"create", Mode::Create}, {"list", Mode::List}, {"remove", Mode::Remove}};
    for (const auto& [word, mode] : kSubcommands) {
      if (args[0] != word) continue;
      options.mode = mode;
      options.commandArgs.assign(args.begin() + 1, args.end());
      return options;
    }
  }
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
  return R"(Usage: qaic-util [-q] [-d <id>]... [-j | -t <seconds> [--count <n>]]
       qaic-util --qpc <dir>
       qaic-util create [-d <id>] (--resources <file.json> | --qpc <dir> [--activations <n>] |
                        --nsp <n> [--mcid <n>] [--sem <n>] [--vc <n>] [--ddr-mb <n>])
                        [--label <text>] [-- <command> [<args>...]]
       qaic-util list [-j]
       qaic-util remove <partition-id>

Devices are found under $QAIC_ROOT/dev/accel and $QAIC_ROOT/sys/class/accel (QAIC_ROOT unset:
the real /dev and /sys), so the same commands work on a card and on qaic-emu. A partition is a
derived device (id >= 100) carved from a device by qaicd; it shows up beside the devices.

Device status:
  -q             print every device's and partition's status, resources and versions (QID 0,
                 Status:Ready, ...); a partition's block adds Parent QID, Owner UID, Owner GID,
                 Mode, Holder PID, Label, and Holder (its holding process) when qaicd runs
  -d <id>        only this device or partition; repeat for several (implies -q)
  -j             print the status as JSON instead: {"devices": [...], "partitions": [...]}
  -t <seconds>   a table (NSP Used / Total, NW Loaded / Active, DRAM Used / Total, Partition of)
                 redrawn every <seconds> until interrupted
  --count <n>    with -t: stop after <n> tables
  --qpc <dir>    print the program container <dir>/programqpc.bin: its programs, every io
                 buffer (index, name, direction, type, dims, flags, device format), the allowed
                 shapes and the constants
  -h, --help     this text

Partitions (through qaicd, socket $QAICD_SOCKET or /run/qaic/qaicd.sock):
  create         ask qaicd for a partition and hold it. Its size comes from exactly one of:
                   --resources <file>  JSON object with numNsp, numMcid, numSem, numVc, ddrSize
                                       (bytes); l2Region is accepted and ignored
                   --qpc <dir>         what --activations <n> (default 1) activations of the
                                       container's first program need
                   --nsp <n>           explicit counts; --vc defaults to 1, --sem to 32 per VC,
                                       --mcid to 0, --ddr-mb to 256
                 -d <id> picks the device (default: the first with room); --label names it.
                 Prints "Partition <id> created on QID <parent>", its node and resources, then
                 holds it until SIGINT/SIGTERM, or, with "-- <command>", runs the command with
                 QAIC_PARTITION=<id> in its environment and releases the partition when it
                 exits. The partition also ends if qaic-util dies.
  list           the partitions: id, parent QID, resources, owner, holder, label (-j: JSON);
                 from qaicd, or from the sys tree when qaicd is not running
  remove <id>    end a partition through qaicd (root, or the process holding it)

Exit status: 0 on success; 1 a device is missing or unreadable, qaicd is not running, or it
refused (the message names the short resource); 2 bad usage, a bad resources file or a bad
container (the loader's message is printed). create with a command exits with the command's
status (128 + signal when it was killed, 127 when it could not be started).
)";
}

}  // namespace qaic::util
