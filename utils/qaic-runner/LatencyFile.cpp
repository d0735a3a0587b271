// SPDX-License-Identifier: Apache-2.0
#include "LatencyFile.hpp"

#include <filesystem>
#include <sstream>
#include <system_error>

#include "OutputWriter.hpp"

namespace qaic::runner {

const char* const kLatencyColumns =
    "Sample,hostRoundTrip,enqTime,preProcTime,submitTime,execTotal,exectoVc,execToComplete,postProc,"
    "totalRoundtripTime";

std::string writeLatencyFile(const std::string& directory, const LatencyFileHeader& header,
                             const std::vector<LatencySample>& samples) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) throw OutputWriteError("--aic-profiling-out-dir: cannot create '" + directory + "': " + ec.message());
  const std::string name = OutputWriter::isSafeName(header.programName) ? header.programName : "program";
  std::ostringstream out;
  const uint64_t last = samples.empty() ? header.startIter : samples.back().sample;
  out << "qaic-runner per-sample latency: " << header.program << ", program " << header.programName << "\n"
      << "Devices: " << header.devices << ", activations " << header.numActivations << ", set size " << header.setSize
      << ", threads per queue " << header.threadsPerQueue << ", batch size " << header.batchSize << "\n"
      << "Samples: " << samples.size() << " (inferences " << header.startIter << ".." << last << " of "
      << header.inferences << ")\n"
      << "Times in microseconds (us)\n"
      << kLatencyColumns << "\n";
  for (const LatencySample& s : samples)
    out << s.sample << ',' << s.hostRoundTrip << ',' << s.enqTime << ',' << s.preProcTime << ',' << s.submitTime << ','
        << s.execTotal << ',' << s.exectoVc << ',' << s.execToComplete << ',' << s.postProc << ','
        << s.totalRoundtripTime << "\n";
  const std::string text = out.str();
  return OutputWriter(directory).writeFile("aic-profiling-latency-" + name + ".txt",
                                           std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace qaic::runner
