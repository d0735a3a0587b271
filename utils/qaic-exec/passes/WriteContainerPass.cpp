// SPDX-License-Identifier: Apache-2.0
// write-container: programqpc.bin in -aic-binary-dir, written atomically (a failed compile
// leaves any previous container intact), and the summary qaic-exec prints.
#include <filesystem>
#include <system_error>

#include "CompileError.hpp"
#include "container/QpcWriter.hpp"
#include "passes/Passes.hpp"

namespace qaic::compiler {

void createOutputDirectory(const std::string& binaryDir) {
  std::error_code ec;
  std::filesystem::create_directories(binaryDir, ec);
  if (ec) throw CompileError(binaryDir + ": cannot create the output directory: " + ec.message());
}

void writeContainerPass(Compilation& compilation) {
  const ExecOptions& options = compilation.options;
  const container::QpcContents& contents = compilation.contents;
  createOutputDirectory(options.binaryDir);
  CompileSummary& summary = compilation.summary;
  summary.outputPath = (std::filesystem::path(options.binaryDir) / "programqpc.bin").string();
  container::writeQpcFile(summary.outputPath, contents);

  for (const auto& buffer : contents.buffers) {
    (buffer.io.direction == ir::Direction::In ? summary.inputs : summary.outputs) += 1;
  }
  summary.retained = contents.retainedState.size();
  summary.specializations = compilation.specializations.size();
  summary.ioRegionSize = contents.programs.front().ioRegionSize;
  std::error_code ec;
  summary.fileBytes = std::filesystem::file_size(summary.outputPath, ec);
}

}  // namespace qaic::compiler
