// SPDX-License-Identifier: Apache-2.0
// load-specializations: every specialization of -network-specialization-config taken through the
// model passes on its own, in the config's order (one network, for -onnx-define-symbol alone,
// without a config). A failure names the entry; the next entry is not loaded.
#include "CompileError.hpp"
#include "ir/Graph.hpp"
#include "passes/Passes.hpp"

#ifdef QAIC_HAVE_ONNX
#include "onnx/OnnxImporter.hpp"
#endif

namespace qaic::compiler {

void loadSpecializationsPass(Compilation& compilation, std::span<const ModelPass> passes) {
  const ExecOptions& options = compilation.options;
  if (compilation.specializations.empty()) {
    Variant variant{0, options.onnxSymbols, {}};
    for (const ModelPass& pass : passes) pass.run(compilation, variant);
    compilation.variants.push_back(std::move(variant.model));
    return;
  }
  for (std::size_t i = 0; i < compilation.specializations.size(); ++i) {
    const Specialization& specialization = compilation.specializations[i];
    Variant variant{i, options.onnxSymbols, {}};
    for (const auto& [symbol, value] : specialization) variant.onnxSymbols[symbol] = value;
    const std::string label = options.model + ": specialization " + std::to_string(i) + " (" +
                              describeSpecialization(specialization) + "): ";
    try {
      for (const ModelPass& pass : passes) pass.run(compilation, variant);
    } catch (const ir::IrError& e) {
      throw CompileError(label + e.what());
#ifdef QAIC_HAVE_ONNX
    } catch (const onnx::ImportError& e) {
      throw CompileError(label + e.what());
#endif
    } catch (const CompileError& e) {
      throw CompileError(label + e.what());
    }
    compilation.variants.push_back(std::move(variant.model));
  }
}

}  // namespace qaic::compiler
