#include "OutputWriter.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

std::string OutputWriter::write(const std::string& bufferName, uint64_t iteration, std::span<const uint8_t> bytes) const {
  if (!isSafeName(bufferName))
    throw OutputWriteError("buffer name '" + bufferName + "' cannot be used as a file name");
  const std::string finalPath = directory_ + "/" + bufferName + "-inf-" + std::to_string(iteration) + ".bin";
  std::string tempPath = directory_ + "/.qaic-runner-XXXXXX";
  int fd = ::mkstemp(tempPath.data());
  if (fd < 0) throw OutputWriteError("cannot create a file in '" + directory_ + "': " + systemError(errno));

  auto failWith = [&](const std::string& what, int error) {
    ::close(fd);
    ::unlink(tempPath.c_str());
    throw OutputWriteError(what + " '" + finalPath + "': " + systemError(error));
  };
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) failWith("cannot write", n < 0 ? errno : ENOSPC);
    done += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0) failWith("cannot set the mode of", errno);
  if (::fsync(fd) != 0) failWith("cannot flush", errno);
  if (::close(fd) != 0) {
    int error = errno;
    ::unlink(tempPath.c_str());
    throw OutputWriteError("cannot close '" + finalPath + "': " + systemError(error));
  }
  if (::rename(tempPath.c_str(), finalPath.c_str()) != 0) {
    int error = errno;
    ::unlink(tempPath.c_str());
    throw OutputWriteError("cannot rename into '" + finalPath + "': " + systemError(error));
  }
  return finalPath;
}

}  // namespace qaic::runner
