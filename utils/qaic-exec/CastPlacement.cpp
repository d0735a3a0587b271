// SPDX-License-Identifier: Apache-2.0
#include "CastPlacement.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "GraphEdits.hpp"

namespace qaic::compiler {
namespace {

// Ops that only select or rearrange the elements of their `src` (the output has src's dtype),
// so a widening conversion gives the same values before or after them.
constexpr std::string_view kMovementOps[] = {"reshape",       "flatten", "transpose", "slice",
                                             "strided_slice", "gather",  "gather_nd"};

struct Reader {
  std::size_t op;
  std::size_t input;  // index into the op's inputs
};

std::vector<Reader> readersOf(const ir::Graph& graph, const std::string& tensor) {
  std::vector<Reader> readers;
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    const auto& inputs = graph.ops[i].inputs;
    for (std::size_t k = 0; k < inputs.size(); ++k)
      if (inputs[k].name == tensor) readers.push_back({i, k});
  }
  return readers;
}

bool isIoOutput(const ir::Graph& graph, const std::string& tensor) {
  return std::any_of(graph.io.begin(), graph.io.end(),
                     [&](const ir::IoBuffer& b) { return b.direction == ir::Direction::Out && b.tensor == tensor; });
}

std::optional<std::size_t> writerOf(const ir::Graph& graph, const std::string& tensor) {
  for (std::size_t i = 0; i < graph.ops.size(); ++i)
    for (const auto& out : graph.ops[i].outputs)
      if (out.name == tensor) return i;
  return std::nullopt;
}

std::optional<ir::DType> castTarget(const ir::Op& op) {
  if (op.optype != "cast" || op.inputs.size() != 1 || op.outputs.size() != 1) return std::nullopt;
  const ir::Param* to = op.findParam("dtype");
  if (to == nullptr || !std::holds_alternative<std::string>(to->value)) return std::nullopt;
  return ir::parseDType(std::get<std::string>(to->value));
}

ir::DType dtypeOf(const ir::Graph& graph, const std::string& tensor) {
  const auto it = graph.tensors.find(tensor);
  return it == graph.tensors.end() ? ir::DType::Float : it->second.dtype;
}

bool isWidening(const ir::Graph& graph, const ir::Op& op) {
  const auto to = castTarget(op);
  return to == ir::DType::Float && dtypeOf(graph, op.inputs[0].name) == ir::DType::Float16;
}

bool plainScatter(const ir::Op& op) {
  if (op.optype != "scatter_nd" && op.optype != "scatter_elements") return false;
  const ir::Param* reduction = op.findParam("reduction");
  return reduction == nullptr ||
         (std::holds_alternative<std::string>(reduction->value) && std::get<std::string>(reduction->value) == "none");
}

// Rewrites one pair when its graph has the pattern; false (graph untouched) otherwise.
bool narrowPair(ir::Graph& graph, const ir::IoBuffer& input, const ir::IoBuffer& output) {
  if (input.dtype != ir::DType::Float16 || output.dtype != input.dtype) return false;
  const auto widenReaders = readersOf(graph, input.tensor);
  if (widenReaders.size() != 1 || isIoOutput(graph, input.tensor)) return false;
  const std::size_t widen = widenReaders[0].op;
  if (castTarget(graph.ops[widen]) != ir::DType::Float) return false;
  const std::string wide = graph.ops[widen].outputs[0].name;
  const auto scatterReaders = readersOf(graph, wide);
  if (scatterReaders.size() != 1 || isIoOutput(graph, wide)) return false;
  const std::size_t scatter = scatterReaders[0].op;
  ir::Op& s = graph.ops[scatter];
  const ir::TensorArg* src = s.findInput("src");
  const ir::TensorArg* updates = s.findInput("updates");
  if (!plainScatter(s) || src == nullptr || updates == nullptr || src->name != wide || s.outputs.size() != 1)
    return false;
  const std::string updated = s.outputs[0].name;
  const auto narrow = writerOf(graph, output.tensor);
  if (!narrow || castTarget(graph.ops[*narrow]) != ir::DType::Float16 || graph.ops[*narrow].inputs[0].name != updated)
    return false;

  const std::string roundedUpdates = uniqueTensorName(graph,
                                                      updates->name + "_" + std::string(ir::dtypeName(input.dtype)));
  ir::Op roundUpdates = castOp(uniqueOpName(graph, s.name + "_round_updates"), updates->name, roundedUpdates,
                               input.dtype);
  for (auto& in : s.inputs) {
    if (in.argName == "src") in.name = input.tensor;
    if (in.argName == "updates") in.name = roundedUpdates;
  }
  s.outputs[0].name = output.tensor;
  const bool updatedIsRead = readersOf(graph, updated).size() > 1 || isIoOutput(graph, updated);
  std::optional<ir::Op> widenUpdated;
  if (updatedIsRead) widenUpdated = castOp(graph.ops[*narrow].name, output.tensor, updated, ir::DType::Float);

  std::vector<ir::Op> ops;
  ops.reserve(graph.ops.size() + 1);
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    if (i == widen || i == *narrow) continue;
    if (i == scatter) ops.push_back(std::move(roundUpdates));
    ops.push_back(std::move(graph.ops[i]));
    if (i == scatter && widenUpdated) ops.push_back(std::move(*widenUpdated));
  }
  graph.ops = std::move(ops);
  graph.tensors.erase(wide);
  graph.tensors[roundedUpdates] = {input.dtype, {}};  // reserves the name; inferShapes refills it
  return true;
}

bool isMovement(const ir::Op& op) {
  return std::find(std::begin(kMovementOps), std::end(kMovementOps), op.optype) != std::end(kMovementOps);
}

// One move: a widening cast whose only reader is a movement op reading it as `src` now follows
// that op. False when there is none left.
bool sinkOne(ir::Graph& graph) {
  for (std::size_t c = 0; c < graph.ops.size(); ++c) {
    if (!isWidening(graph, graph.ops[c])) continue;
    const std::string narrow = graph.ops[c].inputs[0].name;
    const std::string wide = graph.ops[c].outputs[0].name;
    const auto readers = readersOf(graph, wide);
    if (readers.size() != 1 || isIoOutput(graph, wide)) continue;
    ir::Op& mover = graph.ops[readers[0].op];
    if (!isMovement(mover) || mover.inputs[readers[0].input].argName != "src" || mover.outputs.size() != 1) continue;
    const std::string moved = mover.outputs[0].name;
    const std::string narrowMoved = uniqueTensorName(graph,
                                                     moved + "_" + std::string(ir::dtypeName(ir::DType::Float16)));
    mover.inputs[readers[0].input].name = narrow;
    mover.outputs[0].name = narrowMoved;
    ir::Op cast = castOp(graph.ops[c].name, narrowMoved, moved, ir::DType::Float);
    const std::size_t at = readers[0].op;
    graph.ops.insert(graph.ops.begin() + static_cast<std::ptrdiff_t>(at) + 1, std::move(cast));
    graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(c));
    graph.tensors.erase(wide);
    graph.tensors[narrowMoved] = {ir::DType::Float16, {}};
    return true;
  }
  return false;
}

// `tensor` is an internal value with `reader` as its only reader.
bool onlyReadBy(const ir::Graph& graph, const std::string& tensor, std::size_t reader) {
  const auto readers = readersOf(graph, tensor);
  return readers.size() == 1 && readers[0].op == reader && !isIoOutput(graph, tensor);
}

bool swapsLastTwoAxes(const ir::Op& op) {
  if (op.optype != "transpose" || op.inputs.size() != 1 || op.outputs.size() != 1) return false;
  const std::vector<int64_t> axes = op.integers("axes");
  const auto rank = static_cast<int64_t>(axes.size());
  if (rank < 2) return false;
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (axes[static_cast<std::size_t>(i)] != i) return false;
  return axes[static_cast<std::size_t>(rank - 2)] == rank - 1 && axes[static_cast<std::size_t>(rank - 1)] == rank - 2;
}

// gather_nd(src [.., P, X], indices [.., N, 1], batch_dims = rank - 2): rows of src, by index.
bool gathersRows(const ir::Graph& graph, const ir::Op& op) {
  if (op.optype != "gather_nd" || op.outputs.size() != 1) return false;
  const ir::TensorArg* src = op.findInput("src");
  const ir::TensorArg* indices = op.findInput("indices");
  if (src == nullptr || indices == nullptr) return false;
  const auto source = graph.tensors.find(src->name);
  const auto index = graph.tensors.find(indices->name);
  if (source == graph.tensors.end() || index == graph.tensors.end()) return false;
  const auto rank = static_cast<int64_t>(source->second.dims.size());
  return rank >= 2 && op.integer("batch_dims") == rank - 2 && static_cast<int64_t>(index->second.dims.size()) == rank &&
         index->second.dims.back() == 1;
}

// Removes the ops at `indices` (any order, each once) and clears the list.
void eraseOps(ir::Graph& graph, std::vector<std::size_t>& indices) {
  std::sort(indices.begin(), indices.end(), std::greater<>());
  for (const std::size_t op : indices) graph.ops.erase(graph.ops.begin() + static_cast<std::ptrdiff_t>(op));
  indices.clear();
}

bool readOnlyBySelection(const ir::Graph& graph, const std::string& tensor) {
  const auto readers = readersOf(graph, tensor);
  if (readers.empty() || isIoOutput(graph, tensor)) return false;
  return std::all_of(readers.begin(), readers.end(), [&](const Reader& r) {
    const ir::Op& op = graph.ops[r.op];
    return isMovement(op) && op.inputs[r.input].argName == "src";
  });
}

}  // namespace

int keepSelectedConstantsNarrow(ir::Graph& graph) {
  int narrowed = 0;
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    ir::Op& create = graph.ops[i];
    const ir::Param* fromFile = create.findParam("from_file");
    if (create.optype != "create" || fromFile == nullptr || !std::holds_alternative<bool>(fromFile->value) ||
        !std::get<bool>(fromFile->value) || create.outputs.size() != 1)
      continue;
    const std::string wide = create.outputs[0].name;
    if (dtypeOf(graph, wide) != ir::DType::Float || !readOnlyBySelection(graph, wide)) continue;
    // The constant keeps its name (the weights and the container find it by it); its readers
    // get the widened tensor under a new one.
    const std::string widened = uniqueTensorName(graph, wide + "_" + std::string(ir::dtypeName(ir::DType::Float)));
    for (ir::Op& op : graph.ops)
      for (auto& in : op.inputs)
        if (in.name == wide) in.name = widened;
    for (auto& param : create.params)
      if (param.argName == "dtype") param.value = std::string(ir::dtypeName(ir::DType::Float16));
    ir::Op cast = castOp(uniqueOpName(graph, create.name + "_widen"), wide, widened, ir::DType::Float);
    graph.ops.insert(graph.ops.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(cast));
    graph.tensors[widened] = {ir::DType::Float, {}};
    ++narrowed;
  }
  if (narrowed > 0) ir::inferShapes(graph);
  return narrowed;
}

int keepRetainedInBufferPrecision(ir::Graph& graph, const std::vector<RetainedPair>& pairs) {
  int rewritten = 0;
  for (const RetainedPair& pair : pairs) {
    const ir::IoBuffer input = graph.io[pair.input];
    const ir::IoBuffer output = graph.io[pair.output];
    if (narrowPair(graph, input, output)) ++rewritten;
  }
  if (rewritten > 0) ir::inferShapes(graph);
  return rewritten;
}

int sinkWideningCasts(ir::Graph& graph) {
  int moves = 0;
  // Each move lowers one cast past one op, so the walk ends: at most ops x casts moves. A move
  // records the dtype of the tensor it adds, all the next one reads, so shapes are inferred once.
  while (sinkOne(graph)) ++moves;
  if (moves > 0) ir::inferShapes(graph);
  return moves;
}

int readNarrowMatmulOperands(ir::Graph& graph) {
  int changed = 0;
  std::vector<std::size_t> dropped;  // the casts and transposes folded into their matmul
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    ir::Op& product = graph.ops[i];
    if (product.optype != "matmul" || product.inputs.size() != 2 || product.inputs[1].argName != "src2" ||
        dtypeOf(graph, product.inputs[0].name) != ir::DType::Float)
      continue;
    const std::string wide = product.inputs[1].name;
    const auto cast = writerOf(graph, wide);
    if (!cast || !isWidening(graph, graph.ops[*cast]) || !onlyReadBy(graph, wide, i)) continue;
    // A constant right operand (a weight) keeps oneDNN's packed product; this is for values
    // computed at run time, such as a cache.
    const auto source = writerOf(graph, graph.ops[*cast].inputs[0].name);
    if (source && graph.ops[*source].optype == "create") continue;
    product.inputs[1].name = graph.ops[*cast].inputs[0].name;
    dropped.push_back(*cast);
    graph.tensors.erase(wide);
    const std::string narrow = product.inputs[1].name;
    const auto transpose = writerOf(graph, narrow);
    // The cast, dropped below, still reads `narrow`; the product has taken its place.
    auto readers = readersOf(graph, narrow);
    std::erase_if(readers, [&](const Reader& r) { return r.op == *cast; });
    if (transpose && swapsLastTwoAxes(graph.ops[*transpose]) && readers.size() == 1 && !isIoOutput(graph, narrow)) {
      product.optype = "matmul_trans_b";
      product.inputs[1].name = graph.ops[*transpose].inputs[0].name;
      dropped.push_back(*transpose);
      graph.tensors.erase(narrow);
    }
    ++changed;
  }
  // The casts and transposes go before the gathers are looked at: they read what is gathered.
  eraseOps(graph, dropped);
  // A float16 operand gathered by rows (efficient-transformers' CtxGather: gather_nd with
  // batch_dims = rank - 2 and one index per row) is read where it lies.
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    ir::Op& product = graph.ops[i];
    if ((product.optype != "matmul" && product.optype != "matmul_trans_b") || product.inputs.size() != 2 ||
        dtypeOf(graph, product.inputs[0].name) != ir::DType::Float ||
        dtypeOf(graph, product.inputs[1].name) != ir::DType::Float16)
      continue;
    const std::string gathered = product.inputs[1].name;
    const auto gather = writerOf(graph, gathered);
    if (!gather || !gathersRows(graph, graph.ops[*gather]) || !onlyReadBy(graph, gathered, i)) continue;
    const bool transposed = product.optype == "matmul_trans_b";
    product.optype = "matmul_gathered_b";
    product.inputs[1].name = graph.ops[*gather].findInput("src")->name;
    product.inputs.push_back({"indices", graph.ops[*gather].findInput("indices")->name});
    product.params = {{"trans_b", transposed}};
    dropped.push_back(*gather);
    graph.tensors.erase(gathered);
    ++changed;
  }
  eraseOps(graph, dropped);
  if (changed > 0) ir::inferShapes(graph);
  return changed;
}

}  // namespace qaic::compiler
