// SPDX-License-Identifier: Apache-2.0
// What the data path needs to know about one program of a container: for every IO buffer its
// user type and layout, device format and place in the IO region, and where the runtime stages
// it in its own buffer objects (one to-device BO with the request descriptor and the inputs, one
// from-device BO with the outputs and the response descriptor). Derived once per InferenceSet.
// Also the one place where the API's dims (IoDims) become the IR's for the format library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <qaic/IoValidation.hpp>

#include "container/QpcImage.hpp"

namespace qaic::rt {

struct StagedBuffer {
  uint32_t mappingIndex = 0;  // IO-descriptor index (the BufferMapping's index)
  std::string name;
  bool isInput = true;
  ir::DType userType = ir::DType::Float;
  ir::UserLayout userLayout = ir::UserLayout::NCHW;
  ir::DeviceFormat deviceFormat;
  uint64_t deviceOffset = 0;   // in the IO region
  uint64_t deviceSize = 0;     // device-format bytes at full dims (4 KiB aligned)
  uint64_t stagingOffset = 0;  // in the input or output staging BO
};

struct ProgramLayout {
  uint32_t programIndex = 0;
  uint32_t numCores = 1;
  uint64_t doorbellAddress = 0;
  uint32_t doneSemaphore = 0;
  uint64_t requestDescriptorOffset = 0;
  uint64_t responseDescriptorOffset = 0;
  std::vector<StagedBuffer> buffers;       // by mapping index
  std::vector<BufferShapeRules> rules;     // by mapping index
  uint64_t inputStagingBytes = 0;          // request descriptor + inputs
  uint64_t outputStagingBytes = 0;         // outputs + response descriptor
  uint64_t requestDescriptorStaging = 0;   // offset in the input BO
  uint64_t responseDescriptorStaging = 0;  // offset in the output BO
  uint32_t elementsPerRequest = 0;         // worst case, every buffer present

  std::size_t inputCount() const;
  std::size_t outputCount() const;
};

// Throws Error(QS_INCOMPATIBLE) when the container has no such program or a buffer the
// runtime cannot stage (more buffers than a descriptor holds).
ProgramLayout makeProgramLayout(const container::QpcImage& image, uint32_t programIndex,
                                std::vector<BufferShapeRules> rules);

// `dims` as the IR (and so the format library) spells them.
ir::Dims toIrDims(const IoDims& dims);
// Bytes of `buffer`'s user data at `dims`, and of its device format at `dims`.
uint64_t userBytes(const StagedBuffer& buffer, const IoDims& dims);
uint64_t deviceBytes(const StagedBuffer& buffer, const IoDims& dims);

}  // namespace qaic::rt
