// SPDX-License-Identifier: Apache-2.0
#include <qaic/Qpc.hpp>

#include <cstring>
#include <mutex>
#include <new>

#include "runtime/iodesc/VendorIoDesc.hpp"
#include "runtime/loading/QAicQpcObj.hpp"
#include "runtime/loading/QpcMappings.hpp"

namespace qaic::rt {

namespace {

// A copy of a caller's buffer, 64-byte aligned so that constant data inside it is aligned as
// it is in a mapped file.
struct AlignedBytes {
  static constexpr std::align_val_t kAlignment{64};
  struct Free {
    void operator()(std::byte* p) const { ::operator delete[](p, kAlignment); }
  };
  std::unique_ptr<std::byte[], Free> data;
  std::size_t size = 0;
};

}  // namespace

struct Qpc::Impl {
  AlignedBytes copy;  // empty when the image maps a file
  std::unique_ptr<container::QpcImage> image;
  QpcInfo info;
  BufferMappings mappings;
  BufferMappings dmaMappings;
  v2::BufferMappings mappingsV2;
  QData ioDescriptor;
  QAicQpcObj object;
  // The vendor's view, made on first use: only its Python API reads it, so a load by any other
  // client (qaic-runner, Session, every InferenceSet) does not build and serialize it.
  std::once_flag vendorOnce;
  std::vector<VendorIoBinding> vendorBindings;
  std::string vendorIoDescriptor;

  explicit Impl(std::unique_ptr<container::QpcImage> img, AlignedBytes bytes = {})
      : copy(std::move(bytes)), image(std::move(img)) {
    info = toQpcInfo(*image);
    mappings = toBufferMappings(*image);
    dmaMappings = toDmaBufferMappings(*image);
    mappingsV2 = toBufferMappingsV2(*image);
    const auto io = image->ioDescriptorBytes();
    // QData's pointer is non-const by seed 001's definition; the bytes stay read-only.
    ioDescriptor.data = const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(io.data()));
    ioDescriptor.size = io.size();
    object.image = image.get();
  }

  void makeVendorView() {
    std::call_once(vendorOnce, [this] {
      vendorBindings = vendorIoBindings(*image);
      vendorIoDescriptor = serializeVendorIoDesc(vendorBindings,
                                                 image->programs().empty() ? "" : image->programs().front().name);
    });
  }
};

std::shared_ptr<Qpc> Qpc::Factory(const std::string& basePath, const std::string& filename) {
  const std::string path = basePath.empty() ? filename : basePath + "/" + filename;
  try {
    return std::shared_ptr<Qpc>(new Qpc(std::make_unique<Impl>(container::QpcImage::open(path))));
  } catch (const container::QpcFormatError& e) {
    throw QpcError(e.code() == container::QpcErrorCode::Io ? QpcError::Code::Io : QpcError::Code::Format, e.what());
  }
}

std::shared_ptr<Qpc> Qpc::Factory(const uint8_t* buffer, std::size_t size) {
  if (buffer == nullptr && size != 0) throw QpcError(QpcError::Code::Format, "<memory>: buffer is null");
  AlignedBytes bytes;
  bytes.data.reset(static_cast<std::byte*>(::operator new[](size == 0 ? 1 : size, AlignedBytes::kAlignment)));
  bytes.size = size;
  if (size != 0) std::memcpy(bytes.data.get(), buffer, size);
  try {
    auto image = container::QpcImage::fromBytes({bytes.data.get(), bytes.size});
    return std::shared_ptr<Qpc>(new Qpc(std::make_unique<Impl>(std::move(image), std::move(bytes))));
  } catch (const container::QpcFormatError& e) {
    throw QpcError(QpcError::Code::Format, e.what());
  }
}

Qpc::Qpc(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Qpc::~Qpc() = default;

const QpcInfo& Qpc::getInfo() const { return impl_->info; }
const BufferMappings& Qpc::getBufferMappings() const { return impl_->mappings; }
const v2::BufferMappings& Qpc::getBufferMappingsV2() const { return impl_->mappingsV2; }
const BufferMappings& Qpc::getBufferMappingsDma() const { return impl_->dmaMappings; }
const QData* Qpc::getIoDescriptor() const { return &impl_->ioDescriptor; }
const std::string& Qpc::getVendorIoDescriptor() const {
  impl_->makeVendorView();
  return impl_->vendorIoDescriptor;
}
const std::vector<VendorIoBinding>& Qpc::getVendorIoBindings() const {
  impl_->makeVendorView();
  return impl_->vendorBindings;
}
const QAicQpcObj* Qpc::get() const { return &impl_->object; }
const uint8_t* Qpc::buffer() const { return reinterpret_cast<const uint8_t*>(impl_->image->bytes().data()); }
std::size_t Qpc::size() const { return impl_->image->bytes().size(); }

}  // namespace qaic::rt
