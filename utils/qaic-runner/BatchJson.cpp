// SPDX-License-Identifier: Apache-2.0
#include "BatchJson.hpp"

#include <sys/stat.h>

#include <array>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

namespace qaic::runner {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxRank = 8;

struct Location {
  const std::string& file;
  std::size_t set;
  std::size_t entry;
};

[[noreturn]] void fail(const Location& at, std::string_view field, const std::string& what) {
  std::ostringstream out;
  out << at.file << ": IO set " << at.set << ", entry " << at.entry << ", field \"" << field << "\": " << what;
  throw BatchJsonError(out.str());
}

[[noreturn]] void failFile(const std::string& file, const std::string& what) {
  throw BatchJsonError(file + ": " + what);
}

std::string dimsText(const Dims& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

// Product with overflow detection; nullopt when it exceeds what a buffer could ever be.
std::optional<uint64_t> checkedProduct(const Dims& dims, std::size_t elementSize) {
  uint64_t total = elementSize;
  for (uint64_t d : dims) {
    if (d != 0 && total > std::numeric_limits<uint64_t>::max() / d) return std::nullopt;
    total *= d;
  }
  return total;
}

std::string resolvePath(const std::string& baseDir, const std::string& path) {
  if (!path.empty() && path.front() == '/') return path;
  if (baseDir.empty()) return path;
  return baseDir + "/" + path;
}

Dims parseDims(const json& value, const Location& at) {
  if (!value.is_array()) fail(at, "dims", "must be an array of integers");
  if (value.empty()) fail(at, "dims", "empty array; use [0] for an empty buffer");
  if (value.size() > kMaxRank) fail(at, "dims", std::to_string(value.size()) + " entries (1 to 8 allowed)");
  Dims dims;
  for (const json& d : value) {
    if (!d.is_number_integer()) fail(at, "dims", "entries must be integers");
    int64_t v = d.get<int64_t>();
    if (v < 0) fail(at, "dims", "negative dimension " + std::to_string(v));
    dims.push_back(static_cast<uint64_t>(v));
  }
  // [0] is the spelling of an empty buffer; a zero elsewhere is a contradiction.
  if (dims.size() > 1) {
    for (uint64_t d : dims)
      if (d == 0) fail(at, "dims", dimsText(dims) + " has a zero dimension; use [0] for an empty buffer");
  }
  return dims;
}

std::optional<uint64_t> fileSize(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return static_cast<uint64_t>(st.st_size);
}

IoEntry parseEntry(const json& item, const Location& at, const std::string& baseDir,
                   const std::vector<NetworkBuffer>& network, const BatchJsonOptions& options) {
  if (!item.is_object()) fail(at, "(entry)", "must be an object");
  for (const auto& [key, value] : item.items()) {
    static constexpr std::array<std::string_view, 7> known = {"path",   "data-type", "elem-size",      "io-direction",
                                                              "map-to", "dims",      "skip-validation"};
    bool isKnown = false;
    for (auto k : known) isKnown = isKnown || k == key;
    if (!isKnown) fail(at, key, "unknown field");
  }

  IoEntry entry;
  auto mapTo = item.find("map-to");
  if (mapTo == item.end()) fail(at, "map-to", "missing");
  if (!mapTo->is_string()) fail(at, "map-to", "must be a string");
  const std::string bufferName = mapTo->get<std::string>();
  std::size_t index = network.size();
  for (std::size_t i = 0; i < network.size(); ++i)
    if (network[i].name == bufferName) index = i;
  if (index == network.size()) fail(at, "map-to", "no network buffer named '" + bufferName + "'");
  const NetworkBuffer& buffer = network[index];
  entry.networkIndex = index;

  auto direction = item.find("io-direction");
  if (direction == item.end()) fail(at, "io-direction", "missing");
  if (!direction->is_string() || (*direction != "in" && *direction != "out"))
    fail(at, "io-direction", "must be \"in\" or \"out\"");
  entry.isInput = *direction == "in";
  if (entry.isInput != buffer.isInput)
    fail(at, "io-direction", "'" + bufferName + "' is an " + (buffer.isInput ? "input" : "output") + " of the network");

  auto path = item.find("path");
  if (path == item.end()) fail(at, "path", "missing");
  if (!path->is_string() || path->get<std::string>().empty()) fail(at, "path", "must be a non-empty string");
  entry.path = resolvePath(baseDir, path->get<std::string>());

  auto dataType = item.find("data-type");
  auto elemSize = item.find("elem-size");
  if (dataType == item.end() && elemSize == item.end())
    fail(at, "data-type", "missing (one of data-type or elem-size is required)");
  std::optional<std::size_t> size;
  if (dataType != item.end()) {
    if (!dataType->is_string()) fail(at, "data-type", "must be a string");
    size = batchDataTypeSize(dataType->get<std::string>());
    if (!size) fail(at, "data-type", "unknown data type \"" + dataType->get<std::string>() + "\"");
  }
  if (elemSize != item.end()) {
    if (!elemSize->is_number_integer() || elemSize->get<int64_t>() <= 0)
      fail(at, "elem-size", "must be a positive integer");
    auto given = static_cast<std::size_t>(elemSize->get<int64_t>());
    if (size && *size != given)
      fail(at, "elem-size", std::to_string(given) + " disagrees with data-type (" + std::to_string(*size) + " bytes)");
    size = given;
  }
  if (*size != buffer.elementSize)
    fail(at, elemSize != item.end() ? "elem-size" : "data-type",
         "element size " + std::to_string(*size) + " but network buffer '" + bufferName + "' has " +
             std::to_string(buffer.elementSize));
  entry.elementSize = *size;

  auto skip = item.find("skip-validation");
  if (skip != item.end()) {
    if (!skip->is_boolean()) fail(at, "skip-validation", "must be true or false");
    if (entry.isInput) fail(at, "skip-validation", "valid only on output entries");
    entry.skipValidation = skip->get<bool>();
  }

  auto dims = item.find("dims");
  entry.dims = dims != item.end() ? parseDims(*dims, at) : buffer.dims;
  auto bytes = checkedProduct(entry.dims, entry.elementSize);
  if (!bytes) fail(at, "dims", dimsText(entry.dims) + " is too large");
  if (dims != item.end()) {
    try {
      qaic::rt::validateBuffer(buffer, {true, entry.dims, static_cast<std::size_t>(*bytes)});
    } catch (const qaic::rt::Error& e) {
      fail(at, "dims", e.what());
    }
  }

  // Only files that will be read are required: inputs always, outputs when -c compares them.
  const bool needsFile = entry.isInput || (options.checkOutputs && !entry.skipValidation);
  if (needsFile) {
    auto actual = fileSize(entry.path);
    if (!actual) fail(at, "path", "cannot read file '" + entry.path + "'");
    if (*actual != *bytes)
      fail(at, "path",
           "'" + entry.path + "' has " + std::to_string(*actual) + " bytes, expected " + std::to_string(*bytes) + " (" +
               dimsText(entry.dims) + " x " + std::to_string(entry.elementSize) + ")");
  }
  return entry;
}

}  // namespace

std::size_t IoEntry::bytes() const { return static_cast<std::size_t>(*checkedProduct(dims, elementSize)); }

std::optional<std::size_t> batchDataTypeSize(const std::string& dataType) {
  static const std::array<std::pair<std::string_view, std::size_t>, 10> table = {{
      {"int8_t", 1},
      {"uint8_t", 1},
      {"int16_t", 2},
      {"uint16_t", 2},
      {"float16", 2},
      {"int", 4},
      {"uint", 4},
      {"float", 4},
      {"int64_t", 8},
      {"uint64_t", 8},
  }};
  for (const auto& [name, size] : table)
    if (name == dataType) return size;
  return std::nullopt;
}

BatchSpec parseBatchJson(const std::string& text, const std::string& sourcePath, const std::string& baseDir,
                         const std::vector<NetworkBuffer>& network, const BatchJsonOptions& options) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 5e0555
    failFile(sourcePath, std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) failFile(sourcePath, "top level must be an object with \"IO-files\"");
  auto files = root.find("IO-files");
  if (files == root.end()) failFile(sourcePath, "missing top-level key \"IO-files\"");
  if (!files->is_array() || files->empty()) failFile(sourcePath, "\"IO-files\" must be a non-empty array of IO sets");

  BatchSpec spec;
  spec.sourcePath = sourcePath;
  for (std::size_t s = 0; s < files->size(); ++s) {
    const json& setJson = (*files)[s];
    if (!setJson.is_array()) fail({sourcePath, s, 0}, "(IO set)", "must be an array of IO entries");
    IoSet set;
    set.buffers.resize(network.size());
    for (std::size_t e = 0; e < setJson.size(); ++e) {
      Location at{sourcePath, s, e};
      IoEntry entry = parseEntry(setJson[e], at, baseDir, network, options);
      if (set.buffers[entry.networkIndex])
        fail(at, "map-to", "'" + network[entry.networkIndex].name + "' appears twice in this IO set");
      set.buffers[entry.networkIndex] = std::move(entry);
    }
    for (std::size_t b = 0; b < network.size(); ++b) {
      if (set.buffers[b]) continue;
      const NetworkBuffer& buffer = network[b];
      if (!(buffer.isPartialAllowed && buffer.skipPartialHeader && buffer.allowSkip))
        throw BatchJsonError(sourcePath + ": IO set " + std::to_string(s) +
                             ", entry (none), field \"map-to\": network buffer '" + buffer.name +
                             "' has no entry and cannot be dropped (selective IO needs "
                             "is_partial_allowed, skip_partial_header and allow_skip)");
    }
    // The cross-buffer rule: a specialized network takes one allowed combination per IO set.
    std::vector<qaic::rt::IoSetEntry> shapes(network.size());
    for (std::size_t b = 0; b < network.size(); ++b) {
      shapes[b].present = set.buffers[b].has_value();
      if (set.buffers[b]) {
        shapes[b].dims = set.buffers[b]->dims;
        shapes[b].bytes = set.buffers[b]->bytes();
      }
    }
    try {
      set.specialization = qaic::rt::validateIoSet(network, shapes).specialization;
    } catch (const qaic::rt::Error& e) {
      throw BatchJsonError(sourcePath + ": IO set " + std::to_string(s) + ", entry (all), field \"dims\": " + e.what());
    }
    spec.sets.push_back(std::move(set));
  }
  return spec;
}

BatchSpec loadBatchJson(const std::string& path, const std::vector<NetworkBuffer>& network,
                        const BatchJsonOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) failFile(path, "cannot open batch JSON file");
  std::ostringstream text;
  text << in.rdbuf();
  const auto slash = path.find_last_of('/');
  const std::string baseDir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  return parseBatchJson(text.str(), path, baseDir, network, options);
}

}  // namespace qaic::runner
