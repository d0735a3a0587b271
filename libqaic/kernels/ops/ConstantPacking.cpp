// SPDX-License-Identifier: Apache-2.0
#include "kernels/ops/ConstantPacking.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/format/Half.hpp"

namespace qaic::kernels {
namespace {

// Gives the whole pages inside [begin, begin + bytes) back to the system: they read as zeros
// afterwards, so only bytes nobody will read again may be released.
void releasePages(void* begin, std::size_t bytes) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto first = (reinterpret_cast<std::uintptr_t>(begin) + page - 1) / page * page;
  const auto last = (reinterpret_cast<std::uintptr_t>(begin) + bytes) / page * page;
  if (last <= first) return;
  // A shared memory file's pages (the emulator's loads, LoadBuffer) outlive a mere unmapping:
  // MADV_REMOVE punches them out of the file. Private memory refuses it and is simply dropped.
  if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_REMOVE) != 0)
    ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace

std::optional<dnnl::memory> ConstantPacking::pack(const std::string& name, const dnnl::memory& plain,
                                                  const dnnl::memory::desc& wanted, bool rewritable,
                                                  const dnnl::engine& engine, dnnl::stream& stream) {
  std::lock_guard lock(mutex_);
  if (const auto it = rewritten_.find(name); it != rewritten_.end()) {
    if (it->second.layout == wanted) return dnnl::memory(wanted, engine, it->second.data);
    return std::nullopt;  // another layout: the caller reorders from the rewritten bytes
  }
  if (!rewritable || plain_.count(name)) return std::nullopt;
  // Through a temporary: a reorder cannot run in place.
  dnnl::memory packed(wanted, engine);
  dnnl::reorder(plain, packed).execute(stream, const_cast<dnnl::memory&>(plain), packed);
  stream.wait();
  void* bytes = plain.get_data_handle();
  const std::size_t plainSize = plain.get_desc().get_size(), packedSize = wanted.get_size();
  Rewritten entry{wanted, plain.get_desc(), bytes, {}};
  if (packedSize <= plainSize) {
    std::memcpy(bytes, packed.get_data_handle(), packedSize);
    releasePages(static_cast<std::byte*>(bytes) + packedSize, plainSize - packedSize);
  } else {  // padded blocks: a little larger than the plain bytes, which are not needed any more
    entry.data = packed.get_data_handle();
    entry.owned = packed;
    releasePages(bytes, plainSize);
  }
  rewritten_[name] = entry;
  return dnnl::memory(wanted, engine, entry.data);
}

bool ConstantPacking::copyRewritten(const std::string& name, const dnnl::memory& target, dnnl::stream& stream) {
  std::lock_guard lock(mutex_);
  const auto it = rewritten_.find(name);
  if (it == rewritten_.end()) return false;
  // On the caller's engine and stream: a primitive runs on its own engine's streams.
  dnnl::memory source(it->second.layout, target.get_engine(), it->second.data);
  dnnl::reorder(source, target).execute(stream, source, const_cast<dnnl::memory&>(target));
  stream.wait();
  return true;
}

bool ConstantPacking::restorePlain(const std::string& name, void* plain, const dnnl::engine& engine,
                                   dnnl::stream& stream) {
  dnnl::memory::desc layout;
  {
    std::lock_guard lock(mutex_);
    const auto it = rewritten_.find(name);
    if (it == rewritten_.end()) return false;
    layout = it->second.plain;
  }
  return copyRewritten(name, dnnl::memory(layout, engine, plain), stream);
}

bool ConstantPacking::keepPlain(const std::string& name) {
  std::lock_guard lock(mutex_);
  if (rewritten_.count(name)) return false;
  plain_.insert(name);
  return true;
}

std::shared_ptr<ConstantPacking> makeConstantPacking() { return std::make_shared<ConstantPacking>(); }

const std::byte* ConstantPacking::widened(const std::string& name, std::span<const std::byte> source) {
  std::lock_guard lock(mutex_);
  auto [it, made] = widened_.try_emplace(name);
  if (made) {
    std::vector<float>& out = it->second;
    out.resize(source.size() / sizeof(uint16_t));
    for (std::size_t i = 0; i < out.size(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, source.data() + i * sizeof bits, sizeof bits);  // the data may be unaligned
      out[i] = halfToFloat(bits);
    }
  }
  return reinterpret_cast<const std::byte*>(it->second.data());
}

bool ConstantPacking::isWidened(const std::string& name, const void* data) {
  std::lock_guard lock(mutex_);
  const auto it = widened_.find(name);
  return it != widened_.end() && static_cast<const void*>(it->second.data()) == data;
}

}  // namespace qaic::kernels
