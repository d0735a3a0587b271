// SPDX-License-Identifier: Apache-2.0
// pack-constants: the program's own constants, from the default specialization's graph
// (ConstantPacker.hpp); float16 with -convert-to-fp16, MatMul/Gemm weights MXFP6 with
// -mxfp6-matmul.
#include "ConstantPacker.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void packConstantsPass(Compilation& compilation) {
  const LoadedModel& program = compilation.variants[compilation.mainVariant];
  const bool toFloat16 = compilation.options.convertToFp16;
  compilation.constants = packConstants(program.graph, program.weights, toFloat16, compilation.options.mxfp6Matmul);
}

}  // namespace qaic::compiler
