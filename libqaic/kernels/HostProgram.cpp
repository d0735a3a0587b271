// SPDX-License-Identifier: Apache-2.0
// HostProgram: one Plan (tensors, kernels with their oneDNN primitives, the scratchpad those
// share) per combination of input shapes, built on first use and cached.
#include "kernels/HostProgram.hpp"

#include <omp.h>

#include <compare>
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
  bool inPlace(ir::Direction direction, std::size_t k) const override {
    const auto& of = direction == ir::Direction::In ? inputInPlace_ : outputInPlace_;
    return k < of.size() && of[k];
  }
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
    Plan& plan = planForViews(key, inputs, outputs);
    inputInPlace_.assign(inputs.size(), false);
    outputInPlace_.assign(outputs.size(), false);
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      Tensor& t = *plan.inputs[k];
      if (inputs[k].bytes < t.bytes() || (t.bytes() && !inputs[k].data)) {
        throw ExecutionError("input '" + graph_.io[inputIo_[k]].bufferName + "': buffer holds " +
                             std::to_string(inputs[k].bytes) + " bytes, " + describeDims(t.dims) + " needs " +
                             std::to_string(t.bytes()));
      }
      // Bound memory (BuildOptions::inputMemory) is the tensor itself: nothing to copy.
      inputInPlace_[k] = t.data() == inputs[k].data;
      if (t.bytes() && !inputInPlace_[k]) std::memcpy(t.data(), inputs[k].data, t.bytes());
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
      outputInPlace_[k] = t.data() == outputs[k].data;
      if (t.bytes() && !outputInPlace_[k]) std::memcpy(outputs[k].data, t.data(), t.bytes());
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
    return *plans_.emplace(key, buildPlan(graphFor(key))).first->second;
  }

  // The plan whose bound io tensors are the run's own views where it pays (BuildOptions::
  // reboundPlans): a view of other memory than the binding, 16-byte aligned, large enough and
  // overlapping no other view of the run (an input aliasing an output is copied, so no kernel
  // reads what another already overwrote). A further plan costs its own activations and
  // scratchpad; it is built only when that is at most the bytes it saves copying on every run,
  // and only `reboundPlans` of them, kept for their memory's next use (never evicted, so
  // memory that keeps changing costs one copy each way, not a build per run).
  Plan& planForViews(const ShapeKey& key, std::span<const TensorView> inputs, std::span<TensorView> outputs) {
    Plan& base = planFor(key);
    if (options_.reboundPlans <= 0) return base;
    struct Extent {
      const std::byte* begin;
      std::size_t bytes;
    };
    std::vector<Extent> extents;
    for (std::size_t k = 0; k < inputs.size(); ++k)
      extents.push_back({static_cast<const std::byte*>(inputs[k].data), base.inputs[k]->bytes()});
    for (std::size_t k = 0; k < outputs.size(); ++k)
      extents.push_back({static_cast<const std::byte*>(outputs[k].data), base.outputs[k]->bytes()});
    auto overlapsAnother = [&](std::size_t self) {
      const Extent& e = extents[self];
      for (std::size_t j = 0; j < extents.size(); ++j) {
        const Extent& o = extents[j];
        if (j != self && o.begin && o.bytes && e.begin < o.begin + o.bytes && o.begin < e.begin + e.bytes) return true;
      }
      return false;
    };
    std::vector<IoMemory> in = options_.inputMemory, out = options_.outputMemory;
    in.resize(inputs.size());
    out.resize(outputs.size());
    std::size_t saved = 0;
    auto consider = [&](const Tensor& t, void* data, std::size_t bytes, std::size_t extent, IoMemory& binding) {
      if (!t.external() || !t.bytes() || !data || data == t.data() || bytes < t.bytes() ||
          reinterpret_cast<std::uintptr_t>(data) % kBoundAlignment != 0 || overlapsAnother(extent))
        return;
      binding = {data, bytes};
      saved += t.bytes();
    };
    for (std::size_t k = 0; k < inputs.size(); ++k)
      consider(*base.inputs[k], inputs[k].data, inputs[k].bytes, k, in[k]);
    for (std::size_t k = 0; k < outputs.size(); ++k)
      consider(*base.outputs[k], outputs[k].data, outputs[k].bytes, inputs.size() + k, out[k]);
    if (saved == 0 || base.arena.bytes() + base.scratchpad.bytes() > saved) return base;
    ReboundKey rebound{key, {}};
    for (const IoMemory& m : in) rebound.memory.push_back(m.data);
    for (const IoMemory& m : out) rebound.memory.push_back(m.data);
    if (auto it = reboundPlans_.find(rebound); it != reboundPlans_.end()) return *it->second;
    if (reboundPlans_.size() >= static_cast<std::size_t>(options_.reboundPlans)) return base;
    std::swap(options_.inputMemory, in);
    std::swap(options_.outputMemory, out);
    std::unique_ptr<Plan> plan;
    try {
      plan = buildPlan(graphFor(key));
    } catch (...) {
      std::swap(options_.inputMemory, in);
      std::swap(options_.outputMemory, out);
      throw;
    }
    std::swap(options_.inputMemory, in);
    std::swap(options_.outputMemory, out);
    return *reboundPlans_.emplace(std::move(rebound), std::move(plan)).first->second;
  }

  // The graph with its shapes inferred for `key`'s input dims.
  ir::Graph graphFor(const ShapeKey& key) const {
    ShapeKey own;
    for (std::size_t i : inputIo_) own.push_back(graph_.io[i].dims);
    if (key == own) return graph_;
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
    return specialized;
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
  // Plans over other caller memory than BuildOptions' (planForViews), by shapes and addresses.
  struct ReboundKey {
    ShapeKey shapes;
    std::vector<void*> memory;  // inputs then outputs; null: the program's own
    auto operator<=>(const ReboundKey&) const = default;
  };
  std::map<ReboundKey, std::unique_ptr<Plan>> reboundPlans_;
  const Plan* builtPlan_ = nullptr;                 // the one for the graph's own input dims
  std::vector<bool> inputInPlace_, outputInPlace_;  // of the last run
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
