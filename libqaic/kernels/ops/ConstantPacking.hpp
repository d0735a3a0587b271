// SPDX-License-Identifier: Apache-2.0
// Constants packed once into the layout their primitive wants and shared by every program built
// over the same constant data (the emulator's activations of one loaded container). A constant
// whose one reader is the primitive that packs it (MemoryPlan's `repackable`), and which no
// program has read plainly, is rewritten: in its own bytes when the layout fits there, else into
// memory of the registry's with the plain bytes' pages given back to the system (their content
// is needed no more). A program that later needs the plain layout gets it back by a reorder.
#pragma once

#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <dnnl.hpp>

#include "kernels/HostProgram.hpp"

namespace qaic::kernels {

class ConstantPacking {
 public:
  // `plain` in layout `wanted`, rewritten the first time when `rewritable`, the same memory for
  // every later request of that layout; nullopt when the caller must pack a copy of its own.
  std::optional<dnnl::memory> pack(const std::string& name, const dnnl::memory& plain, const dnnl::memory::desc& wanted,
                                   bool rewritable, const dnnl::engine& engine, dnnl::stream& stream);
  // Constant `name` reordered from its rewritten bytes into `target` (memory of the caller's, in
  // another layout of the dims it was packed with); false when `name` was not rewritten, so its
  // own bytes still hold the plain layout.
  bool copyRewritten(const std::string& name, const dnnl::memory& target, dnnl::stream& stream);
  // The plain layout of rewritten constant `name` written to `plain` (as many bytes); false when
  // it was not rewritten.
  bool restorePlain(const std::string& name, void* plain, const dnnl::engine& engine, dnnl::stream& stream);
  // A program reads `name` plainly (a view of its bytes): false if it was already rewritten (the
  // program must then copy it back with copyRewritten); otherwise it is never rewritten.
  bool keepPlain(const std::string& name);
  // Constant `name`, stored as float16 (`source`) and read as float: widened once for every
  // program built over the same data (a load's specializations), so a large table (an LLM's
  // embedding) is held once in float, not once per program. Later calls return the same memory.
  const std::byte* widened(const std::string& name, std::span<const std::byte> source);
  // `data` is the widened copy of `name` (the create kernel has nothing left to fill).
  bool isWidened(const std::string& name, const void* data);

 private:
  struct Rewritten {
    dnnl::memory::desc layout, plain;  // the packed layout, and the plain one it came from
    void* data = nullptr;
    dnnl::memory owned;  // holds `data` when the layout did not fit in the plain bytes
  };
  std::mutex mutex_;
  std::map<std::string, Rewritten> rewritten_;
  std::set<std::string> plain_;
  std::map<std::string, std::vector<float>> widened_;
};

}  // namespace qaic::kernels
