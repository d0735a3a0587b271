// SPDX-License-Identifier: Apache-2.0
#include "InputSource.hpp"

#include <cstring>
#include <random>
#include <stdexcept>

#include <qaic/Float16.hpp>
#include <qaic/IoValidation.hpp>

namespace qaic::runner {
namespace {

using qaic::rt::v2::BufferMappings;

bool isInput(const qaic::rt::v2::BufferMapping& m) { return m.ioType == qaic::rt::BUFFER_IO_TYPE_INPUT; }

// A fixed set prepared once and reused for every iteration.
class FixedSource final : public InputSource {
 public:
  explicit FixedSource(PreparedSet set) : set_(std::move(set)) {}
  std::size_t setCount() const override { return 1; }
  PreparedSet prepare(std::size_t) override { return set_; }

 private:
  PreparedSet set_;
};

class BatchSource final : public InputSource {
 public:
  BatchSource(BatchSpec spec, std::size_t bufferCount, bool checkOutputs, FileCache& cache)
      : spec_(std::move(spec)), bufferCount_(bufferCount), checkOutputs_(checkOutputs), cache_(cache) {}
  std::size_t setCount() const override { return spec_.sets.size(); }
  PreparedSet prepare(std::size_t setIndex) override {
    const IoSet& set = spec_.sets.at(setIndex);
    PreparedSet prepared;
    prepared.setIndex = setIndex;
    prepared.inputs.resize(bufferCount_);
    prepared.present.resize(bufferCount_);
    prepared.dims.resize(bufferCount_);
    prepared.expectedPaths.resize(bufferCount_);
    for (std::size_t b = 0; b < bufferCount_; ++b) {
      const auto& entry = set.buffers[b];
      prepared.present[b] = entry.has_value();
      if (!entry) continue;
      prepared.dims[b] = entry->dims;
      if (entry->isInput)
        prepared.inputs[b] = cache_.load(entry->path);
      else if (checkOutputs_ && !entry->skipValidation)
        prepared.expectedPaths[b] = entry->path;
    }
    return prepared;
  }

 private:
  BatchSpec spec_;
  std::size_t bufferCount_;
  bool checkOutputs_;
  FileCache& cache_;
};

PreparedSet emptySet(std::size_t count) {
  PreparedSet set;
  set.inputs.resize(count);
  set.present.assign(count, true);
  set.dims.resize(count);
  set.expectedPaths.resize(count);
  return set;
}

// Random bits, except that a float (or float16) whose exponent is all ones (infinity or NaN)
// gets a fresh draw: every finite value, of any magnitude and sign, can come out.
void unboundBytes(qaic::rt::QAicBufferDataTypeEnum type, std::vector<uint8_t>& data, std::size_t size,
                  std::mt19937& rng) {
  using namespace qaic::rt;
  std::uniform_int_distribution<unsigned> byte(0, 255);
  for (std::size_t offset = 0; size > 0 && offset + size <= data.size(); offset += size) {
    for (;;) {
      for (std::size_t i = 0; i < size; ++i) data[offset + i] = static_cast<uint8_t>(byte(rng));
      uint32_t bits = 0;
      if (type == BUFFER_DATA_TYPE_FLOAT) {
        std::memcpy(&bits, &data[offset], 4);
        if ((bits & 0x7f800000u) != 0x7f800000u) break;
      } else if (type == BUFFER_DATA_TYPE_FLOAT16) {
        uint16_t half = 0;
        std::memcpy(&half, &data[offset], 2);
        if ((half & 0x7c00u) != 0x7c00u) break;
      } else {
        break;
      }
    }
  }
}

// Values a network can digest: floats in [0, 1), integers in [0, 16).
std::vector<uint8_t> randomBytes(const qaic::rt::v2::BufferMapping& mapping, bool unbound, std::mt19937& rng) {
  using namespace qaic::rt;
  const QAicBufferDataTypeEnum type = mapping.dataType;
  std::vector<uint8_t> data(mapping.size);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 15);
  const std::size_t size = shapeRules(mapping).elementSize;
  if (unbound) {
    unboundBytes(type, data, size, rng);
    return data;
  }
  const std::size_t bytes = data.size();
  for (std::size_t offset = 0; size > 0 && offset + size <= bytes; offset += size) {
    if (type == BUFFER_DATA_TYPE_FLOAT) {
      float v = unit(rng);
      std::memcpy(&data[offset], &v, 4);
    } else if (type == BUFFER_DATA_TYPE_FLOAT16) {
      uint16_t v = qaic::rt::floatToHalf(unit(rng));
      std::memcpy(&data[offset], &v, 2);
    } else {
      std::memset(&data[offset], 0, size);
      data[offset] = static_cast<uint8_t>(small(rng));  // little endian: the low byte
    }
  }
  return data;
}

}  // namespace

std::unique_ptr<InputSource> InputSource::random(const BufferMappings& mappings, bool unbound) {
  std::mt19937 rng(20261121);  // fixed: runs are repeatable
  PreparedSet set = emptySet(mappings.size());
  for (std::size_t b = 0; b < mappings.size(); ++b)
    if (isInput(mappings[b]))
      set.inputs[b] = std::make_shared<const std::vector<uint8_t>>(randomBytes(mappings[b], unbound, rng));
  return std::make_unique<FixedSource>(std::move(set));
}

std::unique_ptr<InputSource> InputSource::files(const BufferMappings& mappings, const std::vector<std::string>& paths,
                                                FileCache& cache) {
  PreparedSet set = emptySet(mappings.size());
  std::size_t next = 0, inputs = 0;
  for (const auto& m : mappings) inputs += isInput(m) ? 1 : 0;
  if (paths.size() != inputs)
    throw std::runtime_error(std::to_string(paths.size()) + " -i files given but the program has " +
                             std::to_string(inputs) + " input buffers");
  for (std::size_t b = 0; b < mappings.size(); ++b) {
    if (!isInput(mappings[b])) continue;
    const std::string& path = paths[next++];
    set.inputs[b] = cache.load(path);
    if (set.inputs[b]->size() != mappings[b].size)
      throw std::runtime_error("-i file '" + path + "' has " + std::to_string(set.inputs[b]->size()) +
                               " bytes but input buffer '" + mappings[b].bufferName + "' takes " +
                               std::to_string(mappings[b].size));
  }
  return std::make_unique<FixedSource>(std::move(set));
}

std::unique_ptr<InputSource> InputSource::batch(BatchSpec spec, std::size_t bufferCount, bool checkOutputs,
                                                FileCache& cache) {
  return std::make_unique<BatchSource>(std::move(spec), bufferCount, checkOutputs, cache);
}

}  // namespace qaic::runner
