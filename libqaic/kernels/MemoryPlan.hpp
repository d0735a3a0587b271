// SPDX-License-Identifier: Apache-2.0
// Where the tensors of one plan live. Constants read from file stay where the caller keeps them
// (a container's mapped constants, a weights file), reshapes are views of their source, and the
// other intermediate tensors share one arena: each gets a slot that no tensor whose lifetime
// (first write to last read, in op order) overlaps its own uses, so a network needs about as
// much activation memory as its largest live set, not the sum of all its tensors.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "kernels/HostProgram.hpp"
#include "kernels/ops/Kernel.hpp"

namespace qaic::kernels {

class ActivationArena {
 public:
  ActivationArena() = default;
  explicit ActivationArena(std::size_t bytes);
  std::byte* data() { return buffer_.get(); }
  std::size_t bytes() const { return bytes_; }

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, AlignedDelete> buffer_;
  std::size_t bytes_ = 0;
};

// Gives every tensor of `tensors` (one per graph tensor, dtype and dims set) its memory:
//   - io tensors with caller memory (`bound`): that memory;
//   - results of `create` from file whose data `constants` holds in the tensor's dtype and 16-byte
//     aligned: that data, never copied (the kernel then has nothing to fill);
//   - the other constants (create, zeros, arange): memory of their own;
//   - results of reshape and flatten: a view of their source's memory, unless bound;
//   - everything else: a slot of the returned arena.
ActivationArena planMemory(const ir::Graph& graph, TensorTable& tensors,
                           const std::map<std::string, IoMemory, std::less<>>& bound, const ConstantLookup& constants,
                           ConstantPacking* packing);

}  // namespace qaic::kernels
