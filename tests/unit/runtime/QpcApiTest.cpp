// SPDX-License-Identifier: Apache-2.0
// The public seed 001 Qpc API over containers compiled by qaic-exec (tests/support CompileProgram).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <type_traits>

#include <qaic/Qpc.hpp>

#include "CompileProgram.hpp"
#include "ContainerFiles.hpp"
#include "DeviceData.hpp"
#include "QpcTestContents.hpp"
#include "TempDir.hpp"
#include "TestModels.hpp"
#include "runtime/loading/QAicQpcObj.hpp"

namespace qaic::rt {
namespace {

using container::testing::stageModel;

class QpcApi : public ::testing::Test {
 protected:
  void compileModel(const std::string& name, bool fp16 = false, int64_t batch = 0) {
    std::vector<std::string> options = {"-aic-num-cores=2"};
    if (fp16) options.push_back("-convert-to-fp16");
    if (batch != 0) options.push_back("-batchsize=" + std::to_string(batch));
    testing::compileProgram(stageModel(name, dir_.path()), outDir(), options);
  }
  std::string outDir() const { return (dir_.path() / "out").string(); }

  testing::TempDir dir_{"qpc-api"};
};

TEST_F(QpcApi, InfoAndMappingsOfTheTinyNetwork) {
  compileModel("tiny");
  const auto qpc = Qpc::Factory(outDir());
  const QpcInfo& info = qpc->getInfo();
  ASSERT_EQ(info.program.size(), 1u);
  const QpcProgramInfo& p = info.program[0];
  EXPECT_EQ(p.name, "tiny");
  EXPECT_EQ(p.numCores, 2u);
  EXPECT_EQ(p.programIndex, 0u);
  EXPECT_GT(p.size, 0u);
  EXPECT_EQ(p.batchSize, 1u);
  EXPECT_EQ(p.numSemaphores, 1u);
  EXPECT_EQ(p.numMcIds, 0u);
  // The device protocol's fields stay inside the container (libqaic's private view).
  const container::QpcProgram& program = qpc->get()->image->programs()[0];
  EXPECT_EQ(program.requestDescriptorOffset, 0u);
  EXPECT_EQ(program.responseDescriptorOffset, 4096u);
  EXPECT_EQ(program.doorbellAddress, 8192u);
  EXPECT_EQ(program.ioRegionSize, 12288u + 2 * 4096u);
  EXPECT_GE(p.totalRequiredMemory, program.ioRegionSize + 16);
  EXPECT_FALSE(p.fp16Constants);
  EXPECT_TRUE(info.retainedState.empty());
  ASSERT_EQ(p.bufferMappings.size(), 2u);

  const BufferMappings& mappings = qpc->getBufferMappings();
  ASSERT_EQ(mappings.size(), 2u);
  EXPECT_EQ(mappings[0].bufferName, "input");
  EXPECT_EQ(mappings[0].index, 0u);
  EXPECT_EQ(mappings[0].ioType, BUFFER_IO_TYPE_INPUT);
  EXPECT_EQ(mappings[0].size, 16u);
  EXPECT_EQ(mappings[0].dataType, BUFFER_DATA_TYPE_FLOAT);
  EXPECT_FALSE(mappings[0].isPartialBufferAllowed);
  EXPECT_EQ(mappings[1].bufferName, "output");
  EXPECT_EQ(mappings[1].ioType, BUFFER_IO_TYPE_OUTPUT);
  // Flat float buffers: the device moves the user's bytes, so the DMA view is the heap view.
  const BufferMappings& dma = qpc->getBufferMappingsDma();
  ASSERT_EQ(dma.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(dma[i].bufferName, mappings[i].bufferName);
    EXPECT_EQ(dma[i].index, mappings[i].index);
    EXPECT_EQ(dma[i].ioType, mappings[i].ioType);
    EXPECT_EQ(dma[i].size, mappings[i].size);
    EXPECT_EQ(dma[i].dataType, mappings[i].dataType);
  }

  ASSERT_EQ(info.constants.size(), 1u);
  EXPECT_EQ(info.constants[0].name, "b");
  EXPECT_EQ(info.constants[0].index, 0u);
  EXPECT_EQ(info.constants[0].size, 16u);

  // The constant holds the weights file's values, mapped from the container.
  const auto* image = qpc->get()->image;
  ASSERT_NE(image, nullptr);
  const auto* bias = image->findConstant("b");
  ASSERT_NE(bias, nullptr);
  float values[4];
  std::memcpy(values, bias->tensor.data.data(), sizeof values);
  EXPECT_EQ(values[0], 0.5f);
  EXPECT_EQ(values[3], -3.0f);
  EXPECT_NE(container::QpcImage::payloadText(image->programs()[0]).find("\"relu\""), std::string::npos);
}

TEST_F(QpcApi, BufferMappingsV2CarryShapesAndFlags) {
  compileModel("batchable", false, 8);
  const auto qpc = Qpc::Factory(outDir());
  const v2::BufferMappings& v2 = qpc->getBufferMappingsV2();
  ASSERT_EQ(v2.size(), 2u);
  EXPECT_EQ(v2[0].bufferName, "frames");
  EXPECT_TRUE(v2[0].isPartialBufferAllowed);
  EXPECT_TRUE(v2[0].skipPartialHeader);
  EXPECT_TRUE(v2[0].allowSkip);
  EXPECT_EQ(v2[0].ioShapes.defaultDims, (std::vector<int64_t>{8, 3, 8, 8}));
  ASSERT_EQ(v2[0].ioShapes.allowedDims.size(), 2u);
  EXPECT_EQ(v2[0].ioShapes.allowedDims[0], (std::vector<int64_t>{8, 3, 8, 8}));
  EXPECT_EQ(v2[0].ioShapes.allowedDims[1], (std::vector<int64_t>{8, 3, 4, 8}));
  EXPECT_EQ(v2[0].size, 8u * 3 * 8 * 8 * 4);
  // The DMA view is the device's: the FP16 DWHC input moves half the heap bytes as FLOAT16, the
  // float output its float bytes; names, indices, directions and partial flags are the heap's.
  const BufferMappings& dma = qpc->getBufferMappingsDma();
  ASSERT_EQ(dma.size(), 2u);
  EXPECT_EQ(dma[0].bufferName, "frames");
  EXPECT_EQ(dma[0].dataType, BUFFER_DATA_TYPE_FLOAT16);
  EXPECT_EQ(dma[0].size, 8u * 3 * 8 * 8 * 2);
  EXPECT_TRUE(dma[0].isPartialBufferAllowed);
  EXPECT_EQ(dma[1].ioType, BUFFER_IO_TYPE_OUTPUT);
  EXPECT_EQ(dma[1].dataType, BUFFER_DATA_TYPE_FLOAT);
  EXPECT_EQ(dma[1].size, v2[1].size);
  ASSERT_EQ(qpc->getInfo().program[0].bufferMappingsDma.size(), 2u);
  EXPECT_EQ(qpc->getInfo().program[0].bufferMappingsDma[0].size, dma[0].size);
  EXPECT_EQ(qpc->getInfo().program[0].batchSize, 8u);
  // 1536 elements: the FP16 DWHC input needs 3072 bytes (one 4 KiB page), the float output
  // 6144 bytes (two pages), placed one after the other after the descriptors and doorbell.
  const auto& buffers = qpc->get()->image->buffers();
  EXPECT_EQ(buffers[0].io.deviceFormat.layout, ir::DeviceLayout::DWHC);
  EXPECT_EQ(buffers[0].deviceOffset, 12288u);
  EXPECT_EQ(buffers[0].deviceSize, 4096u);
  EXPECT_EQ(buffers[1].deviceOffset, 16384u);
  EXPECT_EQ(buffers[1].deviceSize, 8192u);
  EXPECT_EQ(qpc->get()->image->programs()[0].ioRegionSize, 24576u);
}

TEST(QpcApiRetainedState, InfoNamesTheInputsKeptOnTheDevice) {
  container::testing::SampleContents sample;
  container::QpcRetainedState state;
  state.name = "past_key.0";
  state.stateName = "past_key.0_RetainedState";
  state.tensor = "past_key_0";
  state.stateTensor = "present_key_0";
  state.dims = {1, 2, 8, 4};
  state.size = 1 * 2 * 8 * 4 * 4;
  sample.contents.retainedState = {state};
  const auto bytes = container::serializeQpc(sample.contents);
  const auto qpc = Qpc::Factory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  EXPECT_EQ(qpc->getInfo().retainedState, std::vector<std::string>{"past_key.0"});
  for (const auto& mapping : qpc->getBufferMappings()) EXPECT_NE(mapping.bufferName, "past_key.0");
}

TEST_F(QpcApi, ConvertToFp16StoresHalfConstantsAndMarksTheProgram) {
  compileModel("tiny", true);
  const auto qpc = Qpc::Factory(outDir());
  EXPECT_TRUE(qpc->getInfo().program[0].fp16Constants);
  ASSERT_EQ(qpc->getInfo().constants.size(), 1u);
  EXPECT_EQ(qpc->getInfo().constants[0].size, 8u);
  const auto* bias = qpc->get()->image->findConstant("b");
  EXPECT_EQ(bias->tensor.dtype, ir::DType::Float16);
  uint16_t halves[4];
  std::memcpy(halves, bias->tensor.data.data(), sizeof halves);
  EXPECT_EQ(kernels::halfToFloat(halves[1]), -1.0f);
  EXPECT_EQ(kernels::halfToFloat(halves[2]), 2.0f);
  // Seed 003: the [1,4] input (no convolution reads it) lives on the device flat in FP16, the
  // output comes back flat float; the user's side stays float, the DMA view shows the device's.
  const auto& buffers = qpc->get()->image->buffers();
  EXPECT_EQ(buffers[0].io.deviceFormat.layout, ir::DeviceLayout::Flat);
  EXPECT_EQ(buffers[0].io.deviceFormat.elementType, ir::DType::Float16);
  EXPECT_EQ(buffers[1].io.deviceFormat.elementType, ir::DType::Float);
  EXPECT_EQ(qpc->getBufferMappings()[0].dataType, BUFFER_DATA_TYPE_FLOAT);
  EXPECT_EQ(qpc->getBufferMappingsDma()[0].dataType, BUFFER_DATA_TYPE_FLOAT16);
  EXPECT_EQ(qpc->getBufferMappingsDma()[0].size, 8u);
}

TEST_F(QpcApi, ConvertToFp16WithFlatIoLayoutKeepsTheUsersType) {
  testing::compileProgram(stageModel("tiny", dir_.path()), outDir(), {"-convert-to-fp16", "-fp16-io-layout=flat"});
  const auto qpc = Qpc::Factory(outDir());
  EXPECT_TRUE(qpc->getInfo().program[0].fp16Constants);
  for (const auto& buffer : qpc->get()->image->buffers()) {
    EXPECT_EQ(buffer.io.deviceFormat.layout, ir::DeviceLayout::Flat);
    EXPECT_EQ(buffer.io.deviceFormat.elementType, ir::DType::Float);
  }
  EXPECT_EQ(qpc->getBufferMappingsDma()[0].size, qpc->getBufferMappings()[0].size);
}

TEST_F(QpcApi, FactoryFromBufferMatchesFactoryFromFile) {
  compileModel("tiny");
  QpcFile file(outDir());
  file.load();
  ASSERT_GT(file.size(), 0u);
  EXPECT_EQ(file.getBuffer().size, file.size());
  const auto fromBuffer = Qpc::Factory(file.data(), file.size());
  const auto fromFile = Qpc::Factory(outDir(), "programqpc.bin");
  EXPECT_EQ(fromBuffer->size(), fromFile->size());
  EXPECT_EQ(std::memcmp(fromBuffer->buffer(), fromFile->buffer(), fromFile->size()), 0);
  EXPECT_NE(fromBuffer->buffer(), file.data());  // the factory keeps its own copy
  const QData* io = fromFile->getIoDescriptor();
  ASSERT_NE(io, nullptr);
  EXPECT_EQ(io->size, 2u * 112u);
  EXPECT_GE(io->data, fromFile->buffer());
  EXPECT_LE(io->data + io->size, fromFile->buffer() + fromFile->size());
  EXPECT_EQ(fromBuffer->getBufferMappings().size(), fromFile->getBufferMappings().size());
}

TEST_F(QpcApi, MissingFileIsAnIoError) {
  try {
    Qpc::Factory(dir_.path().string());
    FAIL() << "loaded a missing container";
  } catch (const QpcError& e) {
    EXPECT_EQ(e.code(), QpcError::Code::Io);
    EXPECT_EQ(e.status(), QS_ERROR);
    EXPECT_NE(std::string(e.what()).find("programqpc.bin"), std::string::npos);
  }
  QpcFile file(dir_.path().string());
  EXPECT_THROW(file.load(), QpcError);
}

TEST_F(QpcApi, CorruptBufferIsAFormatErrorNamingTheField) {
  compileModel("tiny");
  QpcFile file(outDir());
  file.load();
  std::vector<uint8_t> bytes(file.data(), file.data() + file.size());
  bytes[40] ^= 0xFF;  // the checksum
  try {
    Qpc::Factory(bytes.data(), bytes.size());
    FAIL() << "loaded a corrupt container";
  } catch (const QpcError& e) {
    EXPECT_EQ(e.code(), QpcError::Code::Format);
    EXPECT_EQ(e.status(), QS_INVAL);
    EXPECT_NE(std::string(e.what()).find("header.crc32"), std::string::npos);
  }
  EXPECT_THROW(Qpc::Factory(nullptr, 10), QpcError);
  EXPECT_THROW(Qpc::Factory(bytes.data(), 0), QpcError);
}

// Seed 001: Qpc and QpcFile are neither copyable nor movable.
static_assert(!std::is_copy_constructible_v<Qpc> && !std::is_move_constructible_v<Qpc>);
static_assert(!std::is_copy_assignable_v<Qpc> && !std::is_move_assignable_v<Qpc>);
static_assert(!std::is_copy_constructible_v<QpcFile> && !std::is_move_constructible_v<QpcFile>);
static_assert(!std::is_copy_assignable_v<QpcFile> && !std::is_move_assignable_v<QpcFile>);
static_assert(std::is_base_of_v<BufferMapping, v2::BufferMapping>);

TEST(BufferMapping, ConstructorsSetEveryMember) {
  const BufferMapping empty;
  EXPECT_EQ(empty.ioType, BUFFER_IO_TYPE_INVAL);
  EXPECT_EQ(empty.dataType, BUFFER_DATA_TYPE_INVAL);
  EXPECT_EQ(empty.size, 0u);
  const BufferMapping full("in", 3, BUFFER_IO_TYPE_INPUT, 64, true, BUFFER_DATA_TYPE_INT8Q);
  EXPECT_EQ(full.bufferName, "in");
  EXPECT_EQ(full.index, 3u);
  EXPECT_EQ(full.ioType, BUFFER_IO_TYPE_INPUT);
  EXPECT_EQ(full.size, 64u);
  EXPECT_TRUE(full.isPartialBufferAllowed);
  EXPECT_EQ(full.dataType, BUFFER_DATA_TYPE_INT8Q);
  EXPECT_EQ(BUFFER_DATA_TYPE_INVAL, 11u);
}

}  // namespace
}  // namespace qaic::rt
