// HostProgram: one Plan (tensors, kernels with their oneDNN primitives, the scratchpad those
// share) per combination of input shapes, built on first use and cached.
#include "kernels/HostProgram.hpp"

#include <omp.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <set>

#include "kernels/MemoryPlan.hpp"
#include "kernels/ops/Kernel.hpp"

namespace qaic::kernels {
namespace {

// What the kernels may assume of any tensor's address (operator new's guarantee).
constexpr std::uintptr_t kBoundAlignment = 16;

// The inferred graph a plan was built from owns the ops its kernels refer to, so it lives here.
struct Plan {
  ir::Graph graph;
  TensorTable tensors;
  ActivationArena arena;
  SharedScratchpad scratchpad;
  std::vector<std::unique_ptr<Kernel>> kernels;  // declared last: destroyed before what they use
  std::vector<Tensor*> inputs;
  std::vector<Tensor*> outputs;
};

std::string describeDims(const ir::Dims& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

class Program final : public HostProgram {
 public:
  Program(const ir::Graph& graph, ConstantLookup constants, const BuildOptions& options)
      : graph_(graph),
        constants_(std::move(constants)),
        options_(options),
        engine_(dnnl::engine::kind::cpu, 0),
        stream_(engine_) {
    if (options_.threads < 1) options_.threads = 1;
    for (std::size_t i = 0; i < graph_.io.size(); ++i) {
      (graph_.io[i].direction == ir::Direction::In ? inputIo_ : outputIo_).push_back(i);
    }
    for (const ir::Op& op : graph_.ops) {
      if (!findKernelFactory(op.optype)) {
        throw ExecutionError("op '" + op.name + "' (" + op.optype + "): no host kernel for this operator");
      }
    }
    ShapeKey key;
    for (std::size_t i : inputIo_) key.push_back(graph_.io[i].dims);
    ThreadLimit limit(options_.threads);
    builtPlan_ = plans_.emplace(key, buildPlan(graph_)).first->second.get();
  }

  std::size_t scratchpadBytes() const override { return builtPlan_->scratchpad.bytes(); }
  std::size_t activationBytes() const override { return builtPlan_->arena.bytes(); }

  void run(std::span<const TensorView> inputs, std::span<TensorView> outputs) override {
    if (inputs.size() != inputIo_.size()) {
      throw ExecutionError(graph_.sourceName + ": " + std::to_string(inputs.size()) +
                           " inputs given, the network has " + std::to_string(inputIo_.size()));
    }
    if (outputs.size() != outputIo_.size()) {
      throw ExecutionError(graph_.sourceName + ": " + std::to_string(outputs.size()) +
                           " outputs given, the network has " + std::to_string(outputIo_.size()));
    }
    ShapeKey key;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const ir::IoBuffer& io = graph_.io[inputIo_[k]];
      if (inputs[k].dtype != io.dtype) {
        throw ExecutionError("input '" + io.bufferName + "': dtype " + std::string(ir::dtypeName(inputs[k].dtype)) +
                             ", the network expects " + std::string(ir::dtypeName(io.dtype)));
      }
      key.push_back(inputs[k].dims);
    }
    ThreadLimit limit(options_.threads);
    Plan& plan = planFor(key);
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      Tensor& t = *plan.inputs[k];
      if (inputs[k].bytes < t.bytes() || (t.bytes() && !inputs[k].data)) {
        throw ExecutionError("input '" + graph_.io[inputIo_[k]].bufferName + "': buffer holds " +
                             std::to_string(inputs[k].bytes) + " bytes, " + describeDims(t.dims) + " needs " +
                             std::to_string(t.bytes()));
      }
      // Bound memory (BuildOptions::inputMemory) is the tensor itself: nothing to copy.
      if (t.bytes() && t.data() != inputs[k].data) std::memcpy(t.data(), inputs[k].data, t.bytes());
    }
    for (auto& kernel : plan.kernels) kernel->run();
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      const Tensor& t = *plan.outputs[k];
      outputs[k].dtype = t.dtype;
      outputs[k].dims = t.dims;
      if (outputs[k].bytes < t.bytes() || (t.bytes() && !outputs[k].data)) {
        throw ExecutionError("output '" + graph_.io[outputIo_[k]].bufferName + "': buffer holds " +
                             std::to_string(outputs[k].bytes) + " bytes, " + describeDims(t.dims) + " needs " +
                             std::to_string(t.bytes()));
      }
      if (t.bytes() && t.data() != outputs[k].data) std::memcpy(outputs[k].data, t.data(), t.bytes());
    }
  }

 private:
  using ShapeKey = std::vector<ir::Dims>;

  // oneDNN (OpenMP runtime) sizes its parallel regions from the calling thread's
  // omp_get_max_threads(); bound it for this program's work, then restore the caller's value.
  class ThreadLimit {
   public:
    explicit ThreadLimit(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
    ~ThreadLimit() { omp_set_num_threads(saved_); }
    ThreadLimit(const ThreadLimit&) = delete;
    ThreadLimit& operator=(const ThreadLimit&) = delete;

   private:
    int saved_;
  };

  Plan& planFor(const ShapeKey& key) {
    auto it = plans_.find(key);
    if (it != plans_.end()) return *it->second;
    ir::Graph specialized = graph_;
    ir::ShapeCombination ioDims(graph_.io.size());  // empty output entries: not checked
    for (std::size_t k = 0; k < key.size(); ++k) ioDims[inputIo_[k]] = key[k];
    try {
      specialized.tensors = ir::inferTensorShapes(graph_, ioDims);
    } catch (const ir::IrError& e) {
      std::string dims;
      for (const auto& d : key) dims += describeDims(d);
      throw ExecutionError("input shapes " + dims + " do not fit the network: " + e.what());
    }
    for (std::size_t i = 0; i < specialized.io.size(); ++i) {
      auto t = specialized.tensors.find(specialized.io[i].tensor);
      if (t != specialized.tensors.end()) specialized.io[i].dims = t->second.dims;
    }
    return *plans_.emplace(key, buildPlan(std::move(specialized))).first->second;
  }

  // Kernels capture their tensors' addresses when they are created, so which tensors live in
  // the caller's memory is settled here, before any kernel exists.
  std::unique_ptr<Plan> buildPlan(ir::Graph graph) {
    std::set<std::string, std::less<>> keepOwn;
    for (;;) {
      auto plan = buildPlanWith(std::move(graph), keepOwn);
      // A constant is filled once at build; in bound memory the caller could overwrite it.
      bool rebuild = false;
      for (const auto& [name, t] : plan->tensors) {
        if (t.external() && t.constant) rebuild = keepOwn.insert(name).second || rebuild;
      }
      if (!rebuild) return plan;
      plan->kernels.clear();  // they refer to the graph's ops, which the next attempt takes over
      graph = std::move(plan->graph);
    }
  }

  // Tensor name -> caller memory, for the io tensors that may live there.
  std::map<std::string, IoMemory, std::less<>> boundMemory(const ir::Graph& graph) const {
    std::map<std::string, int, std::less<>> uses;
    for (const ir::IoBuffer& io : graph.io) ++uses[io.tensor];
    std::map<std::string, IoMemory, std::less<>> bound;
    auto bindAll = [&](const std::vector<std::size_t>& ioIndices, const std::vector<IoMemory>& memory) {
      for (std::size_t k = 0; k < ioIndices.size() && k < memory.size(); ++k) {
        const std::string& tensor = graph.io[ioIndices[k]].tensor;
        const bool aligned = reinterpret_cast<std::uintptr_t>(memory[k].data) % kBoundAlignment == 0;
        if (memory[k].data && aligned && uses[tensor] == 1) bound.emplace(tensor, memory[k]);
      }
    };
    bindAll(inputIo_, options_.inputMemory);
    bindAll(outputIo_, options_.outputMemory);
    return bound;
  }

  std::unique_ptr<Plan> buildPlanWith(ir::Graph graph, const std::set<std::string, std::less<>>& keepOwn) {
    auto plan = std::make_unique<Plan>();
    plan->graph = std::move(graph);
    auto bound = boundMemory(plan->graph);
    for (const auto& name : keepOwn) bound.erase(name);
    for (const auto& [name, info] : plan->graph.tensors) {
      if (ir::elementCount(info.dims) < 0) throw ExecutionError("tensor '" + name + "': negative element count");
      Tensor t;
      t.dtype = info.dtype;
      t.dims = info.dims;
      plan->tensors.emplace(name, std::move(t));
    }
    for (auto it = bound.begin(); it != bound.end();) {  // caller memory too small for the tensor
      const Tensor& t = plan->tensors.at(it->first);
      it = it->second.bytes < static_cast<std::size_t>(t.count()) * ir::dtypeSize(t.dtype) ? bound.erase(it)
                                                                                           : std::next(it);
    }
    plan->arena = planMemory(plan->graph, plan->tensors, bound, constants_, options_.packing.get());
    auto bind = [&](std::size_t ioIndex) -> Tensor* {
      const ir::IoBuffer& io = plan->graph.io[ioIndex];
      auto it = plan->tensors.find(io.tensor);
      if (it == plan->tensors.end()) {
        throw ExecutionError("io buffer '" + io.bufferName + "': tensor '" + io.tensor + "' is not in the network");
      }
      return &it->second;
    };
    for (std::size_t i : inputIo_) plan->inputs.push_back(bind(i));
    for (std::size_t i : outputIo_) plan->outputs.push_back(bind(i));
    for (const ir::Op& op : plan->graph.ops) {
      BuildContext ctx{op, plan->tensors, constants_, options_, engine_, stream_, plan->scratchpad};
      plan->scratchpad.beginKernel();
      try {
        plan->kernels.push_back(findKernelFactory(op.optype)(ctx));
      } catch (const ir::IrError& e) {
        throw ExecutionError(e.what());
      }
    }
    plan->scratchpad.bind();
    return plan;
  }

  ir::Graph graph_;
  ConstantLookup constants_;
  BuildOptions options_;
  std::vector<std::size_t> inputIo_, outputIo_;  // indices into graph_.io
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::map<ShapeKey, std::unique_ptr<Plan>> plans_;
  const Plan* builtPlan_ = nullptr;  // the one for the graph's own input dims
};

}  // namespace

std::unique_ptr<HostProgram> HostProgram::build(const ir::Graph& graph, ConstantLookup constants,
                                                const BuildOptions& options) {
  try {
    return std::make_unique<Program>(graph, std::move(constants), options);
  } catch (const dnnl::error& e) {
    throw ExecutionError(std::string("oneDNN: ") + e.what());
  }
}

}  // namespace qaic::kernels
