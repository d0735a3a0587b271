// SPDX-License-Identifier: Apache-2.0
// TensorProto decoding (initializers and the backend tests' .pb files).
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cstring>

#include "onnx/OnnxTensor.hpp"

namespace qaic::onnx {
namespace {

ImportedTensor parse(const ::onnx::TensorProto& proto) {
  const std::string bytes = proto.SerializeAsString();
  return parseTensorBytes(std::as_bytes(std::span(bytes.data(), bytes.size())), "t.pb");
}

TEST(OnnxTensor, RawDataIsCopied) {
  ::onnx::TensorProto proto;
  proto.set_data_type(::onnx::TensorProto::INT32);
  proto.add_dims(2);
  const int32_t values[2] = {7, -9};
  proto.set_raw_data(std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  const ImportedTensor t = parse(proto);
  EXPECT_EQ(t.dtype, ir::DType::Int32);
  EXPECT_EQ(t.dims, (ir::Dims{2}));
  ASSERT_EQ(t.data.size(), sizeof(values));
  EXPECT_EQ(std::memcmp(t.data.data(), values, sizeof(values)), 0);
}

TEST(OnnxTensor, TypedFieldsAreNarrowedToTheElementType) {
  ::onnx::TensorProto proto;
  proto.set_data_type(::onnx::TensorProto::INT8);
  proto.add_dims(3);
  for (int v : {-128, 0, 127}) proto.add_int32_data(v);
  const ImportedTensor t = parse(proto);
  ASSERT_EQ(t.data.size(), 3u);
  EXPECT_EQ(static_cast<int8_t>(t.data[0]), -128);
  EXPECT_EQ(static_cast<int8_t>(t.data[2]), 127);
}

TEST(OnnxTensor, ScalarHasNoDims) {
  ::onnx::TensorProto proto;
  proto.set_data_type(::onnx::TensorProto::DOUBLE);
  proto.add_double_data(2.5);
  const ImportedTensor t = parse(proto);
  EXPECT_TRUE(t.dims.empty());
  double v = 0;
  std::memcpy(&v, t.data.data(), sizeof v);
  EXPECT_EQ(v, 2.5);
}

TEST(OnnxTensor, UnsupportedTypesAndExternalDataAreErrors) {
  ::onnx::TensorProto strings;
  strings.set_data_type(::onnx::TensorProto::STRING);
  strings.add_string_data("a");
  EXPECT_THROW(parse(strings), ImportError);

  ::onnx::TensorProto external;
  external.set_data_type(::onnx::TensorProto::FLOAT);
  external.set_data_location(::onnx::TensorProto::EXTERNAL);
  EXPECT_THROW(parse(external), ImportError);

  ::onnx::TensorProto negative;
  negative.set_data_type(::onnx::TensorProto::FLOAT);
  negative.add_dims(-1);
  EXPECT_THROW(parse(negative), ImportError);
}

TEST(OnnxTensor, FileLargerThanTheLimitIsRefusedBeforeReading) {
  const std::string path = ::testing::TempDir() + "/onnx_tensor_limit.bin";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("0123456789", f);
  std::fclose(f);
  EXPECT_EQ(readFileBounded(path, 10).size(), 10u);
  try {
    readFileBounded(path, 9);
    ADD_FAILURE() << "no error";
  } catch (const ImportError& e) {
    EXPECT_NE(std::string(e.what()).find("more than the limit of 9"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

TEST(OnnxTensor, MissingFileIsAnError) { EXPECT_THROW(readTensorFile("/nonexistent/input_0.pb"), ImportError); }

}  // namespace
}  // namespace qaic::onnx
