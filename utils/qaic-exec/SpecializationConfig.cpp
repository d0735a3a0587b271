// SPDX-License-Identifier: Apache-2.0
#include "SpecializationConfig.hpp"

#include <charconv>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "CompileError.hpp"

namespace qaic::compiler {
namespace {

// Large enough for any dim the importer accepts (it bounds elements at 2^32).
constexpr int64_t kMaxSymbolValue = int64_t{1} << 32;
constexpr std::size_t kMaxSpecializations = 4096;
constexpr std::size_t kMaxConfigBytes = 16u << 20;

[[noreturn]] void fail(const std::string& file, const std::string& field, const std::string& what) {
  throw CompileError(file + ": " + field + ": " + what);
}

int64_t symbolValue(const nlohmann::json& value, const std::string& file, const std::string& field) {
  int64_t parsed = 0;
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
      fail(file, field, "'" + text + "' is not a decimal integer");
  } else if (value.is_number_integer()) {
    parsed = value.get<int64_t>();
  } else {
    fail(file, field, "expected a decimal string or an integer, got " + std::string(value.type_name()));
  }
  if (parsed < 1 || parsed > kMaxSymbolValue)
    fail(file, field, std::to_string(parsed) + " is not in [1, " + std::to_string(kMaxSymbolValue) + "]");
  return parsed;
}

}  // namespace

std::vector<Specialization> parseSpecializationConfig(std::string_view jsonText, const std::string& fileName) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(jsonText);
  } catch (const nlohmann::json::parse_error& e) {
    fail(fileName, "json", std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) fail(fileName, "(top level)", "expected an object with \"specializations\"");
  for (const auto& [key, value] : root.items()) {
    (void)value;
    if (key != "specializations") fail(fileName, key, "unknown key (the file has only \"specializations\")");
  }
  const auto it = root.find("specializations");
  if (it == root.end()) fail(fileName, "specializations", "missing");
  if (!it->is_array() || it->empty()) fail(fileName, "specializations", "expected a non-empty array");
  if (it->size() > kMaxSpecializations)
    fail(fileName, "specializations", "more than " + std::to_string(kMaxSpecializations) + " entries");
  std::vector<Specialization> out;
  std::set<Specialization> seen;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const std::string field = "specializations[" + std::to_string(i) + "]";
    const nlohmann::json& entry = (*it)[i];
    if (!entry.is_object() || entry.empty()) fail(fileName, field, "expected a non-empty object of symbol values");
    Specialization s;
    for (const auto& [symbol, value] : entry.items()) s[symbol] = symbolValue(value, fileName, field + "." + symbol);
    if (!seen.insert(s).second) fail(fileName, field, "repeats an earlier entry (" + describeSpecialization(s) + ")");
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<Specialization> loadSpecializationConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CompileError(path + ": cannot read the network specialization config");
  std::string text;
  text.reserve(4096);
  char chunk[4096];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxConfigBytes) throw CompileError(path + ": larger than 16 MiB; not a specialization config");
  }
  return parseSpecializationConfig(text, path);
}

std::string describeSpecialization(const Specialization& specialization) {
  std::string text;
  for (const auto& [symbol, value] : specialization)
    text += (text.empty() ? "" : ", ") + symbol + "=" + std::to_string(value);
  return text;
}

}  // namespace qaic::compiler
