// SPDX-License-Identifier: Apache-2.0
// specialization-config: the entries of -network-specialization-config. They bind ONNX
// symbolic dims, so a JSON IR (whose combinations are its "allowed_shapes") refuses the option.
#include "CompileError.hpp"
#include "SpecializationConfig.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

namespace {

bool isOnnx(std::string_view path) { return path.ends_with(".onnx"); }

}  // namespace

void specializationConfigPass(Compilation& compilation) {
  const ExecOptions& options = compilation.options;
  if (options.specializationConfig.empty()) return;
  if (!isOnnx(options.model))
    throw CompileError(options.model +
                       ": -network-specialization-config binds ONNX symbolic dims; a JSON IR "
                       "declares its combinations in \"allowed_shapes\"");
  compilation.specializations = loadSpecializationConfig(options.specializationConfig);
}

}  // namespace qaic::compiler
