// SPDX-License-Identifier: Apache-2.0
#include "Options.hpp"

#include <array>
#include <optional>
#include <string_view>

namespace qaic::lightnet {
namespace {

struct LongOption {
  std::string_view name;
  char shortName;
  bool takesValue;
};

constexpr std::array kLongOptions = {
    LongOption{"help", 'h', false},
    LongOption{"version", 'v', false},
    LongOption{"outfile", 'o', true},
    LongOption{"target", 't', true},
    LongOption{"datafile", 'f', true},
    LongOption{"compile", 'c', false},
    LongOption{"run", 'r', false},
    LongOption{"debug", 'd', false},
    // Extensions without a short form ('\1', '\2' only select the action).
    LongOption{"input", '\1', true},
    LongOption{"output-dir", '\2', true},
};

const LongOption* findLong(std::string_view name) {
  for (const auto& o : kLongOptions) {
    if (o.name == name) return &o;
  }
  return nullptr;
}
const LongOption* findShort(char c) {
  for (const auto& o : kLongOptions) {
    if (o.shortName == c && c > ' ') return &o;
  }
  return nullptr;
}

void apply(Options& opts, char which, const std::string& value) {
  switch (which) {
    case 'h': opts.help = true; break;
    case 'v': opts.version = true; break;
    case 'o': opts.outfile = value; break;
    case 't': opts.target = value; break;
    case 'f': opts.datafile = value; break;
    case 'c': opts.compileOnly = true; break;
    case 'r': opts.runOnly = true; break;
    case 'd': opts.debug = true; break;
    case '\1': {
      const auto eq = value.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == value.size())
        throw UsageError("option '--input' takes BUFFER=FILE, got '" + value + "'");
      opts.rawInputs.emplace_back(value.substr(0, eq), value.substr(eq + 1));
      break;
    }
    case '\2': opts.outputDir = value; break;
    default: break;
  }
}

}  // namespace

Options parseOptions(const std::vector<std::string>& args) {
  Options opts;
  bool haveSource = false;
  auto setSource = [&](const std::string& s) {
    if (haveSource) throw UsageError("more than one input file ('" + opts.source + "' and '" + s + "')");
    opts.source = s;
    haveSource = true;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-" || arg.empty() || arg[0] != '-') {
      setSource(arg);
      continue;
    }
    if (arg == "-Wwarn") {
      opts.warnings = true;
      continue;
    }
    if (arg == "-w" || arg == "-Wno-warn") {
      opts.warnings = false;
      continue;
    }
    if (arg == "-Winter") {
      opts.interWarnings = true;
      continue;
    }
    if (arg == "-Wno-inter") {
      opts.interWarnings = false;
      continue;
    }
    // Long options take one or two dashes: --outfile=x, -outfile=x, --outfile x.
    const std::string_view body = std::string_view(arg).substr(arg.compare(0, 2, "--") == 0 ? 2 : 1);
    const std::size_t eq = body.find('=');
    const LongOption* option = findLong(body.substr(0, eq));
    if (option) {
      std::string value;
      if (option->takesValue) {
        if (eq != std::string_view::npos) {
          value = std::string(body.substr(eq + 1));
        } else if (i + 1 < args.size()) {
          value = args[++i];
        } else {
          throw UsageError("option '" + arg + "' needs a value");
        }
      } else if (eq != std::string_view::npos) {
        throw UsageError("option '--" + std::string(option->name) + "' takes no value");
      }
      apply(opts, option->shortName, value);
      continue;
    }
    if (arg.compare(0, 2, "--") == 0) throw UsageError("unknown option '" + arg + "'");
    // Short options: flags may be grouped (-cd); a value follows attached (-oFILE) or separately.
    for (std::size_t k = 1; k < arg.size(); ++k) {
      const LongOption* s = findShort(arg[k]);
      if (!s) throw UsageError("unknown option '-" + std::string(1, arg[k]) + "'");
      std::string value;
      if (s->takesValue) {
        if (k + 1 < arg.size()) {
          value = arg.substr(k + 1);
        } else if (i + 1 < args.size()) {
          value = args[++i];
        } else {
          throw UsageError("option '-" + std::string(1, arg[k]) + "' needs a value");
        }
        apply(opts, s->shortName, value);
        break;
      }
      apply(opts, s->shortName, value);
    }
  }
  return opts;
}

std::string usageText() {
  return "Usage: lightnet [OPTION...] SOURCE\n"
         "Compile and run a LightNet JSON IR network (SOURCE '-' reads standard input).\n"
         "\n"
         "  -h, --help             print this help and exit\n"
         "  -v, --version          print the version and exit\n"
         "  -o, --outfile=FILE     write the compiled model to FILE (default out.json;\n"
         "                         '-' standard output, '!' none)\n"
         "  -t, --target=TARGET    compile for TARGET (default cpu; only cpu is available)\n"
         "  -f, --datafile=FILE    tensor data for create ops with from_file and for inputs\n"
         "  -c, --compile          compile only\n"
         "  -r, --run              run only (SOURCE is a compiled model)\n"
         "  -d, --debug            print every tensor's dtype and shape to stderr\n"
         "  -Wwarn, -w, -Wno-warn  enable (default) or disable warnings\n"
         "  -Winter, -Wno-inter    warn about tensors that are computed but never read\n"
         "      --input=BUFFER=FILE  raw bytes of io input BUFFER (repeatable; overrides -f)\n"
         "      --output-dir=DIR   write each io output as DIR/<buffer>.raw after the run\n"
         "Long options also take a single dash (-outfile=FILE).\n";
}

}  // namespace qaic::lightnet
