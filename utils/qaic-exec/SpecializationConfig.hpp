// SPDX-License-Identifier: Apache-2.0
// -network-specialization-config=FILE, the vendor's format:
//   {"specializations": [{"batch_size": "1", "seq_len": "32", "ctx_len": "128"}, ...]}
// Each entry binds ONNX symbolic dims (values are decimal strings, as the vendor writes them, or
// JSON integers) and becomes one allowed shape combination of the program.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace qaic::compiler {

using Specialization = std::map<std::string, int64_t>;  // symbol -> value

// Throws CompileError naming the file and the field (e.g. "specializations[1].seq_len: ...").
std::vector<Specialization> parseSpecializationConfig(std::string_view jsonText, const std::string& fileName);
std::vector<Specialization> loadSpecializationConfig(const std::string& path);

// "seq_len=32, ctx_len=128": how messages name an entry.
std::string describeSpecialization(const Specialization& specialization);

}  // namespace qaic::compiler
