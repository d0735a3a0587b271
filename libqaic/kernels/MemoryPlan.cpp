// SPDX-License-Identifier: Apache-2.0
#include "kernels/MemoryPlan.hpp"

#include "kernels/ops/ConstantPacking.hpp"

#include <algorithm>
#include <cstdint>
#include <new>
#include <vector>

namespace qaic::kernels {
namespace {

constexpr std::size_t kAlignment = 64;         // a cache line: what oneDNN gives memory it allocates
constexpr std::uintptr_t kViewAlignment = 16;  // what the kernels assume of any tensor (operator new's)

std::size_t alignUp(std::size_t value) { return (value + kAlignment - 1) / kAlignment * kAlignment; }

bool isConstantProducer(const std::string& optype) {
  return optype == "create" || optype == "zeros" || optype == "arange";
}

bool isView(const std::string& optype) { return optype == "reshape" || optype == "flatten"; }

// The inputs a kernel packs into a primitive's layout (PackedWeights).
bool isPackedWeight(const ir::Op& op, const std::string& arg) {
  return ((op.optype == "conv2d" || op.optype == "deconv2d") && arg == "weight") ||
         (op.optype == "matmul" && arg == "src2") || (op.optype == "gemm" && arg == "b");
}

// One arena slot: a tensor and the views that share it, alive from `first` to `last` (op
// indices; -1 is before the first op, the op count after the last).
struct Slot {
  std::size_t bytes = 0;
  int64_t first = INT64_MAX, last = INT64_MIN;
  std::size_t offset = 0;
};

// Offsets for the slots, largest first, each at the lowest address free of every placed slot
// whose lifetime overlaps its own.
std::size_t placeSlots(std::vector<Slot*>& slots) {
  std::sort(slots.begin(), slots.end(), [](const Slot* a, const Slot* b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->first < b->first;
  });
  std::vector<Slot*> placed;
  std::size_t total = 0;
  for (Slot* slot : slots) {
    std::vector<const Slot*> busy;
    for (const Slot* other : placed) {
      if (other->first <= slot->last && slot->first <= other->last) busy.push_back(other);
    }
    std::sort(busy.begin(), busy.end(), [](const Slot* a, const Slot* b) { return a->offset < b->offset; });
    std::size_t offset = 0;
    for (const Slot* other : busy) {
      if (offset + slot->bytes <= other->offset) break;
      offset = std::max(offset, alignUp(other->offset + other->bytes));
    }
    slot->offset = offset;
    total = std::max(total, offset + slot->bytes);
    placed.push_back(slot);
  }
  return total;
}

}  // namespace

ActivationArena::ActivationArena(std::size_t bytes)
    : buffer_(bytes ? static_cast<std::byte*>(::operator new (bytes, std::align_val_t{kAlignment})) : nullptr),
      bytes_(bytes) {}

void ActivationArena::AlignedDelete::operator()(std::byte* p) const {
  ::operator delete (p, std::align_val_t{kAlignment});
}

ActivationArena planMemory(const ir::Graph& graph, TensorTable& tensors,
                           const std::map<std::string, IoMemory, std::less<>>& bound, const ConstantLookup& constants,
                           ConstantPacking* packing) {
  const auto bytesOf = [](const Tensor& t) { return static_cast<std::size_t>(t.count()) * ir::dtypeSize(t.dtype); };
  // Which tensor's memory each tensor uses (itself, or a reshape's source, transitively).
  std::map<std::string, std::string, std::less<>> root;
  std::map<std::string, Slot, std::less<>> slots;  // by root, for arena tensors
  std::set<std::string, std::less<>> placedElsewhere;
  for (auto& [name, t] : tensors) {
    root[name] = name;
    if (auto memory = bound.find(name); memory != bound.end()) {
      t.useExternal(static_cast<std::byte*>(memory->second.data), bytesOf(t));
      placedElsewhere.insert(name);
    }
  }
  // Readers of each tensor: (op, argument) pairs, and one more for an io output.
  std::map<std::string, std::vector<std::pair<const ir::Op*, std::string>>, std::less<>> readers;
  for (const ir::Op& op : graph.ops) {
    for (const auto& arg : op.inputs) readers[arg.name].emplace_back(&op, arg.argName);
  }
  for (const ir::IoBuffer& io : graph.io) readers[io.tensor].emplace_back(nullptr, "");
  for (const ir::Op& op : graph.ops) {
    if (op.outputs.empty()) continue;
    const std::string& out = op.outputs.front().name;
    Tensor& t = tensors.at(out);
    if (placedElsewhere.count(out)) continue;
    if (op.optype == "create" && op.boolean("from_file")) {
      const ir::WeightTensor* w = constants ? constants(out) : nullptr;
      const auto address = reinterpret_cast<std::uintptr_t>(w ? w->data.data() : nullptr);
      const auto& uses = readers[out];
      if (w && w->encoding != ir::WeightEncoding::Plain) {
        for (const auto& [reader, arg] : uses) {
          if (reader == nullptr ||
              !((reader->optype == "matmul" && arg == "src2") || (reader->optype == "gemm" && arg == "b"))) {
            throw ExecutionError("constant '" + out + "' is " + std::string(ir::weightEncodingName(w->encoding)) +
                                 "-encoded, which only a matmul's src2 or a gemm's b reads, but " +
                                 (reader
                                      ? "op '" + reader->name + "' (" + reader->optype + ") reads it as '" + arg + "'"
                                      : std::string("it is a graph output")));
          }
        }
        t.encoded = w;
        placedElsewhere.insert(out);
        continue;
      }
      t.repackable = uses.size() == 1 && uses[0].first && isPackedWeight(*uses[0].first, uses[0].second);
      if (w && packing && !t.repackable && w->dtype == ir::DType::Float16 && t.dtype == ir::DType::Float &&
          w->data.size() * 2 == bytesOf(t)) {
        // Stored as float16, read as float: one widened copy shared by the load's programs.
        t.view(const_cast<std::byte*>(packing->widened(out, w->data)), bytesOf(t));  // kernels only read constants
        placedElsewhere.insert(out);
        continue;
      }
      // A constant read plainly must stay plain; one already rewritten is restored by its kernel.
      const bool plain = t.repackable || !packing || packing->keepPlain(out);
      if (w && w->dtype == t.dtype && w->data.size() == bytesOf(t) && address % kViewAlignment == 0 && plain) {
        t.view(const_cast<std::byte*>(w->data.data()), bytesOf(t));  // kernels only read constants
        placedElsewhere.insert(out);
        continue;
      }
      t.repackable = false;
    }
    if (isConstantProducer(op.optype)) {
      t.allocate(bytesOf(t));
      placedElsewhere.insert(out);
    } else if (isView(op.optype)) {
      root[out] = root.at(op.inputs.front().name);
    }
  }
  // Lifetimes of the arena's slots.
  const auto touch = [&](const std::string& name, int64_t when) {
    const std::string& r = root.at(name);
    if (placedElsewhere.count(r)) return;
    Slot& slot = slots[r];
    slot.bytes = std::max(slot.bytes, bytesOf(tensors.at(r)));
    slot.first = std::min(slot.first, when);
    slot.last = std::max(slot.last, when);
  };
  const auto end = static_cast<int64_t>(graph.ops.size());
  for (const ir::IoBuffer& io : graph.io) {
    if (tensors.count(io.tensor)) touch(io.tensor, io.direction == ir::Direction::In ? -1 : end);
  }
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    for (const auto& arg : graph.ops[i].inputs) touch(arg.name, static_cast<int64_t>(i));
    for (const auto& arg : graph.ops[i].outputs) touch(arg.name, static_cast<int64_t>(i));
  }
  std::vector<Slot*> order;
  for (auto& [name, slot] : slots) order.push_back(&slot);
  ActivationArena arena(placeSlots(order));
  for (auto& [name, t] : tensors) {
    const std::string& r = root.at(name);
    if (r == name && placedElsewhere.count(name)) continue;
    if (placedElsewhere.count(r)) {
      t.view(tensors.at(r).data(), bytesOf(t));
    } else if (auto slot = slots.find(r); slot != slots.end()) {
      t.view(arena.data() + slot->second.offset, bytesOf(t));
    } else {
      t.allocate(bytesOf(t));  // neither read nor written by any op
    }
  }
  return arena;
}

}  // namespace qaic::kernels
