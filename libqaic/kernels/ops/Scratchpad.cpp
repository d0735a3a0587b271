// SPDX-License-Identifier: Apache-2.0
#include "kernels/ops/Scratchpad.hpp"

#include <algorithm>
#include <new>

namespace qaic::kernels {
namespace {

// The alignment oneDNN gives memory it allocates itself (a cache line); its kernels may rely on it.
constexpr std::align_val_t kAlignment{64};

}  // namespace

dnnl::memory SharedScratchpad::attach(const dnnl::primitive_desc_base& pd, const dnnl::engine& engine) {
  return attach(pd.scratchpad_desc(), engine);
}

dnnl::memory SharedScratchpad::attach(const dnnl::memory::desc& md, const dnnl::engine& engine) {
  constexpr auto kAlign = static_cast<std::size_t>(kAlignment);
  dnnl::memory memory(md, engine, DNNL_MEMORY_NONE);
  const std::size_t offset = (offset_ + kAlign - 1) / kAlign * kAlign;
  offset_ = offset + md.get_size();
  bytes_ = std::max(bytes_, offset_);
  users_.push_back({memory, offset});
  return memory;
}

void SharedScratchpad::bind() {
  if (bytes_ > capacity_) {
    buffer_.reset(static_cast<std::byte*>(::operator new(bytes_, kAlignment)));
    capacity_ = bytes_;
  }
  for (User& user : users_) user.memory.set_data_handle(buffer_.get() + user.offset);
}

void SharedScratchpad::AlignedDelete::operator()(std::byte* p) const { ::operator delete(p, kAlignment); }

}  // namespace qaic::kernels
