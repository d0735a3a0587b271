// SPDX-License-Identifier: Apache-2.0
#include "kubelet/KubeletRegistrar.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "ListenSocket.hpp"
#include "Log.hpp"
#include "base/UniqueFd.hpp"
#include "kubelet/DevicePluginService.hpp"
#include "kubelet/GrpcLifetime.hpp"
#include "kubelet/Profiles.hpp"

namespace qaic::qaicd {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr std::string_view kKubeletSocket = "kubelet.sock";
constexpr std::string_view kApiVersion = "v1beta1";
constexpr auto kRegisterTimeout = 5s;
constexpr auto kShutdownGrace = 1s;
constexpr auto kRecheck = 1s;
constexpr auto kFirstRetry = 250ms;
constexpr auto kLastRetry = 8s;
constexpr int kMaxServerThreads = 16;
constexpr std::size_t kMaxKubeletMessage = 512;  // bytes of a Register refusal's message logged

// The inode of the socket at `path`, 0 when there is none.
ino_t socketInode(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return 0;
  return st.st_ino;
}

std::string seconds(std::chrono::milliseconds ms) {
  const auto tenths = ms.count() / 100;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
}

}  // namespace

// One resource: its service, its server and what the kubelet knows of it.
struct Endpoint {
  std::string resource, socketPath;
  std::unique_ptr<DevicePluginService> service;
  std::unique_ptr<grpc::Server> server;
  ino_t socketInode = 0;     // of the socket our server bound
  ino_t registeredWith = 0;  // kubelet.sock's inode at the last successful Register; 0: not registered
  ino_t attemptedWith = 0;   // kubelet.sock's inode at the last failed attempt
  Clock::time_point retryAt{}, restartAt{};
  std::chrono::milliseconds backoff = kFirstRetry;
  std::string lastFailure;  // logged once until it changes
};

struct KubeletRegistrar::Impl {
  RegistrarOptions options;
  std::string kubeletPath;
  std::shared_ptr<const InventoryChannel> inventory;
  std::vector<Endpoint> endpoints;
  UniqueFd inotify, wake;
  int watch = -1;
  std::atomic<bool> stopping{false};
  std::mutex callMutex;
  grpc::ClientContext* call = nullptr;  // the Register in flight, cancelled by stop()
  std::thread thread;

  void run();
  void serve(Endpoint& e);
  void shutDown(Endpoint& e);
  void registerWith(Endpoint& e, ino_t kubelet);
  void waitUntil(Clock::time_point when);
  void fail(Endpoint& e, const std::string& message, Clock::time_point& at);
};

std::string KubeletRegistrar::socketName(std::string_view resource) {
  if (resource.starts_with(kResourceDomain)) resource.remove_prefix(kResourceDomain.size());
  return "qaicd-" + std::string(resource) + ".sock";
}

KubeletRegistrar::KubeletRegistrar(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

KubeletRegistrar::~KubeletRegistrar() { stop(); }

Result<std::unique_ptr<KubeletRegistrar>> KubeletRegistrar::start(RegistrarOptions options,
                                                                  std::shared_ptr<const InventoryChannel> inventory) {
  struct stat st {};
  if (::stat(options.directory.c_str(), &st) != 0) return SysError{errno, "kubelet directory " + options.directory};
  if (!S_ISDIR(st.st_mode)) return SysError{ENOTDIR, "kubelet directory " + options.directory};
  auto impl = std::make_unique<Impl>();
  impl->kubeletPath = options.directory + "/" + std::string(kKubeletSocket);
  for (const std::string& resource : options.resources) {
    Endpoint e;
    e.resource = resource;
    e.socketPath = options.directory + "/" + socketName(resource);
    if (e.socketPath.size() >= sizeof(sockaddr_un::sun_path))
      return SysError{ENAMETOOLONG, "plugin socket " + e.socketPath + " (at most 107 bytes)"};
    impl->endpoints.push_back(std::move(e));
  }
  if (impl->kubeletPath.size() >= sizeof(sockaddr_un::sun_path))
    return SysError{ENAMETOOLONG, "kubelet socket " + impl->kubeletPath + " (at most 107 bytes)"};
  keepGrpcInitialized();
  impl->inotify.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!impl->inotify) return lastError("inotify_init1");
  impl->wake.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!impl->wake) return lastError("eventfd");
  impl->options = std::move(options);
  impl->inventory = std::move(inventory);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<KubeletRegistrar>(new KubeletRegistrar(std::move(impl)));
}

void KubeletRegistrar::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  impl_->stopping = true;
  {
    std::lock_guard lock(impl_->callMutex);
    if (impl_->call != nullptr) impl_->call->TryCancel();
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(impl_->wake.get(), &one, sizeof one);
  impl_->thread.join();
}

void KubeletRegistrar::Impl::run() {
  while (!stopping) {
    const auto now = Clock::now();
    auto next = now + kRecheck;
    if (watch < 0) {
      // Again after the directory itself was replaced; the periodic check covers the gap.
      watch = ::inotify_add_watch(inotify.get(), options.directory.c_str(),
                                  IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF);
    }
    const ino_t kubelet = socketInode(kubeletPath);
    for (Endpoint& e : endpoints) {
      if (stopping) break;
      if (!e.server || socketInode(e.socketPath) != e.socketInode) {
        if (e.server) logWarn(e.socketPath + " was removed (the kubelet restarted?): serving " + e.resource + " again");
        if (now >= e.restartAt) serve(e);
        if (!e.server) {
          next = std::min(next, e.restartAt);
          continue;
        }
      }
      if (kubelet == 0) {
        if (e.registeredWith != 0)
          logWarn(kubeletPath + " is gone: " + e.resource + " registers again when the kubelet is back");
        e.registeredWith = 0;
        continue;
      }
      if (e.registeredWith == kubelet) continue;
      if (kubelet != e.attemptedWith || Clock::now() >= e.retryAt) registerWith(e, kubelet);
      if (e.registeredWith != kubelet) next = std::min(next, e.retryAt);
    }
    waitUntil(next);
  }
  for (Endpoint& e : endpoints) shutDown(e);
}

void KubeletRegistrar::Impl::waitUntil(Clock::time_point when) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(when - Clock::now());
  pollfd fds[2] = {{inotify.get(), POLLIN, 0}, {wake.get(), POLLIN, 0}};
  if (::poll(fds, 2, static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1000))) <= 0) return;
  alignas(inotify_event) char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(inotify.get(), buffer, sizeof buffer);
    if (n <= 0) break;
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      if (event->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
        if (watch >= 0) ::inotify_rm_watch(inotify.get(), watch);
        watch = -1;
      }
      // A kubelet.sock created anew is a kubelet that started again, even if it got the inode
      // number of the old one: every resource registers again.
      if ((event->mask & (IN_CREATE | IN_MOVED_TO)) && event->len > 0 &&
          std::string_view(event->name) == kKubeletSocket)
        for (Endpoint& e : endpoints) e.registeredWith = e.attemptedWith = 0;
    }
  }
  uint64_t count = 0;
  [[maybe_unused]] ssize_t n = ::read(wake.get(), &count, sizeof count);
}

void KubeletRegistrar::Impl::fail(Endpoint& e, const std::string& message, Clock::time_point& at) {
  at = Clock::now() + e.backoff;
  if (message != e.lastFailure) logWarn(message + " (trying again in " + seconds(e.backoff) + ")");
  e.lastFailure = message;
  e.backoff = std::min<std::chrono::milliseconds>(e.backoff * 2, kLastRetry);
}

void KubeletRegistrar::Impl::serve(Endpoint& e) {
  shutDown(e);
  struct stat dir {};
  if (::stat(options.directory.c_str(), &dir) != 0 || !S_ISDIR(dir.st_mode))
    return fail(
        e, "kubelet directory " + options.directory + " is gone: " + e.resource + " is served again when it is back",
        e.restartAt);
  if (::access(e.socketPath.c_str(), F_OK) == 0) {
    // Left by a qaicd that died, or another plugin's: only a socket nobody answers is replaced.
    if (socketInode(e.socketPath) == 0) return fail(e, e.socketPath + " exists and is not a socket", e.restartAt);
    if (socketAnswers(e.socketPath)) return fail(e, e.socketPath + ": another plugin serves it", e.restartAt);
    ::unlink(e.socketPath.c_str());
  }
  auto service = std::make_unique<DevicePluginService>(e.resource, inventory);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + e.socketPath, grpc::InsecureServerCredentials());
  builder.RegisterService(service.get());
  builder.SetMaxReceiveMessageSize(KubeletRegistrar::kMaxRequestBytes);
  grpc::ResourceQuota quota("qaicd " + e.resource);
  quota.SetMaxThreads(kMaxServerThreads);
  builder.SetResourceQuota(quota);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 2);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) return fail(e, "serving " + e.resource + " on " + e.socketPath + ": gRPC could not listen", e.restartAt);
  e.service = std::move(service);
  e.server = std::move(server);
  e.socketInode = socketInode(e.socketPath);
  e.registeredWith = e.attemptedWith = 0;
  e.backoff = kFirstRetry;
  e.lastFailure.clear();
  logInfo("serving " + e.resource + " on " + e.socketPath);
}

void KubeletRegistrar::Impl::shutDown(Endpoint& e) {
  if (e.server) {
    e.service->beginShutdown();
    e.server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    e.server->Wait();
    e.server.reset();
  }
  e.service.reset();
  // Only the socket this process bound: after a kubelet restart the path may be someone else's.
  if (e.socketInode != 0 && socketInode(e.socketPath) == e.socketInode) ::unlink(e.socketPath.c_str());
  e.socketInode = 0;
  e.registeredWith = 0;
}

void KubeletRegistrar::Impl::registerWith(Endpoint& e, ino_t kubelet) {
  e.attemptedWith = kubelet;
  auto channel = grpc::CreateChannel("unix:" + kubeletPath, grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kRegisterTimeout);
  {
    std::lock_guard lock(callMutex);
    if (stopping) return;
    call = &context;
  }
  v1beta1::RegisterRequest request;
  request.set_version(std::string(kApiVersion));
  request.set_endpoint(socketName(e.resource));
  request.set_resource_name(e.resource);
  request.mutable_options()->set_pre_start_required(false);
  request.mutable_options()->set_get_preferred_allocation_available(true);
  v1beta1::Empty reply;
  const grpc::Status status = stub->Register(&context, request, &reply);
  {
    std::lock_guard lock(callMutex);
    call = nullptr;
  }
  if (stopping) return;
  if (!status.ok()) {
    // The kubelet's message, quoted: it reaches qaicd's log, one line per event.
    return fail(e,
                "registering " + e.resource + " with " + kubeletPath + ": " +
                    quoteText(status.error_message(), kMaxKubeletMessage) + " (gRPC status " +
                    std::to_string(status.error_code()) + ")",
                e.retryAt);
  }
  e.registeredWith = kubelet;
  e.backoff = kFirstRetry;
  e.lastFailure.clear();
  logInfo("registered " + e.resource + " (endpoint " + socketName(e.resource) + ") with " + kubeletPath);
}

}  // namespace qaic::qaicd
