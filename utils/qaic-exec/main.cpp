// SPDX-License-Identifier: Apache-2.0
// qaic-exec (also installed as qaic-compile, its newer name): compiles a network into
// programqpc.bin. See --help.
#include <algorithm>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "QaicVersion.hpp"

#include "CompileError.hpp"
#include "Compiler.hpp"
#include "ExecOptions.hpp"
#include "PartitionConfig.hpp"
#include "base/AtomicFile.hpp"
#include "container/QpcFormatError.hpp"
#include "ir/Graph.hpp"

#ifdef QAIC_HAVE_ONNX
#include "onnx/OnnxImporter.hpp"
#include "onnx/OperatorTable.hpp"
#endif

namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 1;

std::string programName = "qaic-exec";  // or qaic-compile: the name it was started as

// Messages are one line, so scripts can grep them.
int reportError(const std::string& message, int code) {
  std::string line = message;
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::cerr << programName << ": error: " << line << '\n';
  return code;
}

#ifdef QAIC_HAVE_ONNX
// -operators-supported=FILE: the importer's own operator table, one name per line; FILE is
// complete or untouched.
void writeSupportedOperators(const std::string& path) {
  std::string text;
  for (const std::string& name : qaic::onnx::supportedOperators()) text += name + "\n";
  try {
    qaic::writeFileAtomically(path, text);
  } catch (const qaic::AtomicWriteError& e) {
    throw qaic::compiler::UsageError(std::string("-operators-supported: ") + e.what());
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  using namespace qaic;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (argc > 0 && std::filesystem::path(argv[0]).filename() == "qaic-compile") programName = "qaic-compile";
  try {
    const compiler::ExecOptions options = compiler::parseExecOptions(args);
    if (options.help) {
      std::cout << compiler::execHelpText(programName);
      return 0;
    }
    if (options.version) {
      qaic::printVersion(programName);
      return 0;
    }
    if (!options.operatorsSupportedFile.empty()) {
#ifdef QAIC_HAVE_ONNX
      writeSupportedOperators(options.operatorsSupportedFile);
      std::cout << programName << ": wrote " << onnx::supportedOperators().size() << " supported ONNX operators to "
                << options.operatorsSupportedFile << "\n";
#else
      return reportError("-operators-supported: this build has no ONNX importer", kExitBadInput);
#endif
      if (options.model.empty()) return 0;
    }
    const compiler::CompileSummary s = compiler::compile(options);
    std::cout << programName << ": wrote " << s.outputPath << ": " << (s.inputs + s.outputs) << " buffers (" << s.inputs
              << " in, " << s.outputs << " out), " << s.constants << " constants (" << s.constantBytes
              << " bytes), io region " << s.ioRegionSize << " bytes, " << s.fileBytes << " bytes";
    // A pipeline's pairs are on the stages that update them, not all in the outer container.
    if (s.retained > 0 && s.pipelineStages == 0) std::cout << ", " << s.retained << " retained-state pairs";
    if (s.specializations > 0) std::cout << ", " << s.specializations << " specializations";
    if (!s.deviceParts.empty() && s.pipelineStages > 0) {
      // Part 0 is the last stage: list the devices in stage order.
      std::cout << ", " << s.pipelineStages << " pipeline stages (weight bytes by device:";
      for (std::size_t stage = 0; stage < s.pipelineStages; ++stage) {
        const auto& part = s.deviceParts[compiler::partOfStage(stage, s.pipelineStages)];
        std::cout << ' ' << part.deviceId << '=' << part.weightBytes;
      }
      if (std::any_of(s.deviceParts.begin(), s.deviceParts.end(), [](const auto& p) { return p.retainedBytes > 0; })) {
        std::cout << "; retained-state bytes by device:";
        for (std::size_t stage = 0; stage < s.pipelineStages; ++stage) {
          const auto& part = s.deviceParts[compiler::partOfStage(stage, s.pipelineStages)];
          std::cout << ' ' << part.deviceId << '=' << part.retainedBytes;
        }
      }
      std::cout << ')';
    } else if (!s.deviceParts.empty()) {
      std::cout << ", split over " << s.deviceParts.size() << " devices by tensor slicing (" << s.splitWeights
                << " weights divided; weight bytes by device:";
      for (const auto& part : s.deviceParts) std::cout << ' ' << part.deviceId << '=' << part.weightBytes;
      if (s.splitWeights == 0) std::cout << "; nothing could be divided, every part is whole: -v says why";
      std::cout << ')';
    }
    std::cout << '\n';
    if (options.verbose && !s.sliceReport.empty()) std::cout << "tensor slicing:\n" << s.sliceReport;
    if (options.verbose && s.pipelineStages > 0)
      std::cout << "pipeline stages, the tensors sent between them:\n" << s.pipelineReport;
    return 0;
  } catch (const compiler::UsageError& e) {
    return reportError(e.what(), kExitBadInput);
  } catch (const compiler::CompileError& e) {
    return reportError(e.what(), kExitBadInput);
  } catch (const ir::IrError& e) {
    return reportError(e.what(), kExitBadInput);
#ifdef QAIC_HAVE_ONNX
  } catch (const onnx::ImportError& e) {
    return reportError(e.what(), kExitBadInput);
#endif
  } catch (const container::QpcFormatError& e) {
    return reportError(e.what(), kExitBadInput);
  } catch (const std::exception& e) {
    return reportError(std::string("internal error: ") + e.what(), kExitInternal);
  }
}
