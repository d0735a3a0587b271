// SPDX-License-Identifier: Apache-2.0
#include "ExportSupervisor.hpp"

#include <dirent.h>
#include <drm.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <system_error>
#include <vector>

#include "Log.hpp"
#include "UserMemory.hpp"

namespace qaic::emu {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#else
#error "ExportSupervisor: name this architecture's AUDIT_ARCH"
#endif

// The kernel reads ioctl's request as an unsigned int, so the low half of the 64-bit argument
// decides which ioctl a call is, whatever the caller left in the high half.
constexpr uint32_t kRequestLowHalf = offsetof(seccomp_data, args[1])
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
                                     + sizeof(uint32_t)
#endif
    ;

sock_filter load(uint32_t offset) { return BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset); }
sock_filter jumpUnless(uint32_t value, uint8_t skipWhenDifferent) {
  return BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, skipWhenDifferent);
}
sock_filter giveBack(uint32_t action) { return BPF_STMT(BPF_RET | BPF_K, action); }

long seccompCall(unsigned operation, unsigned flags, void* argument) {
  return ::syscall(SYS_seccomp, operation, flags, argument);
}

void writeError(const char* what) {
  const char* description = ::strerrordesc_np(errno);
  for (const char* text : {"qaic-emu: --namespace: ", what, ": ", description != nullptr ? description : "?", "\n"})
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, text, std::strlen(text));
}

// What the supervisor does with one notification.
struct Verdict {
  enum Kind { Answer, PassOn, CallerGone } kind = Answer;
  int error = 0;  // an errno for Answer; 0 is success
};

bool stillPending(int listener, uint64_t id) { return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0; }

// The one message on the listener's socket: a byte with room for one descriptor beside it. Built
// on the stack (the child may not allocate); pinned, since the header points into it.
struct DescriptorMessage {
  DescriptorMessage() {
    message.msg_iov = &payload;
    message.msg_iovlen = 1;
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof control.bytes;
  }
  DescriptorMessage(const DescriptorMessage&) = delete;
  DescriptorMessage& operator=(const DescriptorMessage&) = delete;

  char tag = 'L';
  iovec payload{&tag, 1};
  msghdr message{};
  union {  // last: cmsghdr ends in a flexible array
    char bytes[CMSG_SPACE(sizeof(int))];
    cmsghdr alignment;
  } control{};
};

}  // namespace

std::atomic<int>& exportHandOver() {
  static std::atomic<int> handOver{-1};
  return handOver;
}

// ---- The child's side ---------------------------------------------------------------------------

ExportInterception::ExportInterception() {
  // ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, ...) of the native ABI goes to the supervisor;
  // everything else (other calls, other ABIs) runs as it would without the filter. A jump
  // skips that many instructions: each "unless" lands on the last one.
  program_ = {load(offsetof(seccomp_data, arch)),
              jumpUnless(kNativeArch, 5),
              load(offsetof(seccomp_data, nr)),
              jumpUnless(SYS_ioctl, 3),
              load(kRequestLowHalf),
              jumpUnless(static_cast<uint32_t>(DRM_IOCTL_PRIME_HANDLE_TO_FD), 1),
              giveBack(SECCOMP_RET_USER_NOTIF),
              giveBack(SECCOMP_RET_ALLOW)};
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0)
    throw std::system_error(errno, std::generic_category(), "qaic-emu: --namespace: socketpair");
  emulatorEnd_.reset(ends[0]);
  childEnd_.reset(ends[1]);
}

bool ExportInterception::installInChild() {
  sock_fprog filter{static_cast<unsigned short>(program_.size()), program_.data()};
  ::close(emulatorEnd_.release());
  const int socket = childEnd_.release();
  long listener = seccompCall(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &filter);
  // Without CAP_SYS_ADMIN in its namespace a process may install a filter only once it can gain
  // no privileges (setuid programs then run without theirs): asked only when needed.
  if (listener < 0 && errno == EACCES && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
    listener = seccompCall(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &filter);
  if (listener < 0) {
    writeError("seccomp filter for PRIME export (plain exports will get EBADF)");
    ::close(socket);
    return false;
  }
  DescriptorMessage sending;
  msghdr& message = sending.message;
  cmsghdr* rights = CMSG_FIRSTHDR(&message);
  rights->cmsg_level = SOL_SOCKET;
  rights->cmsg_type = SCM_RIGHTS;
  rights->cmsg_len = CMSG_LEN(sizeof(int));
  const int listenerFd = static_cast<int>(listener);
  std::memcpy(CMSG_DATA(rights), &listenerFd, sizeof listenerFd);
  const bool sent = ::sendmsg(socket, &message, MSG_NOSIGNAL) == 1;
  if (!sent) writeError("sending the PRIME export listener");
  ::close(listenerFd);
  ::close(socket);
  return sent;
}

UniqueFd ExportInterception::receiveListener() {
  childEnd_.reset();  // the child's copy alone remains: its exit or exec ends the wait below
  DescriptorMessage receiving;
  msghdr& message = receiving.message;
  ssize_t got;
  do got = ::recvmsg(emulatorEnd_.get(), &message, MSG_CMSG_CLOEXEC);
  while (got < 0 && errno == EINTR);
  emulatorEnd_.reset();
  const cmsghdr* rights = got == 1 ? CMSG_FIRSTHDR(&message) : nullptr;
  if (rights == nullptr || rights->cmsg_level != SOL_SOCKET || rights->cmsg_type != SCM_RIGHTS ||
      rights->cmsg_len != CMSG_LEN(sizeof(int)))
    return UniqueFd();
  int listener = -1;
  std::memcpy(&listener, CMSG_DATA(rights), sizeof listener);
  return UniqueFd(listener);
}

// ---- The supervisor -----------------------------------------------------------------------------

namespace {

// One notification: the export made on the caller's own open file (the duplicate taken with
// pidfd_getfd shares it, so the device sees the caller's handles), the descriptor installed in
// the caller, its number written into the caller's drm_prime_handle, as the kernel does.
Verdict exportForCaller(int listener, const seccomp_notif& call, const auto& isDeviceNode) {
  const pid_t thread = static_cast<pid_t>(call.pid);
  const pid_t process = threadGroupOf(thread);
  if (process <= 0) return {Verdict::CallerGone};
  const int taken = takeRemoteFd(process, static_cast<int>(call.data.args[0]));
  UniqueFd node(taken >= 0 ? taken : -1);
  // Only now is it sure that `process` was the caller (the kernel's advice for any look into a
  // caller by its pid): a pid reused since would have failed this.
  if (!stillPending(listener, call.id)) return {Verdict::CallerGone};
  // Not an open descriptor, or not one of ours: the kernel answers as it would without us.
  if (!node || !isDeviceNode(node.get())) return {Verdict::PassOn};
  const uint64_t argument = call.data.args[2];
  drm_prime_handle asked{};
  if (UserMemory(thread).read(argument, &asked, sizeof asked) != 0) return {Verdict::Answer, EFAULT};
  if (!stillPending(listener, call.id)) return {Verdict::CallerGone};
  // The device checks flags and handle as mainline does; fd -1 asks it to make the descriptor.
  drm_prime_handle mine{asked.handle, asked.flags, -1};
  if (::ioctl(node.get(), DRM_IOCTL_PRIME_HANDLE_TO_FD, &mine) != 0) return {Verdict::Answer, errno};
  (void)exportHandOver().load(std::memory_order_acquire);
  const UniqueFd exported(mine.fd);
  seccomp_notif_addfd install{};
  install.id = call.id;
  install.srcfd = static_cast<uint32_t>(exported.get());
  install.newfd_flags = (asked.flags & DRM_CLOEXEC) ? O_CLOEXEC : 0;
  const int installed = ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &install);
  if (installed < 0) return errno == ENOENT ? Verdict{Verdict::CallerGone} : Verdict{Verdict::Answer, errno};
  const drm_prime_handle answer{asked.handle, asked.flags, installed};
  if (UserMemory(thread).write(argument, &answer, sizeof answer) != 0) return {Verdict::Answer, EFAULT};
  return {Verdict::Answer, 0};
}

}  // namespace

ExportSupervisor::ExportSupervisor(const std::string& root, UniqueFd listener)
    : accelDirectory_(root + "/dev/accel"), listener_(std::move(listener)) {
  struct stat mount {};
  if (::stat(root.c_str(), &mount) != 0)
    throw std::system_error(errno, std::generic_category(), "qaic-emu: --namespace: stat " + root);
  mountDevice_ = mount.st_dev;
  // The kernel's structures may have grown past this build's headers: buffers of its sizes.
  if (seccompCall(SECCOMP_GET_NOTIF_SIZES, 0, &sizes_) != 0)
    throw std::system_error(errno, std::generic_category(), "qaic-emu: --namespace: SECCOMP_GET_NOTIF_SIZES");
  stop_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop_) throw std::system_error(errno, std::generic_category(), "qaic-emu: --namespace: eventfd");
  thread_ = std::thread([this] { serve(); });
}

ExportSupervisor::~ExportSupervisor() {
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(stop_.get(), &one, sizeof one);
  thread_.join();
}

// A regular file of the emulator's mount that dev/accel lists: a node, whole card or partition.
bool ExportSupervisor::isDeviceNode(int fd) const {
  struct stat file {};
  if (::fstat(fd, &file) != 0 || file.st_dev != mountDevice_ || !S_ISREG(file.st_mode)) return false;
  DIR* accel = ::opendir(accelDirectory_.c_str());
  if (accel == nullptr) return false;
  bool found = false;
  while (const dirent* entry = ::readdir(accel)) {
    struct stat node {};
    if (entry->d_name[0] != '.' && ::fstatat(::dirfd(accel), entry->d_name, &node, 0) == 0 &&
        node.st_ino == file.st_ino && node.st_dev == file.st_dev) {
      found = true;
      break;
    }
  }
  ::closedir(accel);
  return found;
}

void ExportSupervisor::serve() {
  std::vector<std::byte> callBuffer(std::max<std::size_t>(sizes_.seccomp_notif, sizeof(seccomp_notif)));
  std::vector<std::byte> answerBuffer(std::max<std::size_t>(sizes_.seccomp_notif_resp, sizeof(seccomp_notif_resp)));
  auto* call = reinterpret_cast<seccomp_notif*>(callBuffer.data());
  auto* answer = reinterpret_cast<seccomp_notif_resp*>(answerBuffer.data());
  auto isDeviceNode = [this](int fd) { return this->isDeviceNode(fd); };
  pollfd watched[2] = {{stop_.get(), POLLIN, 0}, {listener_.get(), POLLIN, 0}};
  // The timeout only bounds a wait nothing would otherwise end; the eventfd ends it at once.
  constexpr int kTickMs = 1000;
  for (;;) {
    const int ready = ::poll(watched, 2, kTickMs);
    if (ready < 0 && errno != EINTR) {
      logError(std::string("--namespace: PRIME export supervisor: poll: ") + std::strerror(errno));
      // Closed, the listener makes every later export fail (ENOSYS) instead of wait forever.
      listener_.reset();
      return;
    }
    if (watched[0].revents & POLLIN) return;
    if (watched[1].revents & POLLIN) {
      // RECV wants a zeroed buffer; it fails when the caller went meanwhile (or on EINTR).
      std::fill(callBuffer.begin(), callBuffer.end(), std::byte{0});
      if (::ioctl(listener_.get(), SECCOMP_IOCTL_NOTIF_RECV, call) != 0) continue;
      const Verdict verdict = exportForCaller(listener_.get(), *call, isDeviceNode);
      if (verdict.kind == Verdict::CallerGone) continue;
      std::fill(answerBuffer.begin(), answerBuffer.end(), std::byte{0});
      answer->id = call->id;
      if (verdict.kind == Verdict::PassOn)
        answer->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
      else
        answer->error = -verdict.error;
      // ENOENT: the caller was killed meanwhile; nothing is waiting for the answer.
      (void)::ioctl(listener_.get(), SECCOMP_IOCTL_NOTIF_SEND, answer);
    } else if (watched[1].revents & (POLLHUP | POLLERR)) {
      watched[1].fd = -1;  // every filtered process ended: only the stop request is left to wait for
    }
  }
}

}  // namespace qaic::emu
