#include "Compiler.hpp"

#include <filesystem>
#include <system_error>

#include "CompileError.hpp"
#include "ConstantPacker.hpp"
#include "Fp16IoFormats.hpp"
#include "IoLayout.hpp"
#include "ModelLoader.hpp"
#include "container/QpcWriter.hpp"
#include "ir/OpRegistry.hpp"

namespace qaic::compiler {

namespace {

// Operators the registry marks host-only write to the console or to files: the device has neither.
void rejectHostOnlyOps(const ir::Graph& graph) {
  for (const ir::Op& op : graph.ops) {
    const ir::OpSpec* spec = ir::findOpSpec(op.optype);
    if (spec != nullptr && spec->hostOnly) {
      throw CompileError(graph.sourceName + ": op '" + op.name + "': optype '" + op.optype +
                         "' is host-only and cannot run on the device (remove it or run the IR with lightnet)");
    }
  }
}

void applyBatchSize(ir::Graph& graph, int64_t batch) {
  for (std::size_t i = 0; i < graph.io.size(); ++i) {
    const int64_t original = graph.io[i].dims[0];
    graph.io[i].dims[0] = batch;
    for (auto& combination : graph.allowedShapes) {
      if (!combination[i].empty() && combination[i][0] == original) combination[i][0] = batch;
    }
  }
}

uint64_t activationBytes(const ir::Graph& graph) {
  uint64_t total = 0;
  for (const auto& [name, info] : graph.tensors) {
    total += static_cast<uint64_t>(ir::elementCount(info.dims)) * ir::dtypeSize(info.dtype);
  }
  return total;
}

std::string programName(const std::string& modelPath) {
  std::string stem = std::filesystem::path(modelPath).stem().string();
  return stem.empty() ? "program" : stem;
}

}  // namespace

CompileSummary compile(const ExecOptions& options) {
  LoadOptions loadOptions;
  loadOptions.batchSize = options.batchSize;
  loadOptions.onnxSymbols = options.onnxSymbols;
  LoadedModel model = loadModel(options.model, loadOptions);
  ir::Graph& graph = model.graph;

  rejectHostOnlyOps(graph);
  if (graph.io.empty()) {
    throw CompileError(graph.sourceName +
                       ": the network has no \"io\" section; the device needs its inputs and "
                       "outputs declared");
  }
  if (options.batchSize > 0) applyBatchSize(graph, options.batchSize);
  ir::inferShapes(graph);
  if (options.convertToFp16) chooseFp16IoFormats(graph, options.fp16IoLayout);

  const PackedConstants constants = packConstants(graph, model.weights, options.convertToFp16);
  IoLayout layout = layoutIo(graph);

  // The payload is self-contained: constants come from the container, not a side file.
  ir::Graph payloadGraph = graph;
  payloadGraph.weightsFile.clear();
  const std::string payload = ir::toJson(payloadGraph);

  container::QpcProgram program;
  program.name = programName(options.model);
  program.numCores = options.numCores;
  // What qaic-runner reports as BatchSize (and multiplies Inf/Sec by): -stats-batchsize when the
  // samples per inference are not dim 0's, else -batchsize.
  program.batchSize = options.statsBatchSize > 0 ? options.statsBatchSize
                                                 : static_cast<uint32_t>(options.batchSize > 0 ? options.batchSize : 1);
  program.numSemaphores = 1;
  program.doneSemaphore = 0;
  program.flags = options.convertToFp16 ? container::kProgramFlagFp16Constants : 0;
  program.ioRegionSize = layout.ioRegionSize;
  program.doorbellAddress = kDoorbellAddress;
  program.requestDescriptorOffset = kRequestDescriptorOffset;
  program.responseDescriptorOffset = kResponseDescriptorOffset;
  program.totalRequiredMemory = layout.ioRegionSize + constants.totalBytes + activationBytes(graph);
  for (const auto& buffer : layout.buffers) program.bufferIndices.push_back(buffer.index);
  program.payload = std::as_bytes(std::span(payload.data(), payload.size()));

  container::QpcContents contents;
  contents.buffers = std::move(layout.buffers);
  contents.allowedShapes = graph.allowedShapes;
  contents.programs.push_back(program);
  contents.constants = constants.constants;

  std::error_code ec;
  std::filesystem::create_directories(options.binaryDir, ec);
  if (ec) throw CompileError(options.binaryDir + ": cannot create the output directory: " + ec.message());
  CompileSummary summary;
  summary.outputPath = (std::filesystem::path(options.binaryDir) / "programqpc.bin").string();
  container::writeQpcFile(summary.outputPath, contents);

  for (const auto& buffer : contents.buffers) {
    (buffer.io.direction == ir::Direction::In ? summary.inputs : summary.outputs) += 1;
  }
  summary.constants = contents.constants.size();
  summary.constantBytes = constants.totalBytes;
  summary.ioRegionSize = program.ioRegionSize;
  summary.fileBytes = std::filesystem::file_size(summary.outputPath, ec);
  return summary;
}

}  // namespace qaic::compiler
