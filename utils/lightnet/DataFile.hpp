// SPDX-License-Identifier: Apache-2.0
// lightnet's tensor data file (-f): a count, then per tensor `name type len` followed by `len`
// hex words; type 0 is TL_FLOAT (IEEE-754 bit patterns), type 2 is TL_INT8 (low 8 bits).
#pragma once

#include <cstddef>
#include <istream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/Graph.hpp"

namespace qaic::lightnet {

struct DataTensor {
  std::string name;
  ir::DType dtype = ir::DType::Float;
  int64_t length = 0;
  std::vector<std::byte> data;  // length * dtypeSize(dtype)
};

class DataFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `sourceName` prefixes every message. Throws DataFileError for malformed content.
std::vector<DataTensor> parseDataFile(std::istream& in, const std::string& sourceName);

}  // namespace qaic::lightnet
