// SPDX-License-Identifier: Apache-2.0
// Internal: strict field access on parsed JSON objects. Every failure throws IrError whose
// message starts with `where` (e.g. "net.json: io[0] 'image'") and names the field.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ir/Graph.hpp"

namespace qaic::ir::json_fields {

using Json = nlohmann::json;

struct Where {
  std::string text;    // message prefix
  std::string opName;  // carried into IrError::opName
};

[[noreturn]] void fail(const Where& where, const std::string& detail);
void requireObject(const Json& value, const Where& where);
void rejectUnknownKeys(const Json& object, std::initializer_list<std::string_view> allowed, const Where& where);
const Json& requireKey(const Json& object, std::string_view key, const Where& where);
const Json& requireArray(const Json& object, std::string_view key, const Where& where);
std::string requireString(const Json& object, std::string_view key, const Where& where);
bool optionalBool(const Json& object, std::string_view key, const Where& where, bool fallback);
// An array of 1..kMaxRank exact integers, each >= minimum.
Dims requireDims(const Json& value, std::string_view field, const Where& where, int64_t minimum);

}  // namespace qaic::ir::json_fields
