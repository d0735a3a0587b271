// SPDX-License-Identifier: Apache-2.0
// The vendor IO descriptor of Qpc::getVendorIoDescriptor(), parsed with the C++ classes generated
// from the runtime's QAicApi.proto, against the public bindings and mappings of the same
// container (compiled by qaic-exec); and the vendor's type codes of every runtime element type.
#include <gtest/gtest.h>

#include <qaic/Qpc.hpp>

#include "CompileProgram.hpp"
#include "QAicApi.pb.h"
#include "TempDir.hpp"
#include "TestModels.hpp"
#include "runtime/iodesc/VendorIoDesc.hpp"

namespace qaic::rt {
namespace {

TEST(VendorIoDesc, TypeCodesAreTheVendorsForEveryExchangedType) {
  EXPECT_EQ(vendorDataTypeCode(BUFFER_DATA_TYPE_FLOAT), aicapi::FLOAT_TYPE);
  EXPECT_EQ(vendorDataTypeCode(BUFFER_DATA_TYPE_FLOAT16), aicapi::FLOAT_16_TYPE);
  EXPECT_EQ(vendorDataTypeCode(BUFFER_DATA_TYPE_INT8Q), aicapi::INT8_Q_TYPE);
  EXPECT_EQ(vendorDataTypeCode(BUFFER_DATA_TYPE_UINT8Q), aicapi::UINT8_Q_TYPE);
  EXPECT_EQ(vendorDataTypeCode(BUFFER_DATA_TYPE_INT16Q), aicapi::INT16_Q_TYPE);
  EXPECT_EQ(vendorDataTypeCode(BUFFER_DATA_TYPE_INT32Q), aicapi::INT32_Q_TYPE);
  EXPECT_EQ(vendorDataTypeCode(BUFFER_DATA_TYPE_INT32I), aicapi::INT32_I_TYPE);
  EXPECT_EQ(vendorDataTypeCode(BUFFER_DATA_TYPE_INT64I), aicapi::INT64_I_TYPE);
  EXPECT_EQ(vendorDataTypeCode(BUFFER_DATA_TYPE_INT8), aicapi::INT8_TYPE);
  EXPECT_EQ(vendorDataTypeCode(BUFFER_DATA_TYPE_UINT8), aicapi::UINT8_Q_TYPE);  // the same bytes
  EXPECT_EQ(vendorDataTypeCode(BUFFER_DATA_TYPE_FLOAT64C), aicapi::TYPE_INVALID);
  EXPECT_EQ(vendorDataTypeCode(BUFFER_DATA_TYPE_INVAL), aicapi::TYPE_INVALID);
}

TEST(VendorIoDesc, TheDescriptorIsTheBindingsOfTheContainer) {
  testing::TempDir dir("vendor-iodesc");
  const auto out = dir.path() / "out";
  testing::compileProgram(container::testing::stageModel("tiny", dir.path()), out);
  const auto qpc = Qpc::Factory(out.string());

  aicapi::IoDesc desc;
  ASSERT_TRUE(desc.ParseFromString(qpc->getVendorIoDescriptor()));
  ASSERT_EQ(desc.io_sets_size(), 1);
  EXPECT_EQ(desc.io_sets(0).name(), "default");
  EXPECT_EQ(desc.selected_set().SerializeAsString(), desc.io_sets(0).SerializeAsString());
  EXPECT_EQ(desc.program_name(), qpc->getInfo().program.at(0).name);

  const auto& bindings = qpc->getVendorIoBindings();
  const auto& mappings = qpc->getBufferMappingsV2();
  ASSERT_EQ(bindings.size(), 2u);
  ASSERT_EQ(desc.selected_set().bindings_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const auto& parsed = desc.selected_set().bindings(i);
    const auto& binding = bindings[i];
    const auto& mapping = mappings.at(binding.mappingIndex);
    EXPECT_EQ(parsed.name(), mapping.bufferName);
    EXPECT_EQ(parsed.index(), static_cast<uint32_t>(i));
    EXPECT_EQ(parsed.size(), mapping.size);
    EXPECT_EQ(parsed.type(), vendorDataTypeCode(mapping.dataType));
    EXPECT_EQ(parsed.dir(),
              mapping.ioType == BUFFER_IO_TYPE_INPUT ? aicapi::BUFFER_IO_TYPE_INPUT : aicapi::BUFFER_IO_TYPE_OUTPUT);
    EXPECT_EQ(std::vector<int64_t>(parsed.dims().begin(), parsed.dims().end()), mapping.ioShapes.defaultDims);
    EXPECT_TRUE(parsed.is_valid());
    EXPECT_FALSE(binding.retained);
  }
  EXPECT_EQ(desc.selected_set().bindings(0).name(), "input");
  EXPECT_EQ(desc.selected_set().bindings(1).name(), "output");
  ASSERT_EQ(desc.allowed_shapes_size(), 1);  // no specializations: the full dims alone
  EXPECT_EQ(desc.allowed_shapes(0).shapes_size(), 2);
  EXPECT_EQ(desc.allowed_shapes(0).shapes(1).dims_size(), 2);

  // The same bytes from a copy of the container in memory.
  const auto copy = Qpc::Factory(qpc->buffer(), qpc->size());
  EXPECT_EQ(copy->getVendorIoDescriptor(), qpc->getVendorIoDescriptor());
}

}  // namespace
}  // namespace qaic::rt
