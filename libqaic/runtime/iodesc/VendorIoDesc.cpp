// SPDX-License-Identifier: Apache-2.0
#include "runtime/iodesc/VendorIoDesc.hpp"

#include "QAicApi.pb.h"

namespace qaic::rt {

int vendorDataTypeCode(QAicBufferDataTypeEnum type) {
  switch (type) {
    case BUFFER_DATA_TYPE_FLOAT: return aicapi::FLOAT_TYPE;
    case BUFFER_DATA_TYPE_FLOAT16: return aicapi::FLOAT_16_TYPE;
    case BUFFER_DATA_TYPE_INT8Q: return aicapi::INT8_Q_TYPE;
    case BUFFER_DATA_TYPE_UINT8Q: return aicapi::UINT8_Q_TYPE;
    case BUFFER_DATA_TYPE_INT16Q: return aicapi::INT16_Q_TYPE;
    case BUFFER_DATA_TYPE_INT32Q: return aicapi::INT32_Q_TYPE;
    case BUFFER_DATA_TYPE_INT32I: return aicapi::INT32_I_TYPE;
    case BUFFER_DATA_TYPE_INT64I: return aicapi::INT64_I_TYPE;
    case BUFFER_DATA_TYPE_INT8: return aicapi::INT8_TYPE;
    // The vendor's types have no plain uint8: its quantized uint8 is the same bytes (numpy uint8
    // in its callers' tables).
    case BUFFER_DATA_TYPE_UINT8: return aicapi::UINT8_Q_TYPE;
    case BUFFER_DATA_TYPE_FLOAT64C:
    case BUFFER_DATA_TYPE_INVAL: break;
  }
  return aicapi::TYPE_INVALID;
}

std::vector<VendorIoBinding> vendorIoBindings(const container::QpcImage& image) {
  const auto combinations = image.allShapeCombinations();
  // Combination 0 is the full dims: the specialization with every buffer at its largest, or,
  // when no specialization has those dims, a combination of its own that no specialization
  // asked for (combination 1 is then the program's own payload). The vendor lists only what the
  // specializations give.
  std::size_t firstListed = 0;
  if (combinations.size() > 1 && !image.programs().empty()) {
    const auto& program = image.programs().front();
    auto runsOwnPayload = [&](uint32_t c) { return image.payloadFor(program, c).data() == program.payload.data(); };
    bool specialized = false;
    for (uint32_t c = 1; c < combinations.size(); ++c) specialized = specialized || !runsOwnPayload(c);
    if (specialized && runsOwnPayload(1)) firstListed = 1;
  }
  std::vector<VendorIoBinding> inputs, outputs;
  for (std::size_t m = 0; m < image.buffers().size(); ++m) {
    const auto& buffer = image.buffers()[m];
    VendorIoBinding binding;
    binding.name = buffer.io.bufferName;
    binding.ioType = buffer.io.direction == ir::Direction::In ? BUFFER_IO_TYPE_INPUT : BUFFER_IO_TYPE_OUTPUT;
    binding.dataType = buffer.dataType;
    binding.dims = buffer.io.dims;
    binding.size = buffer.size;
    binding.isPartialBufferAllowed = buffer.io.isPartialAllowed;
    binding.mappingIndex = static_cast<int32_t>(m);
    for (std::size_t c = firstListed; c < combinations.size(); ++c)
      binding.allowedDims.push_back(combinations[c][buffer.index]);
    (binding.ioType == BUFFER_IO_TYPE_INPUT ? inputs : outputs).push_back(std::move(binding));
  }
  const std::size_t listed = combinations.size() - firstListed;
  auto retained = [&](const container::QpcRetainedState& state, bool input) {
    VendorIoBinding binding;
    binding.name = input ? state.name : state.stateName;
    binding.ioType = input ? BUFFER_IO_TYPE_INPUT : BUFFER_IO_TYPE_OUTPUT;
    binding.dataType = container::bufferDataTypeFor(state.dtype);
    binding.dims = state.dims;
    binding.size = state.size;
    binding.retained = true;
    // Always passed empty (skipped): callers that check this flag before skipping see it allowed.
    binding.isPartialBufferAllowed = true;
    binding.allowedDims.assign(listed, state.dims);  // the state never changes shape
    return binding;
  };
  std::vector<VendorIoBinding> all;
  all.reserve(inputs.size() + outputs.size() + 2 * image.retainedState().size());
  for (auto& binding : inputs) all.push_back(std::move(binding));
  for (const auto& state : image.retainedState()) all.push_back(retained(state, true));
  for (auto& binding : outputs) all.push_back(std::move(binding));
  for (const auto& state : image.retainedState()) all.push_back(retained(state, false));
  for (std::size_t i = 0; i < all.size(); ++i) all[i].index = static_cast<uint32_t>(i);
  return all;
}

std::string serializeVendorIoDesc(const std::vector<VendorIoBinding>& bindings, const std::string& programName) {
  aicapi::IoDesc desc;
  desc.set_program_name(programName);
  aicapi::IoSet* set = desc.add_io_sets();
  set->set_name("default");
  for (const auto& b : bindings) {
    aicapi::IoBinding* binding = set->add_bindings();
    binding->set_name(b.name);
    binding->set_index(b.index);
    binding->set_type(static_cast<aicapi::bufferIoDataTypeEnum>(vendorDataTypeCode(b.dataType)));
    binding->set_dir(b.ioType == BUFFER_IO_TYPE_INPUT ? aicapi::BUFFER_IO_TYPE_INPUT : aicapi::BUFFER_IO_TYPE_OUTPUT);
    for (auto d : b.dims) binding->add_dims(static_cast<int32_t>(d));
    binding->set_size(static_cast<uint32_t>(b.size));
    binding->set_is_partial_buf_allowed(b.isPartialBufferAllowed);
    binding->set_is_valid(true);
  }
  *desc.mutable_selected_set() = *set;
  const std::size_t combinations = bindings.empty() ? 0 : bindings.front().allowedDims.size();
  for (std::size_t c = 0; c < combinations; ++c) {
    aicapi::IoShapes* shapes = desc.add_allowed_shapes();
    for (const auto& b : bindings) {
      aicapi::TensorShape* shape = shapes->add_shapes();
      shape->set_type(static_cast<aicapi::bufferIoDataTypeEnum>(vendorDataTypeCode(b.dataType)));
      for (auto d : b.allowedDims[c]) shape->add_dims(static_cast<int32_t>(d));
    }
  }
  return desc.SerializeAsString();
}

}  // namespace qaic::rt
