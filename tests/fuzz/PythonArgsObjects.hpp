// SPDX-License-Identifier: Apache-2.0
// The Python objects python_args passes to the qaicrt bindings, built from the fuzz input, and what
// the harness knows of each independently of the module (through the exporter's own buffer: any
// layout, and its element format where it has one): whether it has a buffer, whether that is
// C-contiguous and writable, where its memory is and its bytes. Array memory is the harness's own:
// an exact-size heap block per array (np.frombuffer over a memoryview of it), so ASan sees a read
// one byte past an array; the blocks are freed at the end of the input, after checking that no
// buffer export of them is still held.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

namespace qaic::fuzz {

namespace py = pybind11;

// An interned attribute name: looking up a fresh string each time would allocate one that
// CPython's type attribute cache may keep, and libFuzzer would take every such input for a leak
// to check (a full LeakSanitizer pass).
py::handle interned(const char* name);

struct Expected {
  bool hasBufferSlot = false;  // the type implements the buffer protocol
  bool exportable = false;     // a full export succeeds
  bool contiguous = false;     // C-contiguous
  bool readonly = true;
  bool holdsObjects = false;  // its element format has Python objects ('O')
  bool isQBuffer = false;
  uintptr_t data = 0;
  std::size_t bytes = 0;
  std::string content;  // the bytes in C order, when contiguous
  bool convertible() const { return isQBuffer || (exportable && contiguous && !holdsObjects); }
};

Expected expectationOf(const py::handle& object);

class ObjectBuilder {
 public:
  // `dma` is a DmaBuffer object some objects are made from (may be None).
  ObjectBuilder(FuzzedDataProvider& input, py::object dma);
  ~ObjectBuilder();  // fails loudly when an export of the harness's memory is still held

  // Any object: arrays (many dtypes, shapes, views), bytes, bytearray, memoryview, QBuffer, DMA
  // regions, None, numbers, strings, containers.
  py::object any(int depth = 0);
  // An array of exactly `bytes` bytes, most often C-contiguous and writable (so that calls get
  // past conversion), sometimes a view that is not, or read-only.
  py::object arrayOfBytes(std::size_t bytes);
  // Releases every object of the input; then no export of its memory may remain.
  void releaseAll();

 private:
  struct Block {
    void* memory = nullptr;
    py::object view;  // the memoryview numpy arrays are made over
  };
  py::object harnessArray(const py::object& dtype, const std::vector<py::ssize_t>& shape, bool readonly);
  py::object anyKind(int depth);
  py::object array();
  py::object transformed(py::object array);

  FuzzedDataProvider& input_;
  py::object dma_;
  py::module_ numpy_;
  std::vector<Block> blocks_;
};

}  // namespace qaic::fuzz
