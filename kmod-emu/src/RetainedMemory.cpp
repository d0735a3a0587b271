// SPDX-License-Identifier: Apache-2.0
#include "RetainedMemory.hpp"

#include <cstring>
#include <set>

namespace qaic::emu {

RetainedMemory::RetainedMemory(const std::vector<container::QpcRetainedState>& entries)
    : entries_(entries), state_(entries.size()), next_(entries.size()) {}

void RetainedMemory::allocate() {
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (state_[i].size() != entries_[i].size) state_[i].assign(entries_[i].size, std::byte{0});
}

int RetainedMemory::find(std::string_view bufferName) const {
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].name == bufferName || entries_[i].stateName == bufferName) return static_cast<int>(i);
  return -1;
}

bool RetainedMemory::prepare(std::size_t index, const ir::Graph& graph) {
  const auto& e = entries_[index];
  const bool inPlace = updatesInPlace(graph, e.tensor, e.stateTensor);
  if (!inPlace && next_[index].empty()) next_[index].assign(e.size, std::byte{0});
  return inPlace;
}

kernels::IoMemory RetainedMemory::inputMemory(std::size_t index) {
  return {state_[index].data(), state_[index].size()};
}

kernels::IoMemory RetainedMemory::outputMemory(std::size_t index, bool inPlace) {
  Bytes& memory = inPlace ? state_[index] : next_[index];
  return {memory.data(), memory.size()};
}

void RetainedMemory::commit(const std::vector<bool>& inPlace) {
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (!inPlace[i]) std::memcpy(state_[i].data(), next_[i].data(), state_[i].size());
}

void RetainedMemory::reset() {
  for (auto& memory : state_) std::memset(memory.data(), 0, memory.size());
}

bool updatesInPlace(const ir::Graph& graph, const std::string& input, const std::string& output) {
  if (input == output) return false;
  std::size_t writer = graph.ops.size();
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    for (const auto& out : graph.ops[i].outputs)
      if (out.name == output) writer = i;
  }
  if (writer == graph.ops.size()) return false;
  const ir::Op& scatter = graph.ops[writer];
  if (scatter.optype != "scatter_elements" && scatter.optype != "scatter_nd") return false;
  const ir::TensorArg* src = scatter.findInput("src");
  if (src == nullptr || src->name != input) return false;
  std::set<std::string, std::less<>> aliases{input};  // the input and the views of its memory
  for (const ir::Op& op : graph.ops) {
    if ((op.optype == "reshape" || op.optype == "flatten") && !op.inputs.empty() && aliases.count(op.inputs[0].name))
      for (const auto& out : op.outputs) aliases.insert(out.name);
  }
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    for (const auto& in : graph.ops[i].inputs) {
      if (!aliases.count(in.name)) continue;
      if (i > writer) return false;                 // read after the update
      if (i == writer && &in != src) return false;  // the scatter's indices or updates
    }
  }
  return true;
}

}  // namespace qaic::emu
