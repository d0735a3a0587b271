// SPDX-License-Identifier: Apache-2.0
#include "ir/JsonFields.hpp"

#include <cmath>

namespace qaic::ir::json_fields {

void fail(const Where& where, const std::string& detail) { throw IrError(where.text + ": " + detail, where.opName); }

void requireObject(const Json& value, const Where& where) {
  if (!value.is_object()) fail(where, std::string("expected an object, got ") + value.type_name());
}

void rejectUnknownKeys(const Json& object, std::initializer_list<std::string_view> allowed, const Where& where) {
  for (const auto& item : object.items()) {
    bool known = false;
    for (std::string_view key : allowed) known = known || key == item.key();
    if (!known) fail(where, "unknown key '" + item.key() + "'");
  }
}

const Json& requireKey(const Json& object, std::string_view key, const Where& where) {
  const auto it = object.find(key);
  if (it == object.end()) fail(where, "missing key '" + std::string(key) + "'");
  return *it;
}

const Json& requireArray(const Json& object, std::string_view key, const Where& where) {
  const Json& value = requireKey(object, key, where);
  if (!value.is_array()) {
    fail(where, "key '" + std::string(key) + "': expected an array, got " + value.type_name());
  }
  return value;
}

std::string requireString(const Json& object, std::string_view key, const Where& where) {
  const Json& value = requireKey(object, key, where);
  if (!value.is_string()) {
    fail(where, "key '" + std::string(key) + "': expected a string, got " + value.type_name());
  }
  std::string text = value.get<std::string>();
  if (text.empty()) fail(where, "key '" + std::string(key) + "': empty string");
  return text;
}

bool optionalBool(const Json& object, std::string_view key, const Where& where, bool fallback) {
  const auto it = object.find(key);
  if (it == object.end()) return fallback;
  if (!it->is_boolean()) {
    fail(where, "key '" + std::string(key) + "': expected a bool, got " + it->type_name());
  }
  return it->get<bool>();
}

Dims requireDims(const Json& value, std::string_view field, const Where& where, int64_t minimum) {
  const std::string prefix = "key '" + std::string(field) + "': ";
  if (!value.is_array() || value.empty() || value.size() > kMaxRank) {
    fail(where, prefix + "expected an array of 1.." + std::to_string(kMaxRank) + " integers");
  }
  Dims dims;
  for (const Json& element : value) {
    if (!element.is_number()) fail(where, prefix + "expected integers, got " + element.type_name());
    const double number = element.get<double>();
    if (number != std::trunc(number) || number < static_cast<double>(minimum) || number > 9007199254740992.0) {
      fail(where, prefix + "dimension " + element.dump() + " is not an integer >= " + std::to_string(minimum));
    }
    dims.push_back(static_cast<int64_t>(number));
  }
  return dims;
}

}  // namespace qaic::ir::json_fields
