// SPDX-License-Identifier: Apache-2.0
#include "QpcCommand.hpp"

#include <ostream>
#include <string>

#include "container/QpcImage.hpp"

namespace qaic::util {

namespace {

using container::QpcImage;

std::string formatDims(const ir::Dims& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

const char* yesNo(bool value) { return value ? "yes" : "no"; }

const char* layoutName(ir::DeviceLayout layout) {
  switch (layout) {
    case ir::DeviceLayout::Flat: return "flat";
    case ir::DeviceLayout::DWHC: return "DWHC";
    case ir::DeviceLayout::DHWC: return "DHWC";
  }
  return "flat";
}

void printPrograms(const QpcImage& image, std::ostream& out) {
  for (const auto& p : image.programs()) {
    out << "Program " << p.programIndex << '\n'
        << "\tName:" << p.name << '\n'
        << "\tProgram Index:" << p.programIndex << '\n'
        << "\tNum Cores:" << p.numCores << '\n'
        << "\tSize:" << p.payload.size() << '\n'
        << "\tBatch Size:" << p.batchSize << '\n'
        << "\tNum Semaphores:" << p.numSemaphores << '\n'
        << "\tNum MC IDs:" << p.numMulticastIds << '\n'
        << "\tTotal Required Memory:" << p.totalRequiredMemory << '\n'
        << "\tIO Region Size:" << p.ioRegionSize << '\n'
        << "\tDoorbell Address:" << p.doorbellAddress << '\n'
        << "\tDone Semaphore:" << p.doneSemaphore << '\n'
        << "\tRequest Descriptor Offset:" << p.requestDescriptorOffset << '\n'
        << "\tResponse Descriptor Offset:" << p.responseDescriptorOffset << '\n'
        << "\tFP16 Constants:" << yesNo((p.flags & container::kProgramFlagFp16Constants) != 0) << '\n'
        << "\tBuffer Mappings:";
    for (std::size_t i = 0; i < p.bufferIndices.size(); ++i) out << (i ? "," : "") << p.bufferIndices[i];
    out << '\n';
  }
}

void printBuffers(const QpcImage& image, std::ostream& out) {
  for (const auto& b : image.buffers()) {
    out << "Buffer " << b.index << '\n'
        << "\tName:" << b.io.bufferName << '\n'
        << "\tIndex:" << b.index << '\n'
        << "\tDirection:" << (b.io.direction == ir::Direction::In ? "input" : "output") << '\n'
        << "\tType:" << container::bufferDataTypeName(b.dataType) << '\n'
        << "\tUser Type:" << ir::dtypeName(b.io.dtype) << '\n'
        << "\tUser Layout:" << (b.io.userLayout == ir::UserLayout::NHWC ? "NHWC" : "NCHW") << '\n'
        << "\tDims:" << formatDims(b.io.dims) << '\n'
        << "\tSize:" << b.size << '\n'
        << "\tPartial:" << yesNo(b.io.isPartialAllowed) << '\n'
        << "\tSkip Partial Header:" << yesNo(b.io.skipPartialHeader) << '\n'
        << "\tAllow Skip:" << yesNo(b.io.allowSkip) << '\n'
        << "\tDevice Format:" << layoutName(b.io.deviceFormat.layout) << ' '
        << ir::dtypeName(b.io.deviceFormat.elementType) << '\n'
        << "\tDevice Offset:" << b.deviceOffset << '\n'
        << "\tDevice Size:" << b.deviceSize << '\n'
        << "\tTensor:" << b.io.tensor << '\n';
  }
}

void printShapes(const QpcImage& image, std::ostream& out) {
  out << "Allowed Shapes\n";
  const auto combinations = image.allShapeCombinations();
  for (std::size_t c = 0; c < combinations.size(); ++c) {
    out << '\t' << c << (c == 0 ? " (default):" : ":");
    for (std::size_t b = 0; b < combinations[c].size(); ++b) {
      out << ' ' << image.buffers()[b].io.bufferName << formatDims(combinations[c][b]);
    }
    out << '\n';
  }
}

// Device-resident state (qaic-exec -retained-state): in no buffer mapping, one per activation.
void printRetainedState(const QpcImage& image, std::ostream& out) {
  for (std::size_t i = 0; i < image.retainedState().size(); ++i) {
    const auto& r = image.retainedState()[i];
    out << "Retained State " << i << '\n'
        << "\tName:" << r.name << '\n'
        << "\tState Name:" << r.stateName << '\n'
        << "\tType:" << ir::dtypeName(r.dtype) << '\n'
        << "\tDims:" << formatDims(r.dims) << '\n'
        << "\tSize:" << r.size << '\n'
        << "\tTensor:" << r.tensor << '\n'
        << "\tState Tensor:" << r.stateTensor << '\n';
  }
}

void printShapesPayloads(const QpcImage& image, std::ostream& out) {
  for (const auto& s : image.contents().specializationPayloads)
    out << "\tCombination " << s.combination << ": program " << s.programIndex << " compiled for it ("
        << s.payload.size() << " bytes)\n";
}

void printConstants(const QpcImage& image, std::ostream& out) {
  for (const auto& c : image.constants()) {
    out << "Constant " << c.index << '\n'
        << "\tName:" << c.tensor.name << '\n'
        << "\tIndex:" << c.index << '\n'
        << "\tSize:" << c.tensor.data.size() << '\n'
        << "\tType:" << ir::dtypeName(c.tensor.dtype) << '\n'
        << "\tDims:" << formatDims(c.tensor.dims) << '\n'
        << "\tEncoding:" << ir::weightEncodingName(c.tensor.encoding) << '\n';
  }
}

// A multi-device program (device_parts): each device's part, part 0 being this container. The
// nested parts' own programs and buffers are not repeated: their NSPs and bytes are what a card
// holds.
void printDeviceParts(const QpcImage& image, std::ostream& out) {
  const auto& parts = image.deviceParts();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& part = parts[i];
    out << "Device Part " << i << '\n'
        << "\tDevice:" << part.slot << '\n'
        << "\tNSPs:" << part.numCores << '\n'
        << "\tWeights Bytes:" << part.weightBytes << '\n'
        << "\tRetained Bytes:" << part.retainedBytes << '\n'
        << "\tSent Between Cards Per Inference:" << part.sentBytes << '\n'
        << "\tReceived Between Cards Per Inference:" << part.receivedBytes << '\n'
        << "\tImage:" << (i == 0 ? std::string("this container") : std::to_string(part.image.size()) + " bytes")
        << '\n';
  }
}

}  // namespace

int runQpcCommand(const std::string& dir, std::ostream& out, std::ostream& err) {
  const std::string path = dir + "/programqpc.bin";
  std::unique_ptr<QpcImage> image;
  try {
    image = QpcImage::open(path);
  } catch (const container::QpcFormatError& e) {
    err << "qaic-util: error: " << e.what() << '\n';
    return 2;
  }
  out << "QPC " << path << '\n'
      << "\tFormat Version:" << image->contents().formatVersion << '\n'
      << "\tFile Size:" << image->bytes().size() << '\n'
      << "\tPrograms:" << image->programs().size() << '\n'
      << "\tBuffers:" << image->buffers().size() << '\n'
      << "\tConstants:" << image->constants().size() << '\n'
      << "\tRetained State:" << image->retainedState().size() << '\n';
  if (image->deviceCount() > 1) {
    out << "\tDevices:" << image->deviceCount() << '\n'
        << "\tConnection:" << container::deviceConnectionName(image->contents().connection) << '\n';
  }
  printPrograms(*image, out);
  printBuffers(*image, out);
  printShapes(*image, out);
  printShapesPayloads(*image, out);
  printRetainedState(*image, out);
  printConstants(*image, out);
  printDeviceParts(*image, out);
  return 0;
}

}  // namespace qaic::util
