#include "LatencyFile.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
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
  const std::string path = (std::filesystem::path(directory) / ("aic-profiling-latency-" + name + ".txt")).string();
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    const uint64_t last = samples.empty() ? header.startIter : samples.back().sample;
    out << "qaic-runner per-sample latency: " << header.program << ", program " << header.programName << "\n"
        << "Devices: " << header.devices << ", activations " << header.numActivations << ", set size "
        << header.setSize << ", threads per queue " << header.threadsPerQueue << ", batch size "
        << header.batchSize << "\n"
        << "Samples: " << samples.size() << " (inferences " << header.startIter << ".." << last << " of "
        << header.inferences << ")\n"
        << "Times in microseconds (us)\n"
        << kLatencyColumns << "\n";
    for (const LatencySample& s : samples)
      out << s.sample << ',' << s.hostRoundTrip << ',' << s.enqTime << ',' << s.preProcTime << ',' << s.submitTime
          << ',' << s.execTotal << ',' << s.exectoVc << ',' << s.execToComplete << ',' << s.postProc << ','
          << s.totalRoundtripTime << "\n";
    out.flush();
    if (!out) {
      std::filesystem::remove(temporary, ec);
      throw OutputWriteError("--aic-profiling-out-dir: cannot write '" + path + "'");
    }
  }
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    throw OutputWriteError("--aic-profiling-out-dir: cannot write '" + path + "'");
  }
  return path;
}

}  // namespace qaic::runner
