// SPDX-License-Identifier: Apache-2.0
// lightnet: compile (for the cpu target: validate, infer shapes, write the model) and run a
// LightNet JSON IR network on the host kernels.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "DataFile.hpp"
#include "Options.hpp"
#include "QaicVersion.hpp"
#include "ir/Graph.hpp"
#include "ir/Weights.hpp"
#include "kernels/HostProgram.hpp"

namespace qaic::lightnet {
namespace {

class Failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Reporter {
  bool warnings = true;
  void warn(const std::string& message) const {
    if (warnings) std::cerr << "warning: " << message << '\n';
  }
};

std::string readSource(const std::string& source) {
  std::ostringstream text;
  if (source == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(source, std::ios::binary);
  if (!in) throw Failure("cannot open '" + source + "'");
  text << in.rdbuf();
  return text.str();
}

void writeModel(const ir::Graph& graph, const std::string& outfile) {
  if (outfile == "!") return;
  const std::string json = ir::toJson(graph, true) + "\n";
  if (outfile == "-") {
    std::cout << json;
    return;
  }
  std::ofstream out(outfile, std::ios::binary | std::ios::trunc);
  if (!out || !(out << json) || !out.flush()) throw Failure("cannot write '" + outfile + "'");
}

void warnUnread(const ir::Graph& graph, const Reporter& reporter) {
  std::set<std::string> read;
  for (const ir::Op& op : graph.ops)
    for (const auto& in : op.inputs) read.insert(in.name);
  for (const auto& io : graph.io) read.insert(io.tensor);
  for (const ir::Op& op : graph.ops)
    for (const auto& out : op.outputs)
      if (!read.count(out.name)) reporter.warn("op '" + op.name + "': tensor '" + out.name + "' is never read");
}

// Data-file tensors usable by the run: `create` ops with from_file=true and io inputs.
std::map<std::string, ir::WeightTensor> bindDataFile(const ir::Graph& graph, const std::vector<DataTensor>& data,
                                                     const std::string& file, const Reporter& reporter) {
  std::set<std::string> wanted;
  for (const ir::Op& op : graph.ops) {
    if (op.optype == "create" && op.boolean("from_file")) wanted.insert(op.outputs.at(0).name);
  }
  for (const auto& io : graph.io) {
    if (io.direction == ir::Direction::In) wanted.insert(io.tensor);
  }
  std::map<std::string, ir::WeightTensor> bound;
  for (const DataTensor& d : data) {
    auto info = graph.tensors.find(d.name);
    if (!wanted.count(d.name) || info == graph.tensors.end()) {
      reporter.warn(file + ": unknown tensor '" + d.name + "'; skipped");
      continue;
    }
    if (info->second.dtype != d.dtype) {
      throw Failure(file + ": tensor '" + d.name + "' is " + std::string(ir::dtypeName(d.dtype)) +
                    ", the network declares " + std::string(ir::dtypeName(info->second.dtype)));
    }
    if (ir::elementCount(info->second.dims) != d.length) {
      throw Failure(file + ": tensor '" + d.name + "' has " + std::to_string(d.length) +
                    " elements, the network needs " + std::to_string(ir::elementCount(info->second.dims)));
    }
    bound[d.name] = ir::WeightTensor{d.name, d.dtype, info->second.dims, std::span<const std::byte>(d.data)};
  }
  return bound;
}

std::map<std::string, std::vector<std::byte>> readRawInputs(
    const ir::Graph& graph, const std::vector<std::pair<std::string, std::string>>& requested) {
  std::map<std::string, std::vector<std::byte>> inputs;
  for (const auto& [buffer, path] : requested) {
    const ir::IoBuffer* io = nullptr;
    for (const auto& candidate : graph.io)
      if (candidate.bufferName == buffer && candidate.direction == ir::Direction::In) io = &candidate;
    if (!io) throw Failure("--input: the network has no input buffer '" + buffer + "'");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Failure("--input: cannot open '" + path + "'");
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t expected = static_cast<std::size_t>(ir::elementCount(io->dims)) * ir::dtypeSize(io->dtype);
    if (bytes.size() != expected)
      throw Failure("--input: '" + path + "' has " + std::to_string(bytes.size()) + " bytes, buffer '" + buffer +
                    "' takes " + std::to_string(expected));
    auto& stored = inputs[buffer];
    stored.resize(bytes.size());
    std::memcpy(stored.data(), bytes.data(), bytes.size());
  }
  return inputs;
}

void writeRawOutputs(const std::string& dir, const std::vector<const ir::IoBuffer*>& buffers,
                     const std::vector<kernels::TensorView>& outputs) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Failure("--output-dir: cannot create '" + dir + "': " + ec.message());
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const std::string& name = buffers[i]->bufferName;
    if (name.empty() || name.front() == '.' || name.find('/') != std::string::npos)
      throw Failure("--output-dir: buffer name '" + name + "' cannot be a file name");
    const std::string path = dir + "/" + name + ".raw";
    const std::size_t bytes = static_cast<std::size_t>(ir::elementCount(outputs[i].dims)) *
                              ir::dtypeSize(outputs[i].dtype);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out || !out.write(static_cast<const char*>(outputs[i].data), static_cast<std::streamsize>(bytes)) ||
        !out.flush())
      throw Failure("--output-dir: cannot write '" + path + "'");
  }
}

int run(const Options& opts) {
  Reporter reporter{opts.warnings};
  if (opts.target != "cpu") throw Failure("unsupported target '" + opts.target + "' (available: cpu)");
  if (opts.compileOnly && opts.runOnly) throw Failure("-c/--compile and -r/--run exclude each other");
  const std::string sourceName = opts.source == "-" ? "<stdin>" : opts.source;
  ir::Graph graph = ir::parseGraph(readSource(opts.source), sourceName);
  ir::inferShapes(graph);
  if (opts.debug) {
    for (const auto& [name, info] : graph.tensors) {
      std::cerr << "debug: tensor '" << name << "' " << ir::dtypeName(info.dtype) << " [";
      for (std::size_t i = 0; i < info.dims.size(); ++i) std::cerr << (i ? "," : "") << info.dims[i];
      std::cerr << "]\n";
    }
  }
  if (opts.interWarnings) warnUnread(graph, reporter);
  if (!opts.runOnly) writeModel(graph, opts.outfile);
  if (opts.compileOnly) return 0;

  std::vector<DataTensor> data;
  std::map<std::string, ir::WeightTensor> dataTensors;
  std::unique_ptr<ir::WeightsFile> weights;
  if (!graph.weightsFile.empty()) {
    weights = ir::WeightsFile::open(ir::weightsPath(graph));
    ir::bindWeights(graph, *weights);
  }
  if (!opts.datafile.empty()) {
    std::ifstream in(opts.datafile);
    if (!in) throw Failure("cannot open data file '" + opts.datafile + "'");
    data = parseDataFile(in, opts.datafile);
    dataTensors = bindDataFile(graph, data, opts.datafile, reporter);
  }
  // The data file speaks for the tensors it names; the weights file for the rest.
  kernels::ConstantLookup lookup = [&](std::string_view name) -> const ir::WeightTensor* {
    auto it = dataTensors.find(std::string(name));
    if (it != dataTensors.end()) return &it->second;
    return weights ? weights->find(name) : nullptr;
  };

  std::map<std::string, std::vector<std::byte>> rawInputs = readRawInputs(graph, opts.rawInputs);
  std::vector<kernels::TensorView> inputs, outputs;
  std::vector<std::vector<std::byte>> outputStorage;
  std::vector<const ir::IoBuffer*> outputBuffers;
  for (const auto& io : graph.io) {
    if (io.direction == ir::Direction::In) {
      if (auto raw = rawInputs.find(io.bufferName); raw != rawInputs.end()) {
        inputs.push_back({io.dtype, io.dims, raw->second.data(), raw->second.size()});
        continue;
      }
      auto it = dataTensors.find(io.tensor);
      if (it == dataTensors.end()) {
        throw Failure("no data for input '" + io.bufferName + "' (tensor '" + io.tensor +
                      "'): give it with -f or --input");
      }
      inputs.push_back({io.dtype, io.dims, const_cast<std::byte*>(it->second.data.data()), it->second.data.size()});
    } else {
      outputStorage.emplace_back(static_cast<std::size_t>(ir::elementCount(io.dims)) * ir::dtypeSize(io.dtype));
      outputs.push_back({io.dtype, io.dims, outputStorage.back().data(), outputStorage.back().size()});
      outputBuffers.push_back(&io);
    }
  }
  kernels::BuildOptions build;
  build.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto program = kernels::HostProgram::build(graph, lookup, build);
  const auto start = std::chrono::steady_clock::now();
  program->run(inputs, outputs);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!opts.outputDir.empty()) writeRawOutputs(opts.outputDir, outputBuffers, outputs);
  std::cout.flush();
  const bool terminal = isatty(STDOUT_FILENO) == 1;
  std::printf("%sinfo: %srun time: %fs\n", terminal ? "\033[1m" : "", terminal ? "\033[0m" : "", seconds);
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace qaic::lightnet

int main(int argc, char** argv) {
  using namespace qaic::lightnet;
  std::ios::sync_with_stdio(true);
  try {
    const Options opts = parseOptions(std::vector<std::string>(argv + 1, argv + argc));
    if (opts.help) {
      std::cout << usageText();
      return 0;
    }
    if (opts.version) {
      qaic::printVersion("lightnet");
      return 0;
    }
    if (opts.source.empty()) {
      std::cerr << "error: no input file\n";
      return 1;
    }
    return run(opts);
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << "\nTry 'lightnet --help'.\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
  }
  return 1;
}
