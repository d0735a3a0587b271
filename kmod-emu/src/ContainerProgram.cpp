// SPDX-License-Identifier: Apache-2.0
// A DeviceProgram from a programqpc.bin: QpcImage validates the container, the program's JSON IR
// becomes a HostProgram, and each run converts inputs from their device format, runs, and writes
// outputs in their declared device format plus the response descriptor (device-protocol.md 4).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "DeviceProgram.hpp"
#include "GuardedCopy.hpp"
#include "Log.hpp"
#include "RetainedMemory.hpp"
#include "container/Checksum.hpp"
#include "container/QpcImage.hpp"
#include "container/ResourceNeeds.hpp"
#include "driver/DeviceProtocol.hpp"
#include "kernels/HostProgram.hpp"
#include "kernels/PeerExchange.hpp"
#include "kernels/format/DeviceFormat.hpp"

namespace qaic::emu {
namespace {

using container::QpcBuffer;
using container::QpcImage;
using container::QpcProgram;

// The request is malformed: the program answers BAD_REQUEST instead of running.
struct BadRequest {
  std::string why;
};

// What the programs of one loaded container share, for as long as its bytes live: its image,
// validated once, and its constants, each packed once into the layout its kernel wants, in the
// load's own bytes where that layout fits (kernels::ConstantPacking), so any number of
// activations hold a network's weights about once. The bytes are validated before any constant
// is rewritten, and never again.
struct LoadState {
  std::unique_ptr<QpcImage> image;
  std::shared_ptr<kernels::ConstantPacking> packing = kernels::makeConstantPacking();
};

std::shared_ptr<LoadState> loadState(const LoadBytes& bytes) {
  static std::mutex mutex;  // activations of one load may be built on several FUSE threads
  std::lock_guard lock(mutex);
  if (auto state = std::static_pointer_cast<LoadState>(bytes->programState)) return state;
  auto state = std::make_shared<LoadState>();
  const std::span<const std::byte> file(bytes->data(), bytes->size());
  // Checksummed without reading the holes: a page fault in a memory file's hole would give it a
  // page, and a sparse container's zeros would then cost real memory.
  std::optional<uint32_t> bodyCrc;
  if (bytes->fd() >= 0 && file.size() >= container::kChecksummedFrom)
    bodyCrc = container::crcOfFileFrom(bytes->fd(), file, container::kChecksummedFrom);
  state->image = QpcImage::fromBytes(file, "programqpc.bin", true, bodyCrc);
  bytes->programState = state;
  return state;
}

// One compiled graph the activation runs: the program's own, or a specialization's
// (qaic-exec -network-specialization-config), with its io in the graph's order by direction.
// A slot is a buffer of the IO descriptor or a retained pair (RetainedMemory).
struct Slot {
  const QpcBuffer* buffer = nullptr;
  int retained = -1;
};
struct Variant {
  ir::Graph graph;
  std::vector<Slot> inputs, outputs;
  std::vector<bool> inPlace;                   // by retained pair: output in the input's memory
  std::unique_ptr<kernels::HostProgram> host;  // built on first use, over the attached region
};

class ContainerProgram final : public DeviceProgram {
 public:
  ContainerProgram(LoadBytes bytes, std::shared_ptr<LoadState> load, const QpcProgram& program, unsigned maxThreads)
      : bytes_(std::move(bytes)),
        load_(std::move(load)),
        image_(load_->image.get()),
        program_(program),
        retained_(image_->retainedState()) {
    combinations_ = image_->allShapeCombinations();
    variantOf_.assign(combinations_.size(), 0);
    variants_.push_back(makeVariant(program_.payload, "program '" + program_.name + "'"));
    for (const auto& s : image_->contents().specializationPayloads) {
      if (s.programIndex != program_.programIndex) continue;
      variantOf_[s.combination] = variants_.size();
      variants_.push_back(
          makeVariant(s.payload, "program '" + program_.name + "' specialization " + std::to_string(s.combination)));
    }
    // In place only when the device buffer also holds the full tensor, so nothing but the
    // copy's source or destination differs from converting through scratch memory.
    for (const QpcBuffer& b : image_->buffers())
      identity_.push_back(isIdentityFormat(b) && kernels::userBufferBytes(b.io.dims, b.io.dtype) <= b.deviceSize);
    scratch_.resize(image_->buffers().size());
    threads_ = static_cast<int>(std::clamp<unsigned>(program_.numCores, 1, std::max(1u, maxThreads)));
    needs_.charge = container::resourceNeeds(image_->contents(), program_, 1);
    needs_.ioRegionSize = program_.ioRegionSize;
    needs_.constantsBytes = container::constantsBytes(image_->contents());
    needs_.retainedStateBytes = container::retainedStateBytes(image_->contents());
    needs_.programName = program_.name;
    needs_.computeThreads = static_cast<uint32_t>(threads_);
    needs_.doorbellAddress = program_.doorbellAddress;
    needs_.doneSemaphore = program_.doneSemaphore;
    const uint64_t descEnd = std::max(program_.requestDescriptorOffset, program_.responseDescriptorOffset) +
                             driver::kDescriptorBytes;
    if (descEnd > program_.ioRegionSize)
      throw std::runtime_error("program '" + program_.name + "': descriptors outside the IO region");
    if (image_->buffers().size() > driver::kMaxDescriptorBuffers)
      throw std::runtime_error("more IO buffers than a descriptor can describe");
  }

  const ProgramNeeds& needs() const override { return needs_; }
  void setPeers(std::shared_ptr<kernels::PeerExchange> peers) override { peers_ = std::move(peers); }

  // Identity-format buffers and retained state are the program's own input and output tensors,
  // so a run reads and writes device memory with no copy in between (the kernels are created with
  // their addresses).
  void attach(std::span<std::byte> region) override {
    if (region.size() < program_.ioRegionSize) throw std::runtime_error("IO region smaller than the program's");
    for (auto& v : variants_) v.host.reset();
    retained_.allocate();  // charged by the device before it attached the region
    attached_ = region.data();
    // The program's own graph is ready before the first request. Built on a thread of its own:
    // packing the weights runs oneDNN reorders in parallel, and libgomp keeps the OpenMP workers
    // of every thread that ever ran a team parked until that thread exits. Once parked workers
    // outnumber the CPUs, libgomp throttles every team's spin-wait into futex sleeps, and the
    // channel thread's team would compute each parallel region through them (a 2-NSP
    // MobileNetV3 ran 2.6 times slower than on the host executor while a FUSE worker kept its
    // team from an ACTIVATE). The thread ends here, and its workers with it.
    std::exception_ptr failure;
    std::thread([&] {
      try {
        hostFor(variants_.front());
      } catch (...) {
        failure = std::current_exception();
      }
    }).join();
    if (failure) std::rethrow_exception(failure);
  }

  uint16_t run(std::span<std::byte> region) override { return run(region, {}); }

  // The request's to-device transfers that are an identity-format input are read in place (the
  // rest, the request descriptor first, are copied into the region before anything reads it);
  // a from-device transfer that is an identity-format output is where the kernels write it.
  // Every client byte is touched under InPlaceAccess: a truncated file fails the request.
  uint16_t run(std::span<std::byte> region, std::span<DirectTransfer> direct) override {
    const auto started = std::chrono::steady_clock::now();
    uint16_t status = 0;
    std::map<uint32_t, ir::Dims> outDims;
    std::map<uint32_t, ir::Dims> inDims;
    std::string failure;
    std::vector<std::span<std::byte>> ranges;
    for (const DirectTransfer& d : direct) ranges.push_back(d.host);
    InPlaceAccess access(ranges);
    try {
      if (attached_ != region.data()) attach(region);
      for (std::size_t i = 0; i < direct.size(); ++i) {
        if (direct[i].toDevice && (!access.guarded(i) || !inPlaceInputAt(direct[i].deviceOffset)))
          copyIntoRegion(region, direct[i]);
      }
      inDims = readRequest(region);
      outDims = compute(region, inDims, direct, access);
    } catch (const BadRequest&) {
      status = driver::DBC_COMPLETION_BAD_REQUEST;
    } catch (const kernels::FormatError&) {
      status = driver::DBC_COMPLETION_BAD_REQUEST;
    } catch (const std::exception& e) {
      // An operator rejected this request's data (an index out of range): this inference fails,
      // the program stays ready for the next one.
      status = driver::DBC_COMPLETION_PROGRAM_FAILED;
      failure = "program '" + program_.name + "': " + e.what();
      logError(failure);
    }
    // Whatever was not consumed still lands in device memory, as its DMA would have put it.
    for (DirectTransfer& d : direct)
      if (d.toDevice && d.done == 0) copyIntoRegion(region, d);
    for (std::size_t i = 0; i < direct.size(); ++i) {
      direct[i].faulted = direct[i].faulted || access.faulted(i);
      if (direct[i].faulted) status = driver::DBC_COMPLETION_DMA_FAILED;  // the client truncated its memory
    }
    writeResponse(region, status, inDims, outDims, started, failure);
    return status;
  }

 private:
  Variant makeVariant(std::span<const std::byte> payload, const std::string& what) {
    Variant v;
    v.graph = ir::parseGraph(std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size()),
                             image_->sourceName() + ":" + program_.name);
    ir::inferShapes(v.graph);
    for (const auto& io : v.graph.io) {
      Slot slot;
      slot.buffer = image_->findBuffer(io.bufferName);
      if (slot.buffer == nullptr) slot.retained = retained_.find(io.bufferName);
      if (slot.buffer == nullptr && slot.retained < 0)
        throw std::runtime_error(what + " binds buffer '" + io.bufferName + "' that the IO descriptor lacks");
      (io.direction == ir::Direction::In ? v.inputs : v.outputs).push_back(slot);
    }
    for (std::size_t r = 0; r < retained_.size(); ++r) v.inPlace.push_back(retained_.prepare(r, v.graph));
    return v;
  }

  kernels::HostProgram& hostFor(Variant& v) {
    if (v.host) return *v.host;
    kernels::BuildOptions options;
    options.threads = threads_;
    options.packing = load_->packing;
    // A client's DMA buffers (or the runtime's staging buffers) read and written in place get
    // plans of their own where that costs less memory than the copies it saves per run.
    options.reboundPlans = kReboundPlans;
    options.peers = peers_;
    auto bind = [&](const std::vector<Slot>& slots, bool output) {
      std::vector<kernels::IoMemory> memory(slots.size());
      for (std::size_t i = 0; i < slots.size(); ++i) {
        const Slot& s = slots[i];
        if (s.retained >= 0) {
          const auto r = static_cast<std::size_t>(s.retained);
          memory[i] = output ? retained_.outputMemory(r, v.inPlace[r]) : retained_.inputMemory(r);
        } else if (identity_[s.buffer->index]) {
          memory[i] = {attached_ + s.buffer->deviceOffset, s.buffer->deviceSize};
        }
      }
      return memory;
    };
    options.inputMemory = bind(v.inputs, false);
    options.outputMemory = bind(v.outputs, true);
    const QpcImage* view = image_;
    v.host = kernels::HostProgram::build(
        v.graph,
        [view](std::string_view name) -> const ir::WeightTensor* {
          const auto* c = view->findConstant(name);
          return c ? &c->tensor : nullptr;
        },
        options);
    return *v.host;
  }

  std::map<uint32_t, ir::Dims> readRequest(std::span<const std::byte> region) {
    const std::byte* base = region.data() + program_.requestDescriptorOffset;
    driver::RequestDescriptorHeader h;
    std::memcpy(&h, base, sizeof h);
    const auto& buffers = image_->buffers();
    if (h.magic != driver::kRequestDescriptorMagic || h.version != driver::kDescriptorVersion ||
        h.bufferCount != buffers.size())
      throw BadRequest{"request descriptor header"};
    uint32_t flags = 0;
    std::memcpy(&flags, base + driver::kRequestFlagsOffset, sizeof flags);
    if ((flags & ~driver::kRequestKnownFlags) != 0) throw BadRequest{"request flags"};
    if ((flags & driver::kRequestFlagResetState) != 0) retained_.reset();
    std::map<uint32_t, ir::Dims> dims;
    for (const QpcBuffer& b : buffers) {
      if (b.io.direction != ir::Direction::In) continue;
      driver::RequestDescriptorEntry e;
      std::memcpy(&e, base + sizeof h + b.index * sizeof e, sizeof e);
      const ir::Dims& full = b.io.dims;
      if (!e.present) {
        // A dropped (selective IO) input keeps what its device buffer last held.
        if (!b.io.allowSkip) throw BadRequest{"required input absent"};
        dims[b.index] = full;
        continue;
      }
      if (e.rank != full.size()) throw BadRequest{"input rank"};
      ir::Dims d(e.rank);
      for (uint32_t i = 0; i < e.rank; ++i) {
        if (e.dims[i] == 0 || e.dims[i] > full[i]) throw BadRequest{"input dims"};
        d[i] = e.dims[i];
      }
      if (d != full && !b.io.isPartialAllowed && !isSpecialization(b.index, d))
        throw BadRequest{"input dims not allowed"};
      dims[b.index] = std::move(d);
    }
    return dims;
  }

  bool isSpecialization(uint32_t index, const ir::Dims& d) const {
    for (const auto& combo : image_->allowedShapes())
      if (index < combo.size() && combo[index] == d) return true;
    return false;
  }

  // The graph for these input dims: the combination every input's dims are, else (partial
  // inputs) the program's own, which re-infers its shapes.
  Variant& variantFor(const std::map<uint32_t, ir::Dims>& inDims) {
    for (std::size_t c = 1; c < combinations_.size() && variants_.size() > 1; ++c) {
      bool all = true;
      for (const auto& [index, d] : inDims) all = all && combinations_[c][index] == d;
      if (all) return variants_[variantOf_[c]];
    }
    return variants_.front();
  }

  // True when `b`'s device format holds exactly the bytes of the tensor in its own dtype (flat,
  // same element type, a type the format conversions accept): the program then reads and writes
  // device memory in place instead of converting through a scratch buffer.
  static bool isIdentityFormat(const QpcBuffer& b) {
    if (b.io.deviceFormat.layout != ir::DeviceLayout::Flat || b.io.deviceFormat.elementType != b.io.dtype) return false;
    try {  // one element through the shared conversion: throws for a type it does not handle
      std::array<std::byte, 16> one{}, device{};
      kernels::UserBufferView view{b.io.bufferName, b.io.dtype, ir::UserLayout::NCHW, ir::Dims{1}};
      kernels::userToDevice(view, one, b.io.deviceFormat, device);
      return true;
    } catch (const kernels::FormatError&) {
      return false;
    }
  }

  // A to-device transfer copied into the region (what its DMA would have done).
  static void copyIntoRegion(std::span<std::byte> region, DirectTransfer& d) {
    if (d.done != 0) return;
    if (!guardedCopy(region.data() + d.deviceOffset, d.host.data(), d.host.size())) d.faulted = true;
    d.done = d.host.size();
  }

  // An identity-format input whose device buffer starts at `offset` and that is always sent
  // (a skippable one keeps what its device buffer last held, so it must be there).
  bool inPlaceInputAt(uint64_t offset) const {
    for (const QpcBuffer& b : image_->buffers())
      if (b.io.direction == ir::Direction::In && identity_[b.index] && b.deviceOffset == offset && !b.io.allowSkip)
        return true;
    return false;
  }

  static DirectTransfer* findDirect(std::span<DirectTransfer> direct, uint64_t offset, bool toDevice,
                                    const InPlaceAccess& access) {
    for (std::size_t i = 0; i < direct.size(); ++i)
      if (direct[i].toDevice == toDevice && direct[i].deviceOffset == offset && direct[i].done == 0 &&
          access.guarded(i))
        return &direct[i];
    return nullptr;
  }

  std::map<uint32_t, ir::Dims> compute(std::span<std::byte> region, const std::map<uint32_t, ir::Dims>& inDims,
                                       std::span<DirectTransfer> direct, const InPlaceAccess& access) {
    Variant& v = variantFor(inDims);
    kernels::HostProgram& host = hostFor(v);
    std::vector<kernels::TensorView> ins(v.inputs.size()), outs(v.outputs.size());
    std::vector<DirectTransfer*> inDirect(v.inputs.size()), outDirect(v.outputs.size());
    for (std::size_t i = 0; i < v.inputs.size(); ++i) {
      if (v.inputs[i].retained >= 0) {
        const auto r = static_cast<std::size_t>(v.inputs[i].retained);
        const kernels::IoMemory m = retained_.inputMemory(r);
        ins[i] = {retained_.entry(r).dtype, retained_.entry(r).dims, m.data, m.bytes};
        continue;
      }
      const QpcBuffer& b = *v.inputs[i].buffer;
      const ir::Dims& d = inDims.at(b.index);
      const std::size_t bytes = kernels::userBufferBytes(d, b.io.dtype);
      const auto device = region.subspan(b.deviceOffset, b.deviceSize);
      if (identity_[b.index]) {
        if (bytes > device.size()) throw BadRequest{"input larger than its device buffer"};
        DirectTransfer* t = b.io.allowSkip ? nullptr : findDirect(direct, b.deviceOffset, true, access);
        if (t != nullptr && t->host.size() >= bytes) {
          ins[i] = {b.io.dtype, d, t->host.data(), bytes};
          t->done = t->host.size();
          inDirect[i] = t;
          continue;
        }
        if (t != nullptr) copyIntoRegion(region, *t);  // shorter than the tensor: the region holds the rest
        ins[i] = {b.io.dtype, d, device.data(), bytes};
        continue;
      }
      kernels::UserBufferView view{b.io.bufferName, b.io.dtype, ir::UserLayout::NCHW, d};
      std::vector<std::byte>& scratch = scratch_[b.index];
      if (scratch.size() < bytes) scratch.resize(bytes);
      kernels::deviceToUser(b.io.deviceFormat, device, view, std::span<std::byte>(scratch).first(bytes));
      ins[i] = {b.io.dtype, d, scratch.data(), bytes};
    }
    for (std::size_t i = 0; i < v.outputs.size(); ++i) {
      if (v.outputs[i].retained >= 0) {
        const auto r = static_cast<std::size_t>(v.outputs[i].retained);
        const kernels::IoMemory m = retained_.outputMemory(r, v.inPlace[r]);
        outs[i] = {retained_.entry(r).dtype, retained_.entry(r).dims, m.data, m.bytes};
        continue;
      }
      const QpcBuffer& b = *v.outputs[i].buffer;
      const std::size_t bytes = kernels::userBufferBytes(b.io.dims, b.io.dtype);
      if (identity_[b.index]) {
        DirectTransfer* t = findDirect(direct, b.deviceOffset, false, access);
        if (t != nullptr && t->host.size() >= bytes) {
          outs[i] = {b.io.dtype, b.io.dims, t->host.data(), bytes};
          outDirect[i] = t;
          continue;
        }
        outs[i] = {b.io.dtype, b.io.dims, region.data() + b.deviceOffset, bytes};
        continue;
      }
      std::vector<std::byte>& scratch = scratch_[b.index];
      if (scratch.size() < bytes) scratch.resize(bytes);
      outs[i] = {b.io.dtype, b.io.dims, scratch.data(), bytes};
    }
    host.run(ins, outs);
    retained_.commit(v.inPlace);
    for (std::size_t i = 0; i < v.inputs.size(); ++i)
      if (inDirect[i]) inDirect[i]->inPlace = host.inPlace(ir::Direction::In, i);
    std::map<uint32_t, ir::Dims> outDims;
    for (std::size_t i = 0; i < v.outputs.size(); ++i) {
      if (v.outputs[i].retained >= 0) continue;
      const QpcBuffer& b = *v.outputs[i].buffer;
      outDims[b.index] = outs[i].dims;
      if (outDirect[i]) {  // written into the client's memory, in place or by one copy
        outDirect[i]->done = kernels::userBufferBytes(outs[i].dims, b.io.dtype);
        outDirect[i]->inPlace = host.inPlace(ir::Direction::Out, i);
      }
      if (identity_[b.index]) continue;  // the program wrote device memory itself
      kernels::UserBufferView view{b.io.bufferName, b.io.dtype, ir::UserLayout::NCHW, outs[i].dims};
      const std::size_t used = kernels::userBufferBytes(outs[i].dims, b.io.dtype);
      kernels::userToDevice(view, std::span<const std::byte>(scratch_[b.index]).first(used), b.io.deviceFormat,
                            region.subspan(b.deviceOffset, b.deviceSize));
    }
    return outDims;
  }

  void writeResponse(std::span<std::byte> region, uint16_t status, const std::map<uint32_t, ir::Dims>& inDims,
                     const std::map<uint32_t, ir::Dims>& outDims, std::chrono::steady_clock::time_point started,
                     const std::string& failure) const {
    std::byte* base = region.data() + program_.responseDescriptorOffset;
    std::memset(base, 0, driver::kDescriptorBytes);
    auto nanoseconds = [](std::chrono::steady_clock::time_point t) {
      return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
    };
    const driver::ResponseTimestamps times{nanoseconds(started), nanoseconds(std::chrono::steady_clock::now())};
    std::memcpy(base + driver::kResponseTimestampsOffset, &times, sizeof times);
    const auto& buffers = image_->buffers();
    driver::ResponseDescriptorHeader h{driver::kResponseDescriptorMagic, driver::kDescriptorVersion, status,
                                       static_cast<uint32_t>(buffers.size())};
    std::memcpy(base, &h, sizeof h);
    for (const auto& b : buffers) {
      driver::ResponseDescriptorEntry e{};
      const auto* dims = outDims.count(b.index)  ? &outDims.at(b.index)
                         : inDims.count(b.index) ? &inDims.at(b.index)
                                                 : nullptr;
      if (status == 0 && dims != nullptr && dims->size() <= driver::kDescriptorMaxRank) {
        e.present = 1;
        e.rank = static_cast<uint32_t>(dims->size());
        for (std::size_t i = 0; i < dims->size(); ++i) e.dims[i] = static_cast<uint32_t>((*dims)[i]);
        if (outDims.count(b.index))
          e.bytes = static_cast<uint32_t>(kernels::deviceBufferBytes(*dims, b.io.deviceFormat));
      }
      std::memcpy(base + sizeof h + b.index * sizeof e, &e, sizeof e);
    }
    const uint64_t diagnostic = driver::responseDiagnosticOffset(h.bufferCount);
    if (!failure.empty() && diagnostic + sizeof(uint32_t) < driver::kResponseDiagnosticEnd) {
      const auto length = static_cast<uint32_t>(
          std::min<uint64_t>(failure.size(), driver::kResponseDiagnosticEnd - diagnostic - sizeof(uint32_t)));
      std::memcpy(base + diagnostic, &length, sizeof length);
      std::memcpy(base + diagnostic + sizeof length, failure.data(), length);
    }
  }

  // Plans over client memory a program keeps (HostProgram's reboundPlans): a runtime's two
  // staging buffers and a few DMA buffers in use at once.
  static constexpr int kReboundPlans = 4;

  LoadBytes bytes_;
  std::shared_ptr<LoadState> load_;  // bytes_'s
  const QpcImage* image_;            // load_'s
  const QpcProgram& program_;
  RetainedMemory retained_;                         // this activation's state
  std::vector<ir::ShapeCombination> combinations_;  // image_->allShapeCombinations()
  std::vector<std::size_t> variantOf_;              // by combination: index into variants_
  std::vector<Variant> variants_;                   // [0]: the program's own graph
  std::vector<bool> identity_;                      // by IO descriptor index
  // Conversion buffers of the other formats (by IO descriptor index), kept between runs (one run
  // at a time) so a large network does not allocate and fault in fresh pages on every inference.
  std::vector<std::vector<std::byte>> scratch_;
  int threads_ = 1;
  std::byte* attached_ = nullptr;                 // the IO region the variants' bound tensors live in
  std::shared_ptr<kernels::PeerExchange> peers_;  // a multi-device program's part: its exchange
  ProgramNeeds needs_;
};

}  // namespace

ProgramLoader containerProgramLoader(unsigned threads) {
  return
      [threads](const LoadBytes& bytes, uint32_t programIndex, std::string& error) -> std::unique_ptr<DeviceProgram> {
        try {
          auto load = loadState(bytes);
          if (load->image->deviceCount() > 1) {
            error = "programqpc.bin spans " + std::to_string(load->image->deviceCount()) +
                    " devices; the emulated device runs single-device programs only";
            return nullptr;
          }
          const auto& programs = load->image->programs();
          if (programIndex >= programs.size()) {
            error = "program index " + std::to_string(programIndex) + " is not below the " +
                    std::to_string(programs.size()) + " programs of the container";
            return nullptr;
          }
          const QpcProgram& p = programs[programIndex];
          return std::make_unique<ContainerProgram>(bytes, std::move(load), p, threads);
        } catch (const std::exception& e) {
          error = e.what();
          return nullptr;
        }
      };
}

}  // namespace qaic::emu
