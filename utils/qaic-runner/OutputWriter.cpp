#include "OutputWriter.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "base/AtomicFile.hpp"

namespace qaic::runner {
namespace {

std::string systemError(int error) { return std::strerror(error); }

}  // namespace

OutputWriter::OutputWriter(std::string directory) : directory_(std::move(directory)) {
  if (::mkdir(directory_.c_str(), 0755) != 0 && errno != EEXIST)
    throw OutputWriteError("cannot create output directory '" + directory_ + "': " + systemError(errno));
  struct stat st {};
  if (::stat(directory_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw OutputWriteError("output directory '" + directory_ + "' is not a directory");
}

bool OutputWriter::isSafeName(const std::string& name) {
  return !name.empty() && name.front() != '.' && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos && name.size() < 200;
}

std::string OutputWriter::write(const std::string& bufferName, uint64_t iteration,
                                std::span<const uint8_t> bytes) const {
  if (!isSafeName(bufferName)) throw OutputWriteError("buffer name '" + bufferName + "' cannot be used as a file name");
  return writeFile(bufferName + "-inf-" + std::to_string(iteration) + ".bin", bytes);
}

std::string OutputWriter::writeFile(const std::string& fileName, std::span<const uint8_t> bytes) const {
  const std::string finalPath = directory_ + "/" + fileName;
  try {
    writeFileAtomically(finalPath, bytes);
  } catch (const AtomicWriteError& e) {
    throw OutputWriteError("cannot write '" + finalPath + "': " + std::strerror(e.error()));
  }
  return finalPath;
}

}  // namespace qaic::runner
