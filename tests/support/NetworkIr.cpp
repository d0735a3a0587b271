// SPDX-License-Identifier: Apache-2.0
#include "NetworkIr.hpp"

namespace qaic::testing {
namespace {

std::string ioEntry(const std::string& name, const std::string& direction, int elements, bool partial) {
  return R"({"name":")" + name + R"(","tensor":")" + name + R"(","direction":")" + direction +
         R"(","dtype":"TL_FLOAT","dims":[1,)" + std::to_string(elements) + "]" +
         (partial ? R"(,"is_partial_allowed":true)" : "") + "}";
}

}  // namespace

std::string addNetworkIr(int elements, bool partial) {
  return R"({"ops":[{"name":"add","optype":"elew","tensors_in":[{"arg_name":"src1","name":"a"},)"
         R"({"arg_name":"src2","name":"b"}],"tensors_out":[{"arg_name":"dst","name":"c"}],)"
         R"("params":[{"arg_name":"elew_op","value":"TL_SUM"}]}],"io":[)" +
         ioEntry("a", "in", elements, partial) + "," + ioEntry("b", "in", elements, partial) + "," +
         ioEntry("c", "out", elements, partial) + "]}";
}

std::string reluNetworkIr(int elements, bool partial, const std::string& extra) {
  return R"({"ops":[{"name":"relu","optype":"relu","tensors_in":[{"arg_name":"src","name":"x"}],)"
         R"("tensors_out":[{"arg_name":"dst","name":"y"}],"params":[]}],"io":[)" +
         ioEntry("x", "in", elements, partial) + "," + ioEntry("y", "out", elements, partial) + "]" + extra + "}";
}

}  // namespace qaic::testing
