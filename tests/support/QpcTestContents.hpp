// SPDX-License-Identifier: Apache-2.0
// A program container whose every field has a distinctive, non-default value, for the
// round-trip and corruption tests of the container.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "container/QpcModel.hpp"

namespace qaic::container::testing {

struct SampleContents {
  std::string payload = R"({"ops":[]})";
  std::vector<std::byte> weightA;  // 2x3 float
  std::vector<std::byte> weightB;  // 5 int8
  QpcContents contents;

  SampleContents() {
    weightA.resize(6 * 4);
    for (std::size_t i = 0; i < weightA.size(); ++i) weightA[i] = std::byte(i * 7 + 1);
    weightB = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}, std::byte{5}};

    QpcBuffer in;
    in.index = 0;
    in.io.bufferName = "image";
    in.io.tensor = "x";
    in.io.direction = ir::Direction::In;
    in.io.dtype = ir::DType::UInt8;
    in.io.dims = {2, 3, 4, 8};
    in.io.userLayout = ir::UserLayout::NHWC;
    in.io.isPartialAllowed = true;
    in.io.skipPartialHeader = true;
    in.io.allowSkip = true;
    in.io.deviceFormat = {ir::DeviceLayout::DHWC, ir::DType::Float16};
    in.size = 2 * 3 * 4 * 8;
    in.dataType = rt::BUFFER_DATA_TYPE_UINT8;
    in.deviceOffset = 12288;
    in.deviceSize = 4096;

    QpcBuffer out;
    out.index = 1;
    out.io.bufferName = "scores";
    out.io.tensor = "y";
    out.io.direction = ir::Direction::Out;
    out.io.dtype = ir::DType::Int64;
    out.io.dims = {2, 10};
    out.io.deviceFormat = {ir::DeviceLayout::Flat, ir::DType::Int64};
    out.size = 2 * 10 * 8;
    out.dataType = rt::BUFFER_DATA_TYPE_INT64I;
    out.deviceOffset = 16384;
    out.deviceSize = 8192;

    contents.buffers = {in, out};
    contents.allowedShapes = {{{1, 3, 4, 8}, {2, 10}}, {{2, 3, 4, 4}, {2, 10}}};

    QpcProgram p;
    p.name = "net";
    p.programIndex = 0;
    p.numCores = 3;
    p.batchSize = 2;
    p.numSemaphores = 4;
    p.numMulticastIds = 2;
    p.flags = kProgramFlagFp16Constants;
    p.doneSemaphore = 3;
    p.totalRequiredMemory = 1 << 20;
    p.ioRegionSize = 24576;
    p.doorbellAddress = 8192;
    p.requestDescriptorOffset = 0;
    p.responseDescriptorOffset = 4096;
    p.bufferIndices = {1, 0};
    p.payload = std::as_bytes(std::span(payload.data(), payload.size()));
    contents.programs = {p};

    QpcConstant a;
    a.index = 0;
    a.tensor = {"conv_w", ir::DType::Float, {2, 3}, weightA};
    QpcConstant b;
    b.index = 1;
    b.tensor = {"bias", ir::DType::Int8, {5}, weightB};
    contents.constants = {a, b};
  }
};

// A float retained pair `name` / `name`_RetainedState of `bytes` bytes.
inline QpcRetainedState retainedPair(const std::string& name, uint64_t bytes) {
  QpcRetainedState r;
  r.name = name;
  r.stateName = name + "_RetainedState";
  r.tensor = name;
  r.stateTensor = name + "_RetainedState";
  r.dtype = ir::DType::Float;
  r.dims = {static_cast<int64_t>(bytes / 4)};
  r.size = bytes;
  return r;
}

}  // namespace qaic::container::testing
