#include "kernels/ops/Scratchpad.hpp"

#include <algorithm>
#include <new>

namespace qaic::kernels {
namespace {

// The alignment oneDNN gives memory it allocates itself (a cache line); its kernels may rely on it.
constexpr std::align_val_t kAlignment{64};

}  // namespace

dnnl::memory SharedScratchpad::attach(const dnnl::primitive_desc_base& pd, const dnnl::engine& engine) {
  const dnnl::memory::desc md = pd.scratchpad_desc();
  dnnl::memory memory(md, engine, DNNL_MEMORY_NONE);
  bytes_ = std::max(bytes_, md.get_size());
  users_.push_back(memory);
  return memory;
}

void SharedScratchpad::bind() {
  if (bytes_ > capacity_) {
    buffer_.reset(static_cast<std::byte*>(::operator new(bytes_, kAlignment)));
    capacity_ = bytes_;
  }
  for (dnnl::memory& memory : users_) memory.set_data_handle(buffer_.get());
}

void SharedScratchpad::AlignedDelete::operator()(std::byte* p) const { ::operator delete(p, kAlignment); }

}  // namespace qaic::kernels
