// qaic-exec: compiles a network into programqpc.bin. See --help.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "CompileError.hpp"
#include "Compiler.hpp"
#include "ExecOptions.hpp"
#include "container/QpcFormatError.hpp"
#include "ir/Graph.hpp"

#ifdef QAIC_HAVE_ONNX
#include "onnx/OnnxImporter.hpp"
#endif

namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 1;

// Messages are one line, so scripts can grep them.
int reportError(const std::string& message, int code) {
  std::string line = message;
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::cerr << "qaic-exec: error: " << line << '\n';
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace qaic;
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    const compiler::ExecOptions options = compiler::parseExecOptions(args);
    if (options.help) {
      std::cout << compiler::execHelpText();
      return 0;
    }
    const compiler::CompileSummary s = compiler::compile(options);
    std::cout << "qaic-exec: wrote " << s.outputPath << ": " << (s.inputs + s.outputs) << " buffers ("
              << s.inputs << " in, " << s.outputs << " out), " << s.constants << " constants ("
              << s.constantBytes << " bytes), io region " << s.ioRegionSize << " bytes, " << s.fileBytes
              << " bytes\n";
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
