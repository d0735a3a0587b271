// SPDX-License-Identifier: Apache-2.0
// The qaicrt module's conversion of what Python callers pass into libqaic's QBuffers and
// arguments, through the module itself: the interpreter (Debian's libpython3.11) is embedded and
// qaicrt, compiled from its own sources, is registered as a built-in module, so every call goes
// through the bindings' real argument casting and conversion code. Per input: a program's buffers
// (count, direction, element size, dims, partial, droppable, specialized), an InferenceSet over
// them (PythonArgsSet.hpp: the runtime's handles, its IO-set check, no device), then up to 8 calls
// (QBuffer, setBuffers and its two halves, _runSync, setBufferDims, setBufferSkipped, submit,
// putCompleted, getAvailable, DmaBuffer.numpy and .qbuffer, Qpc.Factory, _keepBusy, and
// qaic.Session.run with dicts of named arrays over the same set) with objects built from
// the input (PythonArgsObjects.hpp). Each call must either succeed with QBuffers that are exactly
// the objects' memory (pointer, size, writability; ASan reads every byte) or raise TypeError,
// ValueError or qaicrt.Error, naming the buffer where the call takes a list; nothing else. At the
// end every handle is back, the set is gone and no export of the input's memory is held.
#include <fuzzer/FuzzedDataProvider.h>
#include <pybind11/stl.h>
#include <sanitizer/lsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "Common.hpp"
#include "PythonArgsObjects.hpp"
#include "PythonArgsSet.hpp"

extern "C" PyObject* PyInit_qaicrt();

namespace {

namespace py = pybind11;
namespace rt = qaic::rt;
using qaic::fuzz::DevicelessSet;
using qaic::fuzz::expectationOf;
using qaic::fuzz::Expected;
using qaic::fuzz::interned;
using qaic::fuzz::ObjectBuilder;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "python_args: %s\n", what.c_str());
  std::abort();
}

// LeakSanitizer off for one scope, in the builds that have it (the ASan ones: libFuzzer's, and the
// suite's replay under make sanitize); nothing elsewhere.
#if defined(__SANITIZE_ADDRESS__)
#define PYTHON_ARGS_HAS_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PYTHON_ARGS_HAS_LSAN 1
#endif
#endif
struct LeakCheckingOff {
  LeakCheckingOff() {
#ifdef PYTHON_ARGS_HAS_LSAN
    __lsan_disable();
#endif
  }
  ~LeakCheckingOff() {
#ifdef PYTHON_ARGS_HAS_LSAN
    __lsan_enable();
#endif
  }
  LeakCheckingOff(const LeakCheckingOff&) = delete;
  LeakCheckingOff& operator=(const LeakCheckingOff&) = delete;
};

// Starts the interpreter with Debian's paths, whatever the environment says. Every Python
// allocation goes through malloc (ASan and LSan see each object). The interpreter's start keeps
// objects LSan cannot trace (CPython's static and frozen objects hold them): they are allocated
// with leak checking off, and only they; every allocation made while an input runs is checked.
void startInterpreter() {
  const LeakCheckingOff leakCheckingOff;
  PyPreConfig pre;
  PyPreConfig_InitIsolatedConfig(&pre);
  pre.allocator = PYMEM_ALLOCATOR_MALLOC;
  if (PyStatus_Exception(Py_PreInitialize(&pre))) fail("Py_PreInitialize failed");
  if (PyImport_AppendInittab("qaicrt", PyInit_qaicrt) != 0) fail("cannot register the qaicrt module");
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  config.install_signal_handlers = 0;  // libFuzzer's handlers stay
  config.site_import = 1;              // Debian's dist-packages, where numpy is
  if (PyStatus_Exception(PyConfig_SetBytesString(&config, &config.home, QAICRT_PYTHON_HOME)))
    fail("cannot set the interpreter's home");
  const PyStatus status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) fail("the interpreter did not start (home " QAICRT_PYTHON_HOME ")");
  try {
    py::module_::import("numpy");
  } catch (py::error_already_set& e) {
    fail(std::string("numpy does not import (python3-numpy for ") + QAICRT_PYTHON_HOME + "/bin/python3): " + e.what());
  }
  py::module_::import("qaicrt");
  // The qaic package from the source tree (it imports qaicrt, the built-in).
  py::module_::import("sys").attr("path").attr("insert")(0, QAICRT_PACKAGE_DIR);
  py::module_::import("qaic");
}

// The outcome of one call into the module.
struct Outcome {
  bool ok = false;
  py::object value;
  std::string type;  // the exception's type name
  std::string message;
  bool documented = false;  // TypeError, ValueError or qaicrt.Error
  int status = -1;          // qaicrt.Error's QStatus
  bool invalidArgument = false;
};

template <typename Call>
Outcome call(Call&& body) {
  static const py::object error = py::module_::import("qaicrt").attr(interned("Error"));
  static const py::object invalid = py::module_::import("qaicrt").attr(interned("InvalidArgumentError"));
  Outcome outcome;
  try {
    outcome.value = body();
    outcome.ok = true;
  } catch (py::error_already_set& e) {
    const py::object value = e.value();
    outcome.type = py::str(py::type::handle_of(value).attr(interned("__name__")));
    outcome.message = py::str(value);
    const bool qaicrtError = py::isinstance(value, error);
    outcome.documented = qaicrtError || e.matches(PyExc_TypeError) || e.matches(PyExc_ValueError);
    outcome.invalidArgument = py::isinstance(value, invalid);
    if (qaicrtError) outcome.status = value.attr(interned("status")).cast<int>();
  }
  return outcome;
}

[[noreturn]] void unexpected(const char* operation, const Outcome& outcome, const std::string& expected) {
  fail(std::string(operation) + ": expected " + expected + ", got " +
       (outcome.ok ? std::string("success") : outcome.type + ": " + outcome.message));
}

// PYTHON_ARGS_TRACE=1: each call and its outcome on stderr.
bool tracing() {
  static const bool trace = std::getenv("PYTHON_ARGS_TRACE") != nullptr;
  return trace;
}

void requireDocumented(const char* operation, const Outcome& outcome) {
  if (tracing())
    std::fprintf(stderr, "python_args:   %s: %s\n", operation,
                 outcome.ok ? "ok" : (outcome.type + ": " + outcome.message).substr(0, 300).c_str());
  if (!outcome.ok && !outcome.documented)
    unexpected(operation, outcome, "success, TypeError, ValueError or qaicrt.Error");
}

// Reads every byte of [data, data + bytes) (ASan checks it lies inside one allocation) and
// compares it with `content`.
void requireBytes(const char* operation, uintptr_t data, std::size_t bytes, const std::string& content) {
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  if (bytes != content.size()) fail(std::string(operation) + ": a QBuffer of the wrong size");
  for (std::size_t i = 0; i < bytes; ++i)
    if (p[i] != static_cast<uint8_t>(content[i])) fail(std::string(operation) + ": a QBuffer over other bytes");
}

// Whether two of the buffers share memory (a DMA buffer's regions, one object twice): then what
// the device wrote through one may be overwritten through another.
bool overlapping(const std::vector<Expected>& buffers) {
  for (std::size_t i = 0; i < buffers.size(); ++i)
    for (std::size_t j = i + 1; j < buffers.size(); ++j)
      if (buffers[i].data < buffers[j].data + buffers[j].bytes && buffers[j].data < buffers[i].data + buffers[i].bytes)
        return true;
  return false;
}

struct Program {
  rt::ProgramLayout layout;
  std::vector<std::size_t> fullBytes;  // by buffer index
};

Program makeProgram(FuzzedDataProvider& input) {
  Program program;
  const int count = input.ConsumeIntegralInRange(1, 4);
  const bool specialized = input.ConsumeIntegralInRange(0, 3) == 0;
  for (int i = 0; i < count; ++i) {
    rt::BufferShapeRules rules;
    rules.isInput = i == 0 || input.ConsumeBool();
    rules.name = (rules.isInput ? "in" : "out") + std::to_string(i);
    rules.elementSize = std::size_t{1} << input.ConsumeIntegralInRange(0, 3);
    rules.dims.resize(input.ConsumeIntegralInRange(1, 3));
    for (auto& d : rules.dims) d = input.ConsumeIntegralInRange(1, 4);
    rules.isPartialAllowed = specialized || input.ConsumeBool();
    rules.skipPartialHeader = rules.allowSkip = rules.isPartialAllowed && input.ConsumeBool();
    if (specialized) {
      rt::IoDims smaller = rules.dims;
      smaller[0] = 1;
      rules.allowedShapes = {rules.dims, smaller};
    }
    rt::StagedBuffer staged;
    staged.mappingIndex = static_cast<uint32_t>(i);
    staged.name = rules.name;
    staged.isInput = rules.isInput;
    program.fullBytes.push_back(rt::dimsProduct(rules.dims) * rules.elementSize);
    program.layout.buffers.push_back(std::move(staged));
    program.layout.rules.push_back(std::move(rules));
  }
  return program;
}

enum class Op : uint8_t {
  QBufferOf,
  SetBuffers,
  SetInputBuffers,
  SetOutputBuffers,
  RunSync,
  SetBufferDims,
  SetBufferSkipped,
  Submit,
  PutCompleted,
  GetAvailable,
  DmaNumpy,
  DmaQBuffer,
  QpcFactory,
  KeepBusy,
  SessionRun,
  Count
};

class Session {
 public:
  explicit Session(FuzzedDataProvider& input) : input_(input), program_(makeProgram(input)) {
    auto set = std::make_shared<DevicelessSet>(program_.layout, input.ConsumeIntegralInRange(1, 2));
    set_ = set;
    auto state = std::make_shared<qaicrt::SetState>();
    state->set = set;
    for (const auto& buffer : program_.layout.buffers) {
      state->isInput.push_back(buffer.isInput);
      state->names.push_back(buffer.name);
    }
    state_ = state;
    setObject_ = py::cast(state);
    dma_ = setObject_.attr(interned("allocateDmaBuffer"))(input.ConsumeIntegralInRange(0, 256));
    builder_.emplace(input, dma_);
    acquire();
  }

  // Everything of the input released: the set (and its handles) must go, every handle must have
  // been given back by the calls that took one, no export of the input's memory may remain.
  ~Session() {
    handle_ = py::object();
    dma_ = py::object();
    setObject_ = py::object();
    builder_->releaseAll();
    if (!state_.expired() || !set_.expired()) fail("the InferenceSet outlived every Python reference to it");
  }

  void run(Op op) {
    switch (op) {
      case Op::QBufferOf: return qbufferOf();
      case Op::SetBuffers: return setBuffers("setBuffers", Which::All);
      case Op::SetInputBuffers: return setBuffers("setInputBuffers", Which::Inputs);
      case Op::SetOutputBuffers: return setBuffers("setOutputBuffers", Which::Outputs);
      case Op::RunSync: return runSync();
      case Op::SetBufferDims: return setBufferDims();
      case Op::SetBufferSkipped: return setBufferSkipped();
      case Op::Submit: return submit();
      case Op::PutCompleted: return putCompleted();
      case Op::GetAvailable: return acquire();
      case Op::DmaNumpy: return dmaNumpy();
      case Op::DmaQBuffer: return dmaQBuffer();
      case Op::QpcFactory: return qpcFactory();
      case Op::KeepBusy: return keepBusy();
      case Op::SessionRun: return sessionRun();
      case Op::Count: break;
    }
  }

 private:
  enum class Which { All, Inputs, Outputs };

  DevicelessSet& set() const { return *set_.lock(); }
  rt::InferenceHandleImpl* handle() const {
    if (handle_.is_none()) return nullptr;
    const auto& shared =
        handle_.attr(interned("__hash__"))().cast<std::size_t>();  // the bindings hash the handle's address
    for (const auto& h : set().handles())
      if (std::hash<const void*>()(h.get()) == shared) return h.get();
    fail("the handle object is none of the set's handles");
  }

  std::vector<std::size_t> indicesOf(Which which) const {
    std::vector<std::size_t> indices;
    for (std::size_t i = 0; i < program_.layout.buffers.size(); ++i)
      if (which == Which::All || (which == Which::Inputs) == program_.layout.buffers[i].isInput) indices.push_back(i);
    return indices;
  }

  // Mostly one object of the right size per buffer (calls get past conversion), sometimes any
  // object, and sometimes a count the program does not have.
  py::list items(const std::vector<std::size_t>& indices, std::vector<Expected>& expected) {
    py::list list;
    std::size_t count = indices.size();
    if (input_.ConsumeIntegralInRange(0, 7) == 7) count = input_.ConsumeIntegralInRange<std::size_t>(0, 5);
    for (std::size_t k = 0; k < count; ++k) {
      py::object item;
      const int kind = input_.ConsumeIntegralInRange(0, 7);
      if (k < indices.size() && kind < 5)
        item = builder_->arrayOfBytes(program_.fullBytes[indices[k]] >> (kind == 4 ? 1 : 0));
      else
        item = builder_->any();
      expected.push_back(expectationOf(item));
      list.append(item);
    }
    return list;
  }

  // The label the bindings' message must carry for item k of a list addressing `indices`.
  std::string labelOf(const std::vector<std::size_t>& indices, std::size_t k) const {
    if (k < indices.size()) return "'" + program_.layout.buffers[indices[k]].name + "'";
    return "item " + std::to_string(k);
  }

  // The failure the list's conversion must raise, if any: the first item that is no buffer.
  std::optional<std::size_t> firstUnconvertible(const std::vector<Expected>& expected) const {
    for (std::size_t k = 0; k < expected.size(); ++k)
      if (!expected[k].convertible()) return k;
    return std::nullopt;
  }

  void requireConversionError(const char* operation, const Outcome& outcome, const std::vector<std::size_t>& indices,
                              std::size_t k, const Expected& expected) {
    const std::string label = labelOf(indices, k);
    if (outcome.ok || !outcome.documented || outcome.message.find(label) == std::string::npos)
      unexpected(operation, outcome, "TypeError or ValueError naming " + label);
    if (!expected.hasBufferSlot && outcome.type != "TypeError")
      unexpected(operation, outcome, "TypeError for an object without a buffer");
  }

  std::optional<std::size_t> firstReadOnlyOutput(const std::vector<std::size_t>& indices,
                                                 const std::vector<Expected>& expected) const {
    for (std::size_t k = 0; k < expected.size() && k < indices.size(); ++k)
      if (!program_.layout.buffers[indices[k]].isInput && expected[k].readonly) return k;
    return std::nullopt;
  }

  void qbufferOf() {
    const py::object object = builder_->any();
    const Expected expected = expectationOf(object);
    const Outcome outcome = call([&] { return py::module_::import("qaicrt").attr(interned("QBuffer"))(object); });
    std::string what = "QBuffer(a " + std::string(py::str(py::type::handle_of(object).attr(interned("__name__")))) +
                       ")";
    try {  // numpy cannot print a 'U' array of invalid code points (SystemError)
      what = "QBuffer(" + std::string(py::repr(object)).substr(0, 200) + ")";
    } catch (py::error_already_set&) {
    }
    if (!expected.convertible()) {
      if (outcome.ok || !outcome.documented) unexpected(what.c_str(), outcome, "TypeError or ValueError");
      if (!expected.hasBufferSlot && outcome.type != "TypeError") unexpected(what.c_str(), outcome, "TypeError");
      if (expected.exportable && !outcome.invalidArgument && outcome.type != "ValueError")
        unexpected(what.c_str(), outcome, "ValueError for a buffer that is not C-contiguous");
      return;
    }
    if (!outcome.ok) unexpected(what.c_str(), outcome, "a QBuffer of a C-contiguous buffer");
    const py::object& q = outcome.value;
    if (q.attr(interned("buf")).cast<uintptr_t>() != expected.data ||
        q.attr(interned("size")).cast<std::size_t>() != expected.bytes ||
        q.attr(interned("readonly")).cast<bool>() != expected.readonly)
      fail("QBuffer: pointer, size or writability differ from the object's buffer");
    if (!expected.isQBuffer && !py::object(q.attr(interned("obj"))).is(object)) fail("QBuffer: .obj is not the object");
    requireBytes("QBuffer", expected.data, expected.bytes, expected.content);
  }

  void setBuffers(const char* operation, Which which) {
    if (handle_.is_none()) return;
    rt::InferenceHandleImpl& h = *handle();
    const auto indices = indicesOf(which);
    std::vector<Expected> expected;
    const py::list list = items(indices, expected);
    const bool acquired = h.state.state() == rt::HandleState::Acquired;
    const Outcome outcome = call([&] { return handle_.attr(interned(operation))(list); });
    if (const auto bad = firstUnconvertible(expected))
      return requireConversionError(operation, outcome, indices, *bad, expected[*bad]);
    if (const auto readOnly = firstReadOnlyOutput(indices, expected)) {
      if (!outcome.invalidArgument || outcome.message.find(labelOf(indices, *readOnly)) == std::string::npos)
        unexpected(operation, outcome,
                   "InvalidArgumentError naming the read-only output " + labelOf(indices, *readOnly));
      return;
    }
    if (!acquired) {
      if (outcome.status != rt::QS_WRONG_STATE) unexpected(operation, outcome, "QS_WRONG_STATE");
      return;
    }
    if (list.size() != indices.size()) {
      if (!outcome.invalidArgument || outcome.status != rt::QS_INVAL)
        unexpected(operation, outcome, "InvalidArgumentError for a wrong count");
      return;
    }
    if (!outcome.ok) unexpected(operation, outcome, "success");
    const py::list set = handle_.attr(interned("getBuffers"))();
    for (std::size_t k = 0; k < indices.size(); ++k) {
      const rt::QBuffer& b = h.buffers[indices[k]];
      if (reinterpret_cast<uintptr_t>(b.buf) != expected[k].data || b.size != expected[k].bytes)
        fail(std::string(operation) + ": the handle's QBuffer is not the object's memory");
      requireBytes(operation, expected[k].data, expected[k].bytes, expected[k].content);
      const py::object owner = set[indices[k]], given = list[k];
      if (!(expected[k].isQBuffer ? owner.is(given) : py::object(owner.attr(interned("obj"))).is(given)))
        fail(std::string(operation) + ": getBuffers() does not hold the object given");
    }
  }

  py::object dimsArgument() {
    switch (input_.ConsumeIntegralInRange(0, 3)) {
      case 0: return py::none();
      case 1: arbitraryArgument_ = true; return builder_->any();
      default: {
        py::list dims;
        for (std::size_t i = 0, n = input_.ConsumeIntegralInRange(0, 5); i < n; ++i) {
          if (input_.ConsumeIntegralInRange(0, 2) == 0) {
            dims.append(py::none());
            continue;
          }
          py::list d;
          for (std::size_t j = 0, m = input_.ConsumeIntegralInRange(0, 3); j < m; ++j)
            d.append(input_.ConsumeIntegralInRange(0, 9) == 9
                         ? (arbitraryArgument_ = true, builder_->any())
                         : py::object(py::int_(input_.ConsumeIntegralInRange(0, 5))));
          dims.append(d);
        }
        return dims;
      }
    }
  }

  py::object skippedArgument() {
    if (input_.ConsumeBool()) return py::none();
    py::list skipped;
    for (std::size_t i = 0, n = input_.ConsumeIntegralInRange(0, 5); i < n; ++i)
      skipped.append(input_.ConsumeIntegralInRange(0, 2) == 0 ? py::object(py::none())
                                                              : py::object(py::bool_(input_.ConsumeBool())));
    return skipped;
  }

  void runSync() {
    const auto indices = indicesOf(Which::All);
    std::vector<Expected> expected;
    const py::list list = items(indices, expected);
    arbitraryArgument_ = false;
    const py::object dims = dimsArgument(), skipped = skippedArgument();
    const py::object activation = input_.ConsumeBool() ? py::none()
                                                       : py::object(py::int_(input_.ConsumeIntegralInRange(0, 2)));
    const std::size_t out = set().handlesOut();
    const Outcome outcome = call([&] {
      return setObject_.attr(interned("_runSync"))(list, input_.ConsumeIntegral<uint32_t>(), dims, skipped,
                                                   input_.ConsumeBool(), input_.ConsumeBool(), activation);
    });
    if (set().handlesOut() != out) fail("_runSync: a handle was not given back");
    // The dims are read before the list is converted: an arbitrary object among them fails
    // there first, with a TypeError or ValueError naming it ("dims[1]", "dims[0][2]").
    if (arbitraryArgument_ && (outcome.type == "TypeError" || outcome.type == "ValueError") &&
        outcome.message.find("dims") != std::string::npos)
      return;
    if (const auto bad = firstUnconvertible(expected))
      return requireConversionError("_runSync", outcome, indices, *bad, expected[*bad]);
    requireDocumented("_runSync", outcome);
    if (!outcome.ok) return;
    const py::tuple result = outcome.value;
    if (result[0].cast<int>() != rt::QS_SUCCESS) return;
    if (firstReadOnlyOutput(indices, expected)) fail("_runSync: wrote into a read-only output");
    if (overlapping(expected)) return;
    for (std::size_t k = 0; k < indices.size(); ++k) {
      if (program_.layout.buffers[k].isInput) continue;
      const auto* p = reinterpret_cast<const uint8_t*>(expected[k].data);
      for (std::size_t i = 0; i < expected[k].bytes; ++i)
        if (p[i] != qaic::fuzz::outputPattern(i) && p[i] != static_cast<uint8_t>(expected[k].content[i]))
          fail("_runSync: an output was not written into its array in place");
    }
  }

  void setBufferDims() {
    if (handle_.is_none()) return;
    requireDocumented("setBufferDims", call([&] {
                        return handle_.attr(interned("setBufferDims"))(input_.ConsumeIntegralInRange(0, 5),
                                                                       dimsArgument());
                      }));
  }

  void setBufferSkipped() {
    if (handle_.is_none()) return;
    const py::object flag = input_.ConsumeBool() ? py::object(py::bool_(input_.ConsumeBool())) : builder_->any();
    requireDocumented("setBufferSkipped", call([&] {
                        return handle_.attr(interned("setBufferSkipped"))(input_.ConsumeIntegralInRange(0, 5), flag);
                      }));
  }

  void submit() {
    if (handle_.is_none()) return;
    const Outcome outcome = call(
        [&] { return setObject_.attr(interned("submit"))(handle_, input_.ConsumeIntegral<uint16_t>()); });
    requireDocumented("submit", outcome);
    if (!outcome.ok) return;
    requireDocumented("waitForCompletion",
                      call([&] { return setObject_.attr(interned("waitForCompletion"))(handle_); }));
    // The outputs the device wrote are what the Python objects of getBuffers() hold.
    const py::list buffers = handle_.attr(interned("getBuffers"))();
    std::vector<Expected> expected;
    for (const py::handle buffer : buffers)
      if (!buffer.is_none()) expected.push_back(expectationOf(buffer));
    if (expected.size() != buffers.size() || overlapping(expected)) return;
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      if (program_.layout.buffers[i].isInput || handle()->skipped[i]) continue;
      for (std::size_t k = 0; k < expected[i].bytes; ++k)
        if (static_cast<uint8_t>(expected[i].content[k]) != qaic::fuzz::outputPattern(k))
          fail("submit: an output's object does not hold what the device wrote");
    }
  }

  void putCompleted() {
    if (handle_.is_none()) return;
    requireDocumented("putCompleted", call([&] { return setObject_.attr(interned("putCompleted"))(handle_); }));
  }

  void acquire() {
    const Outcome outcome = call(
        [&] { return setObject_.attr(interned("getAvailable"))(input_.ConsumeIntegral<uint8_t>()); });
    requireDocumented("getAvailable", outcome);
    if (outcome.ok) handle_ = py::tuple(outcome.value)[1];
  }

  void dmaNumpy() {
    const char* const dtypes[] = {"u1", "<f4", "<f8", "<c16", "O", "S0", "V0", "U0", "f4,O", "V7", "q9", "M8[s]"};
    const py::object dtype = input_.ConsumeIntegralInRange(0, 9) == 0
                                 ? builder_->any()
                                 : py::object(py::str(dtypes[input_.ConsumeIntegralInRange(0, 11)]));
    py::object shape = py::none();
    switch (input_.ConsumeIntegralInRange(0, 3)) {
      case 1: shape = py::int_(input_.ConsumeIntegralInRange<int64_t>(-2, 300)); break;
      case 2: {
        py::list dims;
        const int64_t big[] = {0, 1, 3, int64_t{1} << 31, int64_t{1} << 32, int64_t{1} << 62, -1, INT64_MAX};
        for (std::size_t i = 0, n = input_.ConsumeIntegralInRange(0, 3); i < n; ++i)
          dims.append(input_.ConsumeBool() ? big[input_.ConsumeIntegralInRange(0, 7)]
                                           : input_.ConsumeIntegralInRange<int64_t>(0, 20));
        shape = dims;
        break;
      }
      case 3: shape = builder_->any(); break;
      default: break;
    }
    const std::size_t offset = input_.ConsumeIntegralInRange(0, 300);
    const auto base = dma_.attr(interned("data"))().cast<uintptr_t>();
    const auto size = dma_.attr(interned("size"))().cast<std::size_t>();
    const Outcome outcome = call([&] { return dma_.attr(interned("numpy"))(dtype, shape, offset); });
    requireDocumented("DmaBuffer.numpy", outcome);
    if (!outcome.ok) return;
    const py::object& array = outcome.value;
    if (array.attr(interned("dtype")).attr(interned("hasobject")).cast<bool>())
      fail("DmaBuffer.numpy: Python objects over device memory");
    const auto data = py::tuple(array.attr(interned("__array_interface__"))["data"])[0].cast<uintptr_t>();
    const auto bytes = array.attr(interned("nbytes")).cast<std::size_t>();
    if (data != base + offset || offset > size || bytes > size - offset)
      fail("DmaBuffer.numpy: an array reaching outside the buffer");
    const Expected e = expectationOf(array);
    if (e.exportable && e.contiguous) requireBytes("DmaBuffer.numpy", data, bytes, e.content);
  }

  void dmaQBuffer() {
    const std::size_t offset = input_.ConsumeIntegralInRange(0, 300), bytes = input_.ConsumeIntegralInRange(0, 300);
    const Outcome outcome = call([&] { return dma_.attr(interned("qbuffer"))(offset, bytes); });
    requireDocumented("DmaBuffer.qbuffer", outcome);
    if (!outcome.ok) return;
    const auto size = dma_.attr(interned("size"))().cast<std::size_t>();
    const auto base = dma_.attr(interned("data"))().cast<uintptr_t>();
    const Expected e = expectationOf(outcome.value);
    if (e.data != base + offset || offset > size || e.bytes > size - offset)
      fail("DmaBuffer.qbuffer: a region reaching outside the buffer");
    requireBytes("DmaBuffer.qbuffer", e.data, e.bytes, e.content);
  }

  void qpcFactory() {
    py::object object = builder_->any();
    if (py::isinstance<py::str>(object)) object = py::none();  // a path: Qpc(path) would read files
    requireDocumented("Qpc.Factory", call([&] {
                        return py::module_::import("qaicrt").attr(interned("Qpc")).attr(interned("Factory"))(object);
                      }));
  }

  // qaic.Session.run_benchmark's loop over the handles given (or other objects).
  void keepBusy() {
    py::list handles;
    for (std::size_t i = 0, n = input_.ConsumeIntegralInRange(0, 3); i < n; ++i)
      handles.append(input_.ConsumeIntegralInRange(0, 3) ? handle_ : builder_->any());
    const py::object count = input_.ConsumeIntegralInRange(0, 7) == 0
                                 ? py::none()
                                 : py::object(py::int_(input_.ConsumeIntegralInRange(0, 4)));
    const std::size_t out = set().handlesOut();
    const Outcome outcome = call([&] { return setObject_.attr(interned("_keepBusy"))(handles, 1, count, 0.01); });
    requireDocumented("_keepBusy", outcome);
    if (outcome.ok && set().handlesOut() > out) fail("_keepBusy: a handle was not given back");
  }

  // qaic.Session.run's conversion of {name: array} dicts (the qaic package over this set).
  void sessionRun() {
    static const py::module_ qaicrt = py::module_::import("qaicrt");
    static const py::object sessionType = py::module_::import("qaic").attr(interned("Session"));
    const int types[4][2] = {{/*1 byte*/ rt::BUFFER_DATA_TYPE_UINT8, rt::BUFFER_DATA_TYPE_INT8},
                             {rt::BUFFER_DATA_TYPE_FLOAT16, rt::BUFFER_DATA_TYPE_INT16Q},
                             {rt::BUFFER_DATA_TYPE_FLOAT, rt::BUFFER_DATA_TYPE_INT32I},
                             {rt::BUFFER_DATA_TYPE_INT64I, rt::BUFFER_DATA_TYPE_INVAL}};
    py::list mappings;
    for (std::size_t i = 0; i < program_.layout.rules.size(); ++i) {
      const rt::BufferShapeRules& rules = program_.layout.rules[i];
      py::object mapping = qaicrt.attr(interned("v2")).attr(interned("BufferMapping"))();
      mapping.attr(interned("bufferName")) = rules.name;
      mapping.attr(interned("index")) = i;
      mapping.attr(interned("ioType")) = rules.isInput ? rt::BUFFER_IO_TYPE_INPUT : rt::BUFFER_IO_TYPE_OUTPUT;
      mapping.attr(interned("size")) = program_.fullBytes[i];
      mapping.attr(interned("isPartialBufferAllowed")) = rules.isPartialAllowed;
      mapping.attr(interned("skipPartialHeader")) = rules.skipPartialHeader;
      mapping.attr(interned("allowSkip")) = rules.allowSkip;
      const int sizeIndex = rules.elementSize == 1 ? 0 : rules.elementSize == 2 ? 1 : rules.elementSize == 4 ? 2 : 3;
      mapping.attr(interned("dataType")) = static_cast<rt::QAicBufferDataTypeEnum>(
          types[sizeIndex][input_.ConsumeIntegralInRange(0, 7) == 7 ? 1 : 0]);
      py::object shapes = qaicrt.attr(interned("v2")).attr(interned("IoShapes"))();
      shapes.attr(interned("defaultDims")) = rules.dims;
      shapes.attr(interned("allowedDims")) = rules.allowedShapes.empty() ? std::vector<rt::IoDims>{rules.dims}
                                                                         : rules.allowedShapes;
      mapping.attr(interned("ioShapes")) = shapes;
      mappings.append(mapping);
    }
    py::object session = sessionType.attr(interned("__new__"))(sessionType);
    session.attr(interned("model_path")) = "python_args";
    session.attr(interned("num_activations")) = 1;
    session.attr(interned("inference_set")) = setObject_;
    const Outcome attached = call([&] { return session.attr(interned("_attach"))(mappings, py::list()); });
    requireDocumented("Session._attach", attached);  // ValueError for BUFFER_DATA_TYPE_INVAL
    if (!attached.ok) return;
    py::dict inputs, outputs;
    for (std::size_t i = 0; i < program_.layout.rules.size(); ++i) {
      const rt::BufferShapeRules& rules = program_.layout.rules[i];
      const py::object dtype = mappings[i].attr(interned("dataType"));
      py::object value;
      switch (input_.ConsumeIntegralInRange(0, 7)) {
        case 5: continue;  // left out
        case 6: value = builder_->any(); break;
        case 7: value = builder_->arrayOfBytes(program_.fullBytes[i]).attr(interned("tolist"))(); break;
        default: {
          try {  // the program's dtype and dims over the harness's memory, or near them
            const py::object numpyType = py::module_::import("qaic").attr(interned("numpy_dtype"))(dtype);
            py::object array = builder_->arrayOfBytes(program_.fullBytes[i]).attr(interned("view"))(numpyType);
            value = array.attr(interned("reshape"))(py::tuple(py::cast(rules.dims)));
          } catch (py::error_already_set&) {
            value = builder_->any();
          }
        }
      }
      (rules.isInput || input_.ConsumeIntegralInRange(0, 3) == 3 ? inputs : outputs)[py::str(rules.name)] = value;
    }
    if (input_.ConsumeIntegralInRange(0, 7) == 0) inputs[py::str("unknown")] = py::none();
    const py::object activation = input_.ConsumeBool() ? builder_->any() : py::none();
    const std::size_t out = set().handlesOut();
    const Outcome outcome = call([&] { return session.attr(interned("run"))(inputs, outputs, activation); });
    requireDocumented("Session.run", outcome);
    if (set().handlesOut() != out) fail("Session.run: a handle was not given back");
    if (!outcome.ok) return;
    const py::dict results = outcome.value;
    for (std::size_t i = 0; i < program_.layout.rules.size(); ++i) {
      const rt::BufferShapeRules& rules = program_.layout.rules[i];
      if (rules.isInput) continue;
      const py::str name(rules.name);
      if (!results.contains(name)) fail("Session.run: output '" + rules.name + "' missing from the results");
      if (outputs.contains(name)) continue;  // the caller's array (it may share memory with another)
      const Expected e = expectationOf(results[name]);
      for (std::size_t k = 0; k < e.bytes; ++k)
        if (static_cast<uint8_t>(e.content[k]) != qaic::fuzz::outputPattern(k))
          fail("Session.run: output '" + rules.name + "' is not what the device wrote");
    }
  }

  FuzzedDataProvider& input_;
  bool arbitraryArgument_ = false;  // an argument besides the buffer list is any object
  Program program_;
  std::weak_ptr<DevicelessSet> set_;
  std::weak_ptr<qaicrt::SetState> state_;
  py::object setObject_, dma_, handle_ = py::none();
  std::optional<ObjectBuilder> builder_;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  startInterpreter();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  try {
    Session session(input);
    for (int i = 0; i < 8 && input.remaining_bytes() > 0; ++i) {
      const auto op = static_cast<Op>(input.ConsumeIntegralInRange<int>(0, static_cast<int>(Op::Count) - 1));
      if (tracing()) std::fprintf(stderr, "python_args: op %d\n", static_cast<int>(op));
      session.run(op);
    }
  } catch (py::error_already_set& e) {
    fail(std::string("the harness's own Python call failed: ") + e.what());
  }
  if (PyErr_Occurred()) fail("a Python error was left set");
  return 0;
}
