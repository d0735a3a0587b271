// SPDX-License-Identifier: Apache-2.0
// The program container API of libqaic (seed 001): Qpc, QpcFile, QpcInfo, QpcProgramInfo,
// QpcConstantsInfo, BufferMapping(s) and v2::BufferMapping with IoShapes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <qaic/Errors.hpp>
#include <qaic/Types.hpp>

namespace qaic::rt {

// Thrown by Qpc::Factory and QpcFile::load. The message names the file and the field. An
// rt::Error too (status QS_ERROR for Io, QS_INVAL for a malformed container), so callers can
// catch every runtime failure in one place.
class QpcError : public Error {
 public:
  enum class Code { Io, Format };
  QpcError(Code code, const std::string& message)
      : Error(code == Code::Io ? QS_ERROR : QS_INVAL, message), code_(code) {}
  Code code() const noexcept { return code_; }

 private:
  Code code_;
};

struct BufferMapping {
  BufferMapping() = default;  // uninitialized entry (INVAL types, size 0)
  BufferMapping(std::string bufferName, uint32_t index, QAicBufferIoTypeEnum ioType, std::size_t size,
                bool isPartialBufferAllowed, QAicBufferDataTypeEnum dataType)
      : bufferName(std::move(bufferName)),
        index(index),
        ioType(ioType),
        size(size),
        isPartialBufferAllowed(isPartialBufferAllowed),
        dataType(dataType) {}

  std::string bufferName;
  uint32_t index = 0;
  QAicBufferIoTypeEnum ioType = BUFFER_IO_TYPE_INVAL;
  std::size_t size = 0;  // bytes at full dims
  bool isPartialBufferAllowed = false;
  QAicBufferDataTypeEnum dataType = BUFFER_DATA_TYPE_INVAL;
};
using BufferMappings = std::vector<BufferMapping>;

namespace v2 {

// The buffer's default (full) dims and every dims it may take in an allowed shape combination
// (allowedDims[0] is the default; one entry per combination, in container order).
struct IoShapes {
  std::vector<int64_t> defaultDims;
  std::vector<std::vector<int64_t>> allowedDims;
};

struct BufferMapping : rt::BufferMapping {
  BufferMapping() = default;
  BufferMapping(rt::BufferMapping base, IoShapes shapes)
      : rt::BufferMapping(std::move(base)), ioShapes(std::move(shapes)) {}
  IoShapes ioShapes;
  bool skipPartialHeader = false;
  bool allowSkip = false;  // selective IO: may be dropped from a request
};
using BufferMappings = std::vector<BufferMapping>;

}  // namespace v2

struct QpcProgramInfo {
  BufferMappings bufferMappings;     // user (heap) buffers, IO-descriptor order
  BufferMappings bufferMappingsDma;  // the same buffers as the device's DMA moves them (device format)
  std::string name;
  uint32_t numCores = 0;
  uint32_t programIndex = 0;
  std::size_t size = 0;  // program payload bytes
  uint32_t batchSize = 0;
  uint32_t numSemaphores = 0;
  uint32_t numMcIds = 0;
  uint64_t totalRequiredMemory = 0;
  bool fp16Constants = false;  // compiled with -convert-to-fp16
};

struct QpcConstantsInfo {
  std::string name;
  uint32_t index = 0;
  std::size_t size = 0;
};

struct QpcInfo {
  std::vector<QpcProgramInfo> program;
  std::vector<QpcConstantsInfo> constants;
  // Inputs kept in device memory per activation (qaic-exec -retained-state), each with its output
  // <name>_RetainedState; neither is in the buffer mappings (docs/runtime.md).
  std::vector<std::string> retainedState;
  // The devices the program spans: 1, or a multi-device program's part count (docs/runtime.md,
  // "Multi-device programs"); its InferenceSet places one part on each of as many devices.
  uint32_t numDevices = 1;
};

// The bytes of a program container file, read into memory by load().
class QpcFile {
 public:
  explicit QpcFile(std::string basePath, std::string filename = "programqpc.bin");
  ~QpcFile();
  QpcFile(const QpcFile&) = delete;
  QpcFile& operator=(const QpcFile&) = delete;
  QpcFile(QpcFile&&) = delete;
  QpcFile& operator=(QpcFile&&) = delete;

  void load();  // throws QpcError (Io) naming the path
  const QData& getBuffer() const { return buffer_; }
  const uint8_t* data() const { return buffer_.data; }
  std::size_t size() const { return buffer_.size; }
  std::string path() const;

 private:
  std::string basePath_;
  std::string filename_;
  std::vector<uint8_t> storage_;
  QData buffer_;
};

// One binding of the vendor's IO descriptor (Qpc::getVendorIoDescriptor), in its order: the
// user inputs (mapping order), the retained-state inputs, the user outputs, the retained-state
// outputs (<name>_RetainedState). Retained bindings live on the device (cut 7): they have no
// buffer mapping and a program never exchanges them with the user.
struct VendorIoBinding {
  std::string name;
  uint32_t index = 0;  // position in this list
  QAicBufferIoTypeEnum ioType = BUFFER_IO_TYPE_INVAL;
  QAicBufferDataTypeEnum dataType = BUFFER_DATA_TYPE_INVAL;  // the user's element type
  std::vector<int64_t> dims;                                 // full dims
  std::size_t size = 0;                                      // bytes at full dims
  // True for retained bindings too: callers always skip them.
  bool isPartialBufferAllowed = false;
  bool retained = false;
  int32_t mappingIndex = -1;  // in getBufferMappings(); -1 for a retained binding
  // The dims of this binding in every allowed shape combination of the vendor's descriptor (one
  // per specialization, or the full dims alone for a program without specializations).
  std::vector<std::vector<int64_t>> allowedDims;
};

// A loaded, validated program container.
class Qpc {
 public:
  // Maps basePath/filename. Throws QpcError naming the file and the bad field.
  static std::shared_ptr<Qpc> Factory(const std::string& basePath, const std::string& filename = "programqpc.bin");
  // Copies `size` bytes from `buffer`. Throws QpcError.
  static std::shared_ptr<Qpc> Factory(const uint8_t* buffer, std::size_t size);

  ~Qpc();
  Qpc(const Qpc&) = delete;
  Qpc& operator=(const Qpc&) = delete;
  Qpc(Qpc&&) = delete;
  Qpc& operator=(Qpc&&) = delete;

  const QpcInfo& getInfo() const;
  const BufferMappings& getBufferMappings() const;
  const v2::BufferMappings& getBufferMappingsV2() const;
  // Each buffer as the device's DMA moves it: `dataType` is the device format's element type and
  // `size` its bytes at full dims (FP16 inputs: half the heap size). A DMA buffer passed to the
  // runtime still holds the heap mapping's form; where the two differ the runtime converts
  // (docs/runtime.md, "Buffers").
  const BufferMappings& getBufferMappingsDma() const;
  const QData* getIoDescriptor() const;  // the IO descriptor section inside buffer()
  // The vendor's IO descriptor (protobuf aicapi.IoDesc, serialized): one set "default" of
  // getVendorIoBindings(), also the selected set, and one allowed_shapes entry per
  // specialization. Its type codes are QAicBufferDataTypeEnum's for 0 to 8, UINT8_Q_TYPE (3) for
  // uint8 and bool, TYPE_INVALID (255) for the rest.
  const std::string& getVendorIoDescriptor() const;
  const std::vector<VendorIoBinding>& getVendorIoBindings() const;
  const QAicQpcObj* get() const;  // opaque; libqaic-internal users see QAicQpcObj.hpp
  const uint8_t* buffer() const;
  std::size_t size() const;

 private:
  struct Impl;
  explicit Qpc(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace qaic::rt
