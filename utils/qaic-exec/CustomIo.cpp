// SPDX-License-Identifier: Apache-2.0
#include "CustomIo.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>

#include "CompileError.hpp"
#include "GraphEdits.hpp"
#include "ir/OpRegistry.hpp"

namespace qaic::compiler {
namespace {

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

// A YAML scalar as this file writes it: bare, or in single or double quotes.
std::string unquoted(const std::string& value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
    return value.substr(1, value.size() - 2);
  return value;
}

std::optional<ir::DType> precisionOf(const std::string& value) {
  std::string lower = value;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (lower == "float16" || lower == "fp16" || lower == "half") return ir::DType::Float16;
  if (lower == "float" || lower == "float32" || lower == "fp32") return ir::DType::Float;
  return std::nullopt;
}

}  // namespace

std::vector<CustomIoEntry> readCustomIoList(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw CompileError(path + ": -custom-IO-list-file: cannot open the file");
  std::vector<CustomIoEntry> entries;
  std::map<std::string, int> seen;
  struct Pending {
    std::string name, precision;
    int nameLine = 0, itemLine = 0;
  };
  std::optional<Pending> item;
  const auto finish = [&] {
    if (!item) return;
    const std::string where = path + ":" + std::to_string(item->itemLine) + ": ";
    if (item->name.empty()) throw CompileError(where + "the list item has no IOName");
    if (item->precision.empty()) throw CompileError(where + "IOName '" + item->name + "' has no Precision");
    const auto precision = precisionOf(item->precision);
    if (!precision) {
      throw CompileError(where + "IOName '" + item->name + "': Precision '" + item->precision +
                         "' is not supported (float16 or float)");
    }
    if (const auto it = seen.find(item->name); it != seen.end()) {
      throw CompileError(where + "IOName '" + item->name + "' is listed again (first at line " +
                         std::to_string(it->second) + ")");
    }
    seen[item->name] = item->nameLine;
    entries.push_back({item->name, *precision, item->nameLine});
    item.reset();
  };
  std::string raw;
  for (int line = 1; std::getline(in, raw); ++line) {
    std::string text = trimmed(raw.substr(0, raw.find('#')));
    if (text.empty() || text == "---") continue;
    const std::string where = path + ":" + std::to_string(line) + ": ";
    if (text.front() == '-') {
      finish();
      item = Pending{};
      item->itemLine = line;
      text = trimmed(text.substr(1));
      if (text.empty()) continue;
    }
    if (!item) throw CompileError(where + "expected a list item ('- IOName: <buffer>')");
    const auto colon = text.find(':');
    if (colon == std::string::npos) throw CompileError(where + "expected 'key: value', got '" + text + "'");
    const std::string key = trimmed(text.substr(0, colon));
    const std::string value = unquoted(trimmed(text.substr(colon + 1)));
    if (key == "IOName") {
      if (!item->name.empty()) throw CompileError(where + "a second IOName in one list item");
      if (value.empty()) throw CompileError(where + "IOName is empty");
      item->name = value;
      item->nameLine = line;
    } else if (key == "Precision") {
      if (!item->precision.empty()) throw CompileError(where + "a second Precision in one list item");
      item->precision = value;
    } else {
      throw CompileError(where + "unknown key '" + key + "' (IOName and Precision are understood)");
    }
  }
  finish();
  return entries;
}

void applyCustomIo(ir::Graph& graph, const std::vector<CustomIoEntry>& entries, const std::string& path) {
  std::vector<ir::Op> front, back;
  for (const CustomIoEntry& entry : entries) {
    const std::string where = path + ":" + std::to_string(entry.line) + ": IOName '" + entry.name + "': ";
    const auto io = std::find_if(graph.io.begin(), graph.io.end(),
                                 [&](const ir::IoBuffer& b) { return b.bufferName == entry.name; });
    if (io == graph.io.end()) {
      std::string names;
      for (const auto& b : graph.io) names += (names.empty() ? "" : ", ") + b.bufferName;
      throw CompileError(where + "the network has no io buffer of that name (it has " + names + ")");
    }
    if (io->dtype == entry.precision) continue;
    if (io->dtype != ir::DType::Float) {
      throw CompileError(where + "the buffer is " + std::string(ir::dtypeName(io->dtype)) +
                         "; only float buffers take another precision");
    }
    const std::string given = uniqueTensorName(graph, io->tensor + "_" + std::string(ir::dtypeName(entry.precision)));
    graph.tensors[given] = {entry.precision, io->dims};  // reserves the name; inferShapes refills it
    if (io->direction == ir::Direction::In) {
      front.push_back(castOp(uniqueOpName(graph, "custom_io_" + entry.name), given, io->tensor, ir::DType::Float));
    } else {
      back.push_back(castOp(uniqueOpName(graph, "custom_io_" + entry.name), io->tensor, given, entry.precision));
    }
    io->tensor = given;
    io->dtype = entry.precision;
    io->deviceFormat = {ir::DeviceLayout::Flat, entry.precision};
  }
  graph.ops.insert(graph.ops.begin(), front.begin(), front.end());
  graph.ops.insert(graph.ops.end(), back.begin(), back.end());
  ir::inferShapes(graph);
}

}  // namespace qaic::compiler
