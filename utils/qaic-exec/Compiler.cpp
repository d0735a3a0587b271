#include "Compiler.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>

#include "CompileError.hpp"
#include "ConstantPacker.hpp"
#include "CustomIo.hpp"
#include "Fp16IoFormats.hpp"
#include "IoLayout.hpp"
#include "ModelLoader.hpp"
#include "RetainedState.hpp"
#include "SpecializationConfig.hpp"
#include "container/QpcWriter.hpp"
#include "ir/OpError.hpp"
#include "ir/OpRegistry.hpp"
#include "kernels/format/DeviceFormat.hpp"

#ifdef QAIC_HAVE_ONNX
#include "onnx/OnnxImporter.hpp"
#endif

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

// Every io buffer's element type must be one the runtime converts to and from the device;
// otherwise the program would compile and fail at its first inference.
void requireExchangeableIo(const ir::Graph& graph) {
  for (const ir::IoBuffer& io : graph.io) {
    if (kernels::isUserType(io.dtype)) continue;
    throw CompileError(graph.sourceName + ": " + (io.direction == ir::Direction::In ? "input" : "output") + " '" +
                       io.bufferName + "' is " + std::string(ir::dtypeName(io.dtype)) +
                       ", which the runtime does not exchange (float, float16, int8, uint8, int16, uint16, int32, "
                       "int64 and bool); cast it to one of them in the model");
  }
}

uint64_t activationBytes(const ir::Graph& graph) {
  uint64_t total = 0;
  for (const auto& [name, info] : graph.tensors) {
    total += static_cast<uint64_t>(ir::elementCount(info.dims)) * ir::dtypeSize(info.dtype);
  }
  return total;
}

bool isOnnx(const std::string& path) { return path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0; }

// One network as loaded for one symbol binding, checked and shape-inferred.
// `customIo`: the -custom-IO-list-file entries, read once for every specialization.
LoadedModel loadChecked(const ExecOptions& options, const std::map<std::string, int64_t>& symbols,
                        const std::vector<CustomIoEntry>& customIo) {
  LoadOptions loadOptions;
  loadOptions.batchSize = options.batchSize;
  loadOptions.onnxSymbols = symbols;
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
  if (!customIo.empty()) applyCustomIo(graph, customIo, options.customIoListFile);
  if (options.convertToFp16) chooseFp16IoFormats(graph, options.fp16IoLayout);
  requireExchangeableIo(graph);
  return model;
}

// Every specialization of -network-specialization-config compiled on its own (one model when
// there is no config). A failure names the entry.
std::vector<LoadedModel> loadVariants(const ExecOptions& options, const std::vector<Specialization>& specializations,
                                      const std::vector<CustomIoEntry>& customIo) {
  std::vector<LoadedModel> variants;
  if (specializations.empty()) {
    variants.push_back(loadChecked(options, options.onnxSymbols, customIo));
    return variants;
  }
  for (std::size_t i = 0; i < specializations.size(); ++i) {
    std::map<std::string, int64_t> symbols = options.onnxSymbols;
    for (const auto& [symbol, value] : specializations[i]) symbols[symbol] = value;
    const std::string label = options.model + ": specialization " + std::to_string(i) + " (" +
                              describeSpecialization(specializations[i]) + "): ";
    try {
      variants.push_back(loadChecked(options, symbols, customIo));
    } catch (const ir::IrError& e) {
      throw CompileError(label + e.what());
#ifdef QAIC_HAVE_ONNX
    } catch (const onnx::ImportError& e) {
      throw CompileError(label + e.what());
#endif
    } catch (const CompileError& e) {
      throw CompileError(label + e.what());
    }
    const ir::Graph& first = variants.front().graph;
    const ir::Graph& graph = variants.back().graph;
    if (graph.io.size() != first.io.size())
      throw CompileError(label + "has " + std::to_string(graph.io.size()) + " io buffers, specialization 0 has " +
                         std::to_string(first.io.size()));
    for (std::size_t b = 0; b < graph.io.size(); ++b) {
      const ir::IoBuffer &io = graph.io[b], &ref = first.io[b];
      if (io.bufferName != ref.bufferName || io.direction != ref.direction || io.dtype != ref.dtype ||
          io.dims.size() != ref.dims.size() || io.deviceFormat.layout != ref.deviceFormat.layout ||
          io.deviceFormat.elementType != ref.deviceFormat.elementType)
        throw CompileError(label + "buffer '" + io.bufferName + "' differs from specialization 0's '" + ref.bufferName +
                           "' in name, direction, dtype, rank or device format");
    }
  }
  return variants;
}

// Retained buffers keep their values in their own type: never converted on the device.
void keepRetainedFlat(ir::Graph& graph, const std::vector<RetainedPair>& pairs) {
  for (const auto& pair : pairs) {
    for (std::size_t i : {pair.input, pair.output})
      graph.io[i].deviceFormat = {ir::DeviceLayout::Flat, graph.io[i].dtype};
  }
}

// Renames tensor `from` to `to` everywhere in `graph` (ops, io, inferred tensors).
void renameTensor(ir::Graph& graph, const std::string& from, const std::string& to) {
  for (ir::Op& op : graph.ops) {
    for (auto* args : {&op.inputs, &op.outputs})
      for (ir::TensorArg& arg : *args)
        if (arg.name == from) arg.name = to;
  }
  for (ir::IoBuffer& io : graph.io)
    if (io.tensor == from) io.tensor = to;
  if (auto node = graph.tensors.extract(from)) {
    node.key() = to;
    graph.tensors.insert(std::move(node));
  }
}

bool sameConstant(const ir::WeightTensor& a, const ir::WeightTensor& b) {
  return a.dtype == b.dtype && a.dims == b.dims && a.data.size() == b.data.size() &&
         std::equal(a.data.begin(), a.data.end(), b.data.begin());
}

std::string programName(const std::string& modelPath) {
  std::string stem = std::filesystem::path(modelPath).stem().string();
  return stem.empty() ? "program" : stem;
}

}  // namespace

CompileSummary compile(const ExecOptions& options) {
  std::vector<Specialization> specializations;
  if (!options.specializationConfig.empty()) {
    if (!isOnnx(options.model))
      throw CompileError(options.model +
                         ": -network-specialization-config binds ONNX symbolic dims; a JSON IR "
                         "declares its combinations in \"allowed_shapes\"");
    specializations = loadSpecializationConfig(options.specializationConfig);
  }
  const std::vector<CustomIoEntry> customIo = options.customIoListFile.empty()
                                                  ? std::vector<CustomIoEntry>{}
                                                  : readCustomIoList(options.customIoListFile);
  std::vector<LoadedModel> variants = loadVariants(options, specializations, customIo);
  const std::size_t ioCount = variants.front().graph.io.size();

  // Retained state: the same pairs, of one shape, in every specialization.
  std::vector<RetainedPair> pairs;
  std::vector<bool> retained(ioCount, false);
  if (options.retainedState) {
    pairs = findRetainedPairs(variants.front().graph);
    for (std::size_t v = 0; v < variants.size(); ++v) {
      ir::Graph& graph = variants[v].graph;
      findRetainedPairs(graph);  // the same checks in this specialization
      for (const auto& pair : pairs) {
        if (graph.io[pair.input].dims != variants.front().graph.io[pair.input].dims)
          throw CompileError(options.model + ": -retained-state: '" + graph.io[pair.input].bufferName + "' is " +
                             ir::formatDims(graph.io[pair.input].dims) + " in specialization " + std::to_string(v) +
                             " but " + ir::formatDims(variants.front().graph.io[pair.input].dims) +
                             " in specialization 0; retained state has one shape");
      }
      keepRetainedFlat(graph, pairs);
    }
    for (const auto& pair : pairs) retained[pair.input] = retained[pair.output] = true;
  }

  // A buffer's full dims are its largest over the specializations; the default combination runs
  // the specialization that has exactly those dims (else the first).
  std::vector<ir::Dims> full;
  for (std::size_t b = 0; b < ioCount; ++b) {
    ir::Dims dims = variants.front().graph.io[b].dims;
    for (const auto& v : variants)
      for (std::size_t d = 0; d < dims.size(); ++d) dims[d] = std::max(dims[d], v.graph.io[b].dims[d]);
    full.push_back(std::move(dims));
  }
  std::size_t main = 0;
  for (std::size_t v = variants.size(); v-- > 0;) {
    bool isFull = true;
    for (std::size_t b = 0; b < ioCount; ++b) isFull = isFull && variants[v].graph.io[b].dims == full[b];
    if (isFull) main = v;
  }
  ir::Graph& graph = variants[main].graph;
  ir::Graph fullGraph = graph;  // only its io is used: the descriptor at full dims
  for (std::size_t b = 0; b < ioCount; ++b) fullGraph.io[b].dims = full[b];

  PackedConstants constants = packConstants(graph, variants[main].weights, options.convertToFp16);
  std::vector<PackedConstants> extraConstants;  // spans into their storage stay valid
  IoLayout layout = layoutIo(fullGraph, retained);
  auto project = [&](const ir::ShapeCombination& byIo) {
    ir::ShapeCombination byBuffer;
    for (std::size_t b = 0; b < ioCount; ++b)
      if (!retained[b]) byBuffer.push_back(byIo[b]);
    return byBuffer;
  };

  container::QpcContents contents;
  for (const auto& combination : graph.allowedShapes) contents.allowedShapes.push_back(project(combination));
  std::vector<std::string> payloads;  // JSON IR: [0] the program's own, then one per specialization payload
  auto payloadOf = [](ir::Graph g) {  // self-contained: constants come from the container
    g.weightsFile.clear();
    return ir::toJson(g);
  };
  payloads.push_back(payloadOf(graph));
  {
    ir::ShapeCombination dims;
    for (const auto& io : graph.io) dims.push_back(io.dims);
    // No specialization has every buffer's largest dims: the program's own is one combination
    // of its own, and the default (full dims) selects none that was compiled.
    if (!specializations.empty() && project(dims) != project(full)) contents.allowedShapes.push_back(project(dims));
  }
  std::vector<uint32_t> combinationOf;  // by payloads[1..]
  uint64_t activations = activationBytes(graph);
  for (std::size_t v = 0; v < variants.size(); ++v) {
    if (v == main) continue;
    ir::Graph& other = variants[v].graph;
    ir::ShapeCombination dims;
    for (const auto& io : other.io) dims.push_back(io.dims);
    ir::ShapeCombination combination = project(dims);
    if (combination == project(full)) continue;  // the default combination already
    for (std::size_t c = 0; c < contents.allowedShapes.size(); ++c) {
      if (contents.allowedShapes[c] == combination)
        throw CompileError(options.model + ": specializations " + std::to_string(v) + " and another give the same " +
                           "buffer dims; each entry must select a distinct shape combination");
    }
    // Its constants join the container; one that another specialization folded differently
    // under the same name gets a name of its own.
    PackedConstants packed = packConstants(other, variants[v].weights, options.convertToFp16);
    for (container::QpcConstant& constant : packed.constants) {
      const container::QpcConstant* existing = nullptr;
      for (const PackedConstants* list : {&constants}) {
        for (const auto& c : list->constants)
          if (c.tensor.name == constant.tensor.name) existing = &c;
      }
      for (const PackedConstants& list : extraConstants) {
        for (const auto& c : list.constants)
          if (c.tensor.name == constant.tensor.name) existing = &c;
      }
      if (existing != nullptr && sameConstant(existing->tensor, constant.tensor)) {
        constant.tensor.name.clear();  // shared
        continue;
      }
      if (existing != nullptr) {
        const std::string renamed = constant.tensor.name + "@specialization" + std::to_string(v);
        renameTensor(other, constant.tensor.name, renamed);
        constant.tensor.name = renamed;
      }
      constants.totalBytes += constant.tensor.data.size();
    }
    extraConstants.push_back(std::move(packed));
    contents.allowedShapes.push_back(std::move(combination));
    payloads.push_back(payloadOf(other));
    combinationOf.push_back(static_cast<uint32_t>(contents.allowedShapes.size()));  // 1-based in allShapeCombinations
    activations = std::max(activations, activationBytes(other));
  }
  contents.constants = constants.constants;
  for (const auto& extra : extraConstants)
    for (const auto& c : extra.constants)
      if (!c.tensor.name.empty()) contents.constants.push_back(c);
  for (std::size_t i = 0; i < contents.constants.size(); ++i) contents.constants[i].index = static_cast<uint32_t>(i);

  uint64_t retainedBytes = 0;
  for (const auto& pair : pairs) {
    contents.retainedState.push_back(retainedEntry(graph, pair));
    retainedBytes += contents.retainedState.back().size;
  }

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
  program.totalRequiredMemory = layout.ioRegionSize + constants.totalBytes + activations + retainedBytes;
  for (const auto& buffer : layout.buffers) program.bufferIndices.push_back(buffer.index);
  program.payload = std::as_bytes(std::span(payloads[0].data(), payloads[0].size()));
  for (std::size_t p = 1; p < payloads.size(); ++p) {
    contents.specializationPayloads.push_back(
        {0, combinationOf[p - 1], std::as_bytes(std::span(payloads[p].data(), payloads[p].size()))});
  }

  contents.buffers = std::move(layout.buffers);
  contents.programs.push_back(program);

  std::error_code ec;
  std::filesystem::create_directories(options.binaryDir, ec);
  if (ec) throw CompileError(options.binaryDir + ": cannot create the output directory: " + ec.message());
  CompileSummary summary;
  summary.outputPath = (std::filesystem::path(options.binaryDir) / "programqpc.bin").string();
  container::writeQpcFile(summary.outputPath, contents);

  for (const auto& buffer : contents.buffers) {
    (buffer.io.direction == ir::Direction::In ? summary.inputs : summary.outputs) += 1;
  }
  summary.retained = contents.retainedState.size();
  summary.specializations = specializations.size();
  summary.constants = contents.constants.size();
  summary.constantBytes = constants.totalBytes;
  summary.ioRegionSize = program.ioRegionSize;
  summary.fileBytes = std::filesystem::file_size(summary.outputPath, ec);
  return summary;
}

}  // namespace qaic::compiler
