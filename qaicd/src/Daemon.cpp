// SPDX-License-Identifier: Apache-2.0
#include "Daemon.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "Log.hpp"
#include "kubelet/KubeletPlugin.hpp"

namespace qaic::qaicd {

using nlohmann::json;

namespace {

int pidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

ProtocolError refusal(int errnum, std::string message, int64_t id) {
  return ProtocolError{errnum, std::move(message), id};
}

bool isRealRoot(const std::string& root) {
  std::error_code ec;
  return std::filesystem::equivalent(root, "/", ec);
}

}  // namespace

Daemon::Daemon(DaemonOptions options, EventLoop loop, ListenSocket listen)
    : options_(std::move(options)),
      loop_(std::move(loop)),
      listen_(std::move(listen)),
      registry_(driver::DeviceRoot(options_.root)),
      spareDescriptor_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}

Daemon::~Daemon() = default;

Result<std::unique_ptr<Daemon>> Daemon::start(DaemonOptions options) {
  std::error_code ec;
  options.root = std::filesystem::absolute(options.root, ec).lexically_normal().string();
  if (options.root.size() > 1 && options.root.back() == '/') options.root.pop_back();
  auto loop = EventLoop::create();
  if (!loop) return loop.sysError();
  auto listen = ListenSocket::activatedOrOpen(options.socket);
  if (!listen) return listen.sysError();
  std::unique_ptr<Daemon> daemon(new Daemon(std::move(options), std::move(*loop), std::move(*listen)));
  if (auto ok = daemon->setUp(); !ok) return ok.sysError();
  return daemon;
}

Result<void> Daemon::setUp() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  signals_.reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals_) return lastError("signalfd");
  if (auto t = loop_.add(signals_.get(), EPOLLIN,
                         [this](uint64_t, uint32_t) {
                           signalfd_siginfo info{};
                           if (::read(signals_.get(), &info, sizeof info) == sizeof info)
                             logInfo(std::string("received ") + (info.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT") +
                                     ": stopping; partitions stay on their devices");
                           loop_.stop();
                         });
      !t)
    return t.sysError();
  if (auto t = loop_.add(listen_.fd(), EPOLLIN, [this](uint64_t, uint32_t) { onAccept(); }); !t) return t.sysError();
  if (auto started = registry_.start(options_.deviceTimeout); !started) return started;
  if (auto t = loop_.add(registry_.resultsFd(), EPOLLIN, [this](uint64_t, uint32_t) { registry_.onResults(); }); !t)
    return t.sysError();
  if (auto t = loop_.add(registry_.deadlineFd(), EPOLLIN, [this](uint64_t, uint32_t) { registry_.onDeadline(); }); !t)
    return t.sysError();
  registry_.setChangeListener([this] { afterChange(); });
  loop_.setAfterEvents([this] { return serveBacklog(); });

  bool polling = true;
  if (isRealRoot(options_.root)) {
    auto monitor = UdevMonitor::create();
    if (monitor) {
      udev_ = std::move(*monitor);
      if (auto t = loop_.add(udev_->fd(), EPOLLIN,
                             [this](uint64_t, uint32_t) {
                               if (udev_->drain()) rescan();
                             });
          t) {
        polling = false;
        logInfo("following devices through udev");
      }
    } else {
      logWarn(monitor.message() + ": following devices by polling instead");
    }
  }
  if (polling) {
    timer_.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    if (!timer_) return lastError("timerfd_create");
    itimerspec period{};
    period.it_interval.tv_sec = options_.pollMs / 1000;
    period.it_interval.tv_nsec = static_cast<long>(options_.pollMs % 1000) * 1'000'000;
    period.it_value = period.it_interval;
    if (::timerfd_settime(timer_.get(), 0, &period, nullptr) != 0) return lastError("timerfd_settime");
    if (auto t = loop_.add(timer_.get(), EPOLLIN,
                           [this](uint64_t, uint32_t) {
                             uint64_t expirations = 0;
                             [[maybe_unused]] ssize_t n = ::read(timer_.get(), &expirations, sizeof expirations);
                             rescan();
                           });
        !t)
      return t.sysError();
  }
  if (!options_.kubeletDir.empty()) {
    auto plugin = KubeletPlugin::create(loop_, registry_,
                                        {options_.kubeletDir, options_.root, options_.config.k8sProfiles,
                                         options_.config.staticPartitions, options_.kubeletMountsOnly});
    if (!plugin) return plugin.sysError();
    kubelet_ = std::move(*plugin);
  } else if (!options_.config.k8sProfiles.empty()) {
    logWarn(
        "k8s_profiles are configured but the kubelet plugin is off (no --kubelet-dir): no profile partitions are made");
  }
  // Ready means scanned: the devices are open and the partitions found are taken over (or
  // removed) before the socket is answered, unless a device does not answer within the bound.
  rescan();
  registry_.settle(std::chrono::steady_clock::now() + options_.deviceTimeout);
  if (kubelet_)
    if (auto served = kubelet_->serve(); !served) return served;
  logInfo("serving " + listen_.path() + " for devices under " + options_.root);
  return {};
}

void Daemon::run() {
  loop_.run();
  if (kubelet_) kubelet_->stop();
  logInfo("stopped with " + std::to_string(registry_.partitions().size()) + " partitions left for the next start");
}

void Daemon::rescan() {
  registry_.rescan();
  afterChange();
}

void Daemon::afterChange() {
  ensureStaticPartitions();
  syncHolderWatches();
  if (kubelet_) kubelet_->afterRescan();
}

void Daemon::ensureStaticPartitions() {
  if (registry_.takingOver()) return;  // its result calls again
  // A static partition whose entry left the configuration goes with it, so that the
  // configuration stays the one description of what is set aside. Only qaicd's own: no holder,
  // and the label it gives them.
  std::vector<uint32_t> dropped;
  for (const auto& [id, p] : registry_.partitions()) {
    if (!p.isStatic() || !p.label.starts_with(StaticPartition::kLabelPrefix)) continue;
    bool configured = false;
    for (const auto& s : options_.config.staticPartitions)
      configured = configured || (s.label() == p.label && s.device == p.device);
    if (!configured) dropped.push_back(id);
  }
  for (uint32_t id : dropped) registry_.remove(id, "static partition no longer in the configuration");
  for (const auto& s : options_.config.staticPartitions) {
    const std::string label = s.label();
    bool present = false;
    for (const auto& [id, p] : registry_.partitions())
      if (p.isStatic() && p.label == label && p.device == s.device) present = true;
    if (present || !registry_.hasDevice(s.device) || !staticCreating_.insert(s.name).second) continue;
    PartitionSpec spec{s.resources, s.uid, s.gid, s.mode, 0, label};
    registry_.create(s.device, spec, [this, name = s.name](DeviceRegistry::CreateResult created) {
      staticCreating_.erase(name);
      if (auto* e = std::get_if<ProtocolError>(&created)) {
        // Retried on every scan (room may free up); logged once per distinct reason.
        if (staticFailures_[name] != e->message) logWarn("static partition " + name + ": " + e->message);
        staticFailures_[name] = e->message;
      } else {
        staticFailures_.erase(name);
        logInfo("static partition " + name + " is partition " + std::to_string(std::get<Partition*>(created)->id));
        if (kubelet_) kubelet_->afterRescan();
      }
    });
  }
}

void Daemon::syncHolderWatches() {
  std::set<pid_t> needed;
  for (const auto& [id, p] : registry_.partitions())
    if (!p.isStatic()) needed.insert(p.holderPid);
  for (auto it = holders_.begin(); it != holders_.end();) {
    if (needed.count(it->first) == 0) {
      loop_.remove(it->second.token);
      it = holders_.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<pid_t> gone;
  for (pid_t pid : needed) {
    if (holders_.count(pid) != 0) continue;
    UniqueFd pidfd(pidfdOpen(pid));
    if (!pidfd) {
      gone.push_back(pid);
      continue;
    }
    auto token = loop_.add(pidfd.get(), EPOLLIN, [this, pid](uint64_t, uint32_t) { onHolderExit(pid); });
    if (!token) {
      logWarn("watching holder " + std::to_string(pid) + ": " + token.message());
      continue;
    }
    holders_.emplace(pid, HolderWatch{std::move(pidfd), *token});
  }
  for (pid_t pid : gone) onHolderExit(pid);
}

void Daemon::onHolderExit(pid_t pid) {
  std::vector<uint32_t> held;
  for (const auto& [id, p] : registry_.partitions())
    if (!p.isStatic() && p.holderPid == pid) held.push_back(id);
  for (uint32_t id : held) registry_.remove(id, "holder " + std::to_string(pid) + " exited");
  if (auto it = holders_.find(pid); it != holders_.end()) {
    loop_.remove(it->second.token);
    holders_.erase(it);
  }
}

void Daemon::onAccept() {
  for (int i = 0; i < 64; ++i) {
    UniqueFd fd(::accept4(listen_.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) {
      const int error = errno;
      if (error == EAGAIN || error == EINTR) return;
      logWarn(std::string("accept: ") + std::strerror(error));
      if ((error == EMFILE || error == ENFILE) && spareDescriptor_) {
        // The level-triggered listener would wake the loop at once again: take the connection
        // with the spare descriptor and close it, then keep the spare for the next time.
        spareDescriptor_.reset();
        UniqueFd dropped(::accept4(listen_.fd(), nullptr, nullptr, SOCK_CLOEXEC));
        dropped.reset();
        spareDescriptor_ = UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        continue;
      }
      return;
    }
    if (clients_.size() >= kMaxClients) {
      // Refused before it costs a buffer or an event-loop entry; the line is best effort.
      const std::string line = errorLine(
          ProtocolError{EUSERS, "qaicd serves at most " + std::to_string(kMaxClients) + " connections at once", {}});
      [[maybe_unused]] ssize_t sent = ::send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      logWarn("a connection was refused: " + std::to_string(kMaxClients) + " are open");
      continue;
    }
    auto peer = peerCredentials(fd.get());
    if (!peer) {
      logWarn("a connection without peer credentials was closed");
      continue;
    }
    auto token = loop_.add(fd.get(), EPOLLIN, [this](uint64_t t, uint32_t events) { onClient(t, events); });
    if (!token) {
      logWarn("connection: " + token.message());
      continue;
    }
    clients_.emplace(*token, ClientConnection(std::move(fd), *peer));
    logInfo("connection " + std::to_string(*token) + " from uid " + std::to_string(peer->uid) + " pid " +
            std::to_string(peer->pid));
  }
}

void Daemon::onClient(uint64_t token, uint32_t events) {
  auto it = clients_.find(token);
  if (it == clients_.end()) return;
  ClientConnection& client = it->second;
  if ((events & EPOLLOUT) && !client.flush()) return closeClient(token, "write error");
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    // Reading is off while requests are queued, so only a hang-up gets here then: nobody is
    // left to answer.
    if (client.hasQueuedLines()) return closeClient(token, "hung up");
    const auto state = client.read();
    if (!serveQueued(token)) return;
    if (state == ClientConnection::ReadState::TooLong) {
      (void)client.send(
          errorLine(ProtocolError{E2BIG, "request: line longer than " + std::to_string(kMaxLineBytes) + " bytes", {}}));
      return closeClient(token, "request line too long");
    }
    if (state == ClientConnection::ReadState::Closed) return closeClient(token, "closed");
  }
  updateInterest(token);
}

bool Daemon::serveQueued(uint64_t token) {
  ClientConnection& client = clients_.at(token);
  for (int i = 0; i < kLinesPerTurn && awaiting_.count(token) == 0; ++i) {
    auto line = client.nextLine();
    if (!line) break;
    auto reply = answer(token, client.peer(), *line);
    if (!reply) {
      awaiting_.insert(token);
      break;
    }
    if (!client.send(*reply)) {
      closeClient(token, "not reading its answers (more than 1 MiB pending)");
      return false;
    }
  }
  // Waiting for a device, the client is served again by deliver(), not by the backlog.
  if (client.hasQueuedLines() && awaiting_.count(token) == 0)
    backlog_.insert(token);
  else
    backlog_.erase(token);
  return true;
}

bool Daemon::serveBacklog() {
  const std::vector<uint64_t> tokens(backlog_.begin(), backlog_.end());
  for (uint64_t token : tokens)
    if (clients_.count(token) != 0 && serveQueued(token)) updateInterest(token);
  return !backlog_.empty();
}

void Daemon::deliver(uint64_t token, const std::string& line) {
  auto it = clients_.find(token);
  if (it == clients_.end()) return;  // it left meanwhile
  awaiting_.erase(token);
  if (!it->second.send(line)) return closeClient(token, "not reading its answers (more than 1 MiB pending)");
  if (!serveQueued(token)) return;
  updateInterest(token);
}

void Daemon::updateInterest(uint64_t token) {
  const ClientConnection& client = clients_.at(token);
  const uint32_t events = (client.hasQueuedLines() ? 0u : uint32_t{EPOLLIN}) |
                          (client.hasPendingOutput() ? uint32_t{EPOLLOUT} : 0u);
  (void)loop_.modify(token, events);
}

void Daemon::closeClient(uint64_t token, const std::string& why) {
  auto it = clients_.find(token);
  if (it == clients_.end()) return;
  loop_.remove(token);
  const PeerInfo peer = it->second.peer();
  clients_.erase(it);
  backlog_.erase(token);
  awaiting_.erase(token);
  std::vector<uint32_t> held;
  for (const auto& [id, p] : registry_.partitions())
    if (p.connection == token) held.push_back(id);
  for (uint32_t id : held) registry_.remove(id, "connection of pid " + std::to_string(peer.pid) + " " + why);
  logInfo("connection " + std::to_string(token) + " (pid " + std::to_string(peer.pid) + ") " + why +
          (held.empty() ? "" : ": released " + std::to_string(held.size()) + " partitions"));
  if (!held.empty()) syncHolderWatches();
}

std::optional<std::string> Daemon::answer(uint64_t token, const PeerInfo& peer, const std::string& line) {
  auto parsed = parseRequest(line);
  if (auto* e = std::get_if<ProtocolError>(&parsed)) return errorLine(*e);
  return dispatch(token, peer, std::get<Request>(parsed));
}

std::optional<std::string> Daemon::createGroup(uint64_t token, int64_t id, const Request& request,
                                               const PartitionSpec& spec) {
  registry_.createGroup(request.devices, request.deviceCount, spec,
                        [this, token, id](DeviceRegistry::GroupResult created) {
                          if (auto* e = std::get_if<ProtocolError>(&created)) {
                            e->id = id;
                            return deliver(token, errorLine(*e));
                          }
                          auto& group = std::get<std::vector<Partition*>>(created);
                          if (clients_.count(token) == 0) {
                            for (Partition* p : group)
                              registry_.remove(p->id, "its connection closed before the create was answered");
                            return;
                          }
                          json partitions = json::array();
                          for (Partition* p : group) {
                            p->connection = token;
                            partitions.push_back(toJson(registry_.info(*p)));
                          }
                          syncHolderWatches();
                          deliver(token, successLine(id, {{"partitions", partitions}}));
                        });
  return std::nullopt;
}

std::optional<std::string> Daemon::dispatch(uint64_t token, const PeerInfo& peer, const Request& request) {
  const int64_t id = request.id;
  switch (request.op) {
    case Op::Hello: {
      if (request.version != kProtocolVersion)
        return errorLine(refusal(EPROTONOSUPPORT,
                                 "version: " + std::to_string(request.version) +
                                     " is not supported (this qaicd speaks " + std::to_string(kProtocolVersion) + ")",
                                 id));
      return successLine(id, toJson(HelloInfo{kProtocolVersion, options_.root, ::getpid(), peer}));
    }
    case Op::Devices: {
      registry_.deviceInfos([this, token, id](std::vector<DeviceInfo> infos) {
        json devices = json::array();
        for (const auto& d : infos) devices.push_back(toJson(d));
        deliver(token, successLine(id, {{"devices", devices}}));
      });
      return std::nullopt;
    }
    case Op::List: {
      json partitions = json::array();
      for (const auto& [pid, p] : registry_.partitions()) partitions.push_back(toJson(registry_.info(p)));
      return successLine(id, {{"partitions", partitions}});
    }
    case Op::Create: {
      if (peer.pid <= 0) return errorLine(refusal(EPERM, "create: the peer's pid is not visible to qaicd", id));
      PartitionSpec spec{request.resources, peer.uid, peer.gid, 0600, peer.pid, request.label};
      if (request.deviceCount != 0) return createGroup(token, id, request, spec);
      registry_.create(request.device, spec, [this, token, id](DeviceRegistry::CreateResult created) {
        if (auto* e = std::get_if<ProtocolError>(&created)) {
          e->id = id;
          return deliver(token, errorLine(*e));
        }
        Partition* p = std::get<Partition*>(created);
        if (clients_.count(token) == 0) {
          // The lease is the connection, and it closed before the answer.
          registry_.remove(p->id, "its connection closed before the create was answered");
          return;
        }
        p->connection = token;
        syncHolderWatches();
        deliver(token, successLine(id, {{"partition", toJson(registry_.info(*p))}}));
      });
      return std::nullopt;
    }
    case Op::Release: {
      Partition* p = registry_.find(request.partition);
      if (p == nullptr)
        return errorLine(refusal(ENOENT, "partition: " + std::to_string(request.partition) + " does not exist", id));
      // The holder's connection, another process of the holder's uid (qaic-util remove), or root.
      const bool holdersUid = !p->isStatic() && peer.uid == p->ownerUid;
      if (p->connection != token && peer.uid != 0 && !holdersUid)
        return errorLine(refusal(EPERM,
                                 "partition " + std::to_string(p->id) + ": held by uid " + std::to_string(p->ownerUid) +
                                     "; only that uid or root may release it",
                                 id));
      auto removed = registry_.remove(p->id, "released by pid " + std::to_string(peer.pid),
                                      [this, token, id](std::optional<ProtocolError> e) {
                                        if (e) {
                                          e->id = id;
                                          return deliver(token, errorLine(*e));
                                        }
                                        deliver(token, successLine(id));
                                      });
      if (removed) {
        removed->id = id;
        return errorLine(*removed);
      }
      syncHolderWatches();
      return std::nullopt;
    }
    case Op::Adopt: {
      Partition* p = registry_.find(request.partition);
      if (p == nullptr)
        return errorLine(refusal(ENOENT, "partition: " + std::to_string(request.partition) + " does not exist", id));
      if (p->connection != token) {
        if (p->isStatic())
          return errorLine(
              refusal(EPERM, "partition " + std::to_string(p->id) + ": static partitions have no lease", id));
        if (p->holderPid != peer.pid)
          return errorLine(refusal(
              EPERM, "partition " + std::to_string(p->id) + ": held by pid " + std::to_string(p->holderPid), id));
        if (p->connection != 0)
          return errorLine(refusal(EBUSY, "partition " + std::to_string(p->id) + ": bound to another connection", id));
        p->connection = token;
      }
      return successLine(id, {{"partition", toJson(registry_.info(*p))}});
    }
  }
  return errorLine(refusal(EINVAL, "op: unknown", id));
}

}  // namespace qaic::qaicd
