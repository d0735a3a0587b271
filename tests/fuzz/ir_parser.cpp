// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as an IR file. parseGraph and inferShapes may only throw
// IrError; a graph that parses must survive toJson and parse again to the same JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ir/Graph.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  qaic::ir::Graph graph;
  try {
    graph = qaic::ir::parseGraph(text, "fuzz.json");
  } catch (const qaic::ir::IrError&) {
    return 0;
  }
  const std::string json = qaic::ir::toJson(graph);
  try {
    if (qaic::ir::toJson(qaic::ir::parseGraph(json, "again.json")) != json) std::abort();
  } catch (const qaic::ir::IrError&) {
    std::abort();  // toJson wrote something parseGraph rejects
  }
  try {
    qaic::ir::inferShapes(graph);
  } catch (const qaic::ir::IrError&) {
  }
  return 0;
}
