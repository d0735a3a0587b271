// SPDX-License-Identifier: Apache-2.0
#include "OutputWriter.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace qaic::runner {
namespace {

std::string systemError(int error) { return std::strerror(error); }

// All or nothing, with the standard library alone (qaic-runner is an application of the public
// API and uses no libqaic internals): the bytes go to a ".partial" file beside the final name,
// which they replace by rename only once all were written and closed. A full disk or a killed run
// never leaves a truncated file under a name that looks complete.
void writeWholeFile(const std::string& finalPath, std::span<const uint8_t> bytes) {
  const std::string partialPath = finalPath + ".partial";
  std::ofstream out(partialPath, std::ios::binary | std::ios::trunc);
  int error = out ? 0 : errno;
  if (!error) {
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) error = errno != 0 ? errno : EIO;
  }
  if (!error && std::rename(partialPath.c_str(), finalPath.c_str()) != 0) error = errno;
  if (error) {
    std::remove(partialPath.c_str());
    throw OutputWriteError("cannot write '" + finalPath + "': " + systemError(error));
  }
}

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
  writeWholeFile(finalPath, bytes);
  return finalPath;
}

}  // namespace qaic::runner
