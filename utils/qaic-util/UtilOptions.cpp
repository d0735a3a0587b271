// SPDX-License-Identifier: Apache-2.0
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
    if (arg == "--version") {
      options.mode = Mode::Version;
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
    if (arg == "-q" || arg == "--query") {
      if (!(modeSet && options.mode == Mode::Query)) setMode(Mode::Query, arg);
    } else if (arg == "-d" || arg == "--device" || arg == "--aic-device-id") {
      options.devices.push_back(parseCount(arg, value(), 0));
    } else if (arg == "-j" || arg == "--json") {
      options.json = true;
      // -j FILE writes the JSON to FILE; -j alone (or -j -) prints it.
      if (i + 1 < args.size() && (args[i + 1] == "-" || args[i + 1].rfind('-', 0) != 0)) {
        options.jsonFile = args[++i] == "-" ? std::string() : args[i];
      }
    } else if (arg.rfind("--json=", 0) == 0) {
      options.json = true;
      options.jsonFile = arg.substr(7) == "-" ? std::string() : arg.substr(7);
    } else if (arg == "-f" || arg == "--filter") {
      const std::string& filter = value();
      std::size_t op = filter.find("==");
      if (op == std::string::npos) op = filter.find("!=");
      if (op == std::string::npos || op == 0)
        throw UsageError("option " + arg + ": expected <field>==<value> or <field>!=<value>, got '" + filter + "'");
      auto trim = [](std::string text) {
        const auto first = text.find_first_not_of(" \t");
        const auto last = text.find_last_not_of(" \t");
        return first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
      };
      options.filters.emplace_back(trim(filter.substr(0, op)), filter.substr(op, 2) + trim(filter.substr(op + 2)));
    } else if (arg == "-t" || arg == "--table") {
      options.refreshSeconds = parseCount(arg, value(), 1);
    } else if (arg == "--count") {
      options.refreshCount = parseCount(arg, value(), 1);
    } else {
      throw UsageError("unknown option '" + arg + "' (see --help)");
    }
  }
  const bool queryOptions = !options.devices.empty() || options.json || options.refreshSeconds ||
                            options.refreshCount || !options.filters.empty();
  if (queryOptions && modeSet && options.mode != Mode::Query)
    throw UsageError("-d, -f, -j, -t and --count go with device queries, not --qpc");
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
  return R"(Usage: qaic-util [-q] [-d <id>]... [-f <field>==<value>]... [-j [<file>] | -t <seconds> [--count <n>]]
  or:  qaic-util --qpc <dir>
  or:  qaic-util create [-d <id>[,<id>...] | --device-count <n>] (--resources <file.json> | --qpc <dir> [--activations <n>] | --nsp <n> [--mcid <n>] [--sem <n>] [--vc <n>] [--ddr-mb <n>]) [--label <text>] [-- <command> [<args>...]]
  or:  qaic-util list [-j]
  or:  qaic-util remove <partition-id>

Devices are found under $QAIC_ROOT/dev/accel and $QAIC_ROOT/sys/class/accel (QAIC_ROOT unset:
the real /dev and /sys), so the same commands work on a card and on qaic-emu. A partition is a
derived device (id >= 100) carved from a device by qaicd; it shows up beside the devices.

Device status:
  -q, --query            print every device's and partition's status, resources, versions and
                         telemetry, one "Label:value" line each: QID 0, Status:Ready, HW Serial,
                         FW QC_IMAGE_VERSION, FW OEM_IMAGE_VERSION, FW IMAGE_VARIANT, Nsp Free,
                         DDR Frequency(Mhz), Device Capabilities, P2P Peers (the QIDs of the
                         cards it reaches peer to peer, or none; on qaic-emu), Max/Current Link
                         Speed and Width, Board serial, SoC temperature(degree C), Board
                         power(Watts), TDP Cap(Watts), ...; a partition's block adds Parent
                         QID, Owner UID, Owner GID, Mode, Holder PID, Label, and Holder when
                         qaicd runs
  -d, --device <id>      only this device or partition; repeat for several (implies -q); also
                         --aic-device-id. A missing one prints "Failed to find requested device
                         ID <id>"
  -f, --filter <field>==<value>
                         only the devices whose -q line <field> (any case) has <value>; != for
                         the others; a bare number matches a numeric line whatever its unit
                         ("Dram Free==16384"); repeat for several, all must hold
  -j, --json [<file>]    the status as JSON instead: {"devices": [...], "partitions": [...]};
                         to <file> (written whole, or not at all) when one follows, else stdout
  -t, --table <seconds>  a table (NSP Used / Total, NW Loaded / Active, DRAM Used / Total,
                         Partition of) redrawn every <seconds> until interrupted
  --count <n>            with -t: stop after <n> tables
  --qpc <dir>            print the program container <dir>/programqpc.bin: its programs, every io
                         buffer (index, name, direction, type, dims, flags, device format), the
                         allowed shapes and the constants; for a program that spans several
                         devices, each device's part: its device, NSPs, weights and retained
                         bytes, and the bytes it sends and receives between cards per inference
  -h, --help             this text
  --version              print the version and exit

Partitions (through qaicd, socket $QAICD_SOCKET or /run/qaic/qaicd.sock):
  create                 ask qaicd for a partition and hold it. Its size comes from exactly one
                         of --resources <file> (JSON object with numNsp, numMcid, numSem, numVc,
                         ddrSize in bytes; l2Region is accepted and ignored), --qpc <dir> (what
                         --activations <n>, default 1, activations of the container's first
                         program need) or --nsp <n> (explicit counts; --vc defaults to 1, --sem
                         to 32 per VC, --mcid to 0, --ddr-mb to 256). -d <id> picks the device
                         (default: the first with room); --label names it. A group, one such
                         partition on each of several devices, made together or not at all:
                         -d <id>,<id>,... on exactly those devices, --device-count <n> on the
                         first n with room. A multi-device program's --qpc makes a group of one
                         partition per part (-d lists that many devices, else the first with
                         room), each sized for the largest part. Prints "Partition <id> created
                         on QID <parent>", its node and resources (once per partition), then
                         holds it until SIGINT/SIGTERM, or, with "-- <command>", runs the
                         command with QAIC_PARTITION=<id> (the first) and
                         QAIC_PARTITIONS=<id>,<id>,... in its environment and releases the
                         partitions when it exits. They also end if qaic-util dies.
  list                   the partitions: id, parent QID, resources, the device memory their
                         activations left free, owner, holder, label (-j: JSON); from qaicd, or
                         from the sys tree when qaicd is not running
  remove <id>            end a partition through qaicd (root, or the process holding it)

Exit status: 0 on success; 1 a device is missing or unreadable, qaicd is not running, or it
refused (the message names the short resource); 2 bad usage, a filter on an unknown field, a bad
resources file or a bad container (the loader's message is printed). create with a command exits
with the command's status (128 + signal when it was killed, 127 when it could not be started).

Environment:
  QAIC_ROOT              where devices are found (unset: the real /dev and /sys)
  QAICD_SOCKET           qaicd's socket (unset: /run/qaic/qaicd.sock)
)";
}

}  // namespace qaic::util
