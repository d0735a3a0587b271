// SPDX-License-Identifier: Apache-2.0
#include "KubeletStandIn.hpp"

#include <unistd.h>

#include <stdexcept>

#include "kubelet/GrpcLifetime.hpp"

namespace qaic::qaicd::test {

class KubeletStandIn::Service final : public v1beta1::Registration::Service {
 public:
  explicit Service(KubeletStandIn& owner) : owner_(owner) {}
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request, v1beta1::Empty*) override {
    {
      std::lock_guard lock(owner_.mutex_);
      owner_.registrations_.push_back(*request);
    }
    owner_.changed_.notify_all();
    return grpc::Status::OK;
  }

 private:
  KubeletStandIn& owner_;
};

KubeletStandIn::KubeletStandIn(std::filesystem::path directory)
    : directory_(std::move(directory)), service_(std::make_unique<Service>(*this)) {
  keepGrpcInitialized();
  ::unlink(socketPath().c_str());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socketPath().string(), grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_) throw std::runtime_error("kubelet stand-in: cannot serve " + socketPath().string());
}

KubeletStandIn::~KubeletStandIn() {
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_->Wait();
  ::unlink(socketPath().c_str());
}

std::vector<v1beta1::RegisterRequest> KubeletStandIn::registrations() const {
  std::lock_guard lock(mutex_);
  return registrations_;
}

std::vector<v1beta1::RegisterRequest> KubeletStandIn::waitForRegistrations(std::size_t count,
                                                                           std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return registrations_.size() >= count; });
  return registrations_;
}

DeviceWatch::DeviceWatch(v1beta1::DevicePlugin::Stub& stub) {
  reader_ = std::thread([this, &stub] {
    v1beta1::Empty empty;
    auto reader = stub.ListAndWatch(&context_, empty);
    v1beta1::ListAndWatchResponse response;
    while (reader->Read(&response)) {
      {
        std::lock_guard lock(mutex_);
        updates_.emplace_back(response.devices().begin(), response.devices().end());
        arrivals_.push_back(std::chrono::steady_clock::now());
      }
      changed_.notify_all();
    }
    grpc::Status status = reader->Finish();
    {
      std::lock_guard lock(mutex_);
      finished_ = status;
    }
    changed_.notify_all();
  });
}

DeviceWatch::~DeviceWatch() {
  context_.TryCancel();
  reader_.join();
}

std::optional<DeviceWatch::Devices> DeviceWatch::waitFor(const std::function<bool(const Devices&)>& condition,
                                                         std::chrono::milliseconds timeout, std::size_t from,
                                                         std::size_t* index) {
  std::unique_lock lock(mutex_);
  std::optional<Devices> found;
  changed_.wait_for(lock, timeout, [&] {
    // Updates already checked are not checked again on the next wake-up.
    for (; from < updates_.size() && !found; ++from) {
      if (!condition(updates_[from])) continue;
      found = updates_[from];
      if (index != nullptr) *index = from;
    }
    return found.has_value() || finished_.has_value();
  });
  return found;
}

std::size_t DeviceWatch::updates() const {
  std::lock_guard lock(mutex_);
  return updates_.size();
}

std::optional<grpc::Status> DeviceWatch::finished() const {
  std::lock_guard lock(mutex_);
  return finished_;
}

std::chrono::steady_clock::time_point DeviceWatch::arrival(std::size_t index) const {
  std::lock_guard lock(mutex_);
  return arrivals_.at(index);
}

std::unique_ptr<v1beta1::DevicePlugin::Stub> dialPlugin(const std::filesystem::path& socket) {
  keepGrpcInitialized();
  return v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix:" + socket.string(), grpc::InsecureChannelCredentials()));
}

const v1beta1::Device* findDevice(const DeviceWatch::Devices& devices, const std::string& id) {
  for (const auto& d : devices)
    if (d.id() == id) return &d;
  return nullptr;
}

std::size_t countHealthy(const DeviceWatch::Devices& devices) {
  std::size_t n = 0;
  for (const auto& d : devices) n += d.health() == "Healthy" ? 1 : 0;
  return n;
}

}  // namespace qaic::qaicd::test
