// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: qaicd's kubelet device-plugin service as a hostile or buggy kubelet drives
// it, in-process (no socket): the v1beta1 DevicePlugin calls, their requests built field by
// field (duplicates, unknown, empty and huge IDs and counts, sizes 0, negative and huge) or
// parsed from input bytes, answered from inventories qaicd publishes for a node the input
// shapes (devices, profiles, partitions; KubeletServiceInput.hpp). Every answer is checked
// against KubeletServiceChecks.hpp, not only for crashes; ASan/LSan catch what leaks.
// `fuzz_kubelet_service --write-seeds=DIR` writes the seed corpus instead of fuzzing.
#include <fcntl.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "KubeletServiceChecks.hpp"
#include "KubeletServiceInput.hpp"
#include "KubeletServiceSeeds.hpp"
#include "Log.hpp"
#include "kubelet/DevicePluginService.hpp"

namespace {

using namespace qaic::fuzz;
using qaic::qaicd::DeviceListUpdates;
using qaic::qaicd::DevicePluginService;
using qaic::qaicd::Inventory;
using qaic::qaicd::InventoryChannel;

constexpr int kMaxCalls = 32;

// KUBELET_SERVICE_TRACE=1 prints each call's answer (to see what a seed reaches).
void trace(const char* call, const std::string& resource, const grpc::Status& status) {
  static const bool enabled = std::getenv("KUBELET_SERVICE_TRACE") != nullptr;
  if (enabled)
    std::fprintf(stderr, "kubelet_service: %s %s -> %d %.200s\n", call, resource.c_str(), status.error_code(),
                 status.error_message().c_str());
}

// A ListAndWatch stream's kubelet: takes the first answer, then ends the stream (the service
// shuts down, and `hangUp` makes the write fail as when the kubelet went away).
class OneAnswerWriter final : public grpc::ServerWriterInterface<v1beta1::ListAndWatchResponse> {
 public:
  OneAnswerWriter(DevicePluginService& service, bool hangUp) : service_(service), hangUp_(hangUp) {}
  void SendInitialMetadata() override {}
  bool Write(const v1beta1::ListAndWatchResponse& response, grpc::WriteOptions) override {
    answers.push_back(response);
    service_.beginShutdown();
    return !hangUp_;
  }
  std::vector<v1beta1::ListAndWatchResponse> answers;

 private:
  DevicePluginService& service_;
  const bool hangUp_;
};

class Session {
 public:
  explicit Session(InputReader& in) : in_(in), node_(readNode(in)) {
    names_.push_back(std::string(qaic::qaicd::kWholeDeviceResource));
    for (const std::string& p : node_.profileNames()) names_.push_back(std::string(qaic::qaicd::kResourceDomain) + p);
  }

  void run(bool publishFirst) {
    if (publishFirst) publish();
    for (int calls = 0; calls < kMaxCalls && !in_.done(); ++calls) call();
  }

 private:
  void publish() {
    Inventory offered = node_.offer();
    checkInventory(node_, offered);
    channel_->publish(std::move(offered));
    // Every stream sees the new inventory: an answer exactly when its list changed.
    const auto current = channel_->current();
    for (const std::string& name : names_) {
      auto answer = updates_.try_emplace(name, name).first->second.next(*current);
      const auto* resource = current->find(name);
      std::optional<std::string> list;
      if (resource != nullptr) list = listOf(*resource);
      const bool changed = list && list != lastList_[name];
      if (answer.has_value() != changed)
        violated("ListAndWatch of " + name + ": an answer must come iff its list changed");
      if (answer) {
        checkDeviceList(*resource, *answer);
        lastList_[name] = list;
      }
    }
  }

  // A resource's list as the kubelet sees it (IDs, health, NUMA node), for comparing.
  static std::string listOf(const qaic::qaicd::ResourceInventory& resource) {
    std::string out;
    for (const auto& u : resource.units)
      out += u.id + '\0' + (u.healthy ? "H" : "U") + (u.numaNode ? std::to_string(*u.numaNode) : "-") + '\0';
    return out;
  }

  std::string resource() {
    const uint8_t pick = in_.u8();
    return pick % (names_.size() + 1) < names_.size() ? names_[pick % (names_.size() + 1)] : "qualcomm.com/not-served";
  }

  // An ID as IdPick says, from `name`'s units (or another resource's).
  std::string pickId(const std::string& name, const std::vector<std::string>& before) {
    const auto current = channel_->current();
    auto unitOf = [&](const std::string& resource, uint8_t index) -> std::string {
      const auto* r = current ? current->find(resource) : nullptr;
      if (r == nullptr || r->units.empty()) return "0000:01:00.0";
      return r->units[index % r->units.size()].id;
    };
    switch (static_cast<IdPick>(in_.u8() % static_cast<uint8_t>(IdPick::Count))) {
      case IdPick::Unit: return unitOf(name, in_.u8());
      case IdPick::Repeat: {
        const uint8_t index = in_.u8();
        return before.empty() ? unitOf(name, index) : before[index % before.size()];
      }
      case IdPick::Raw: return in_.text(in_.u8());
      case IdPick::Empty: return {};
      case IdPick::Long: return std::string(in_.u16() % 5000, 'x');
      case IdPick::OtherResource: return unitOf(names_[in_.u8() % names_.size()], in_.u8());
      case IdPick::Count: break;
    }
    return {};
  }

  void fillIds(const std::string& name, google::protobuf::RepeatedPtrField<std::string>& out) {
    const uint8_t count = in_.u8();
    std::vector<std::string> ids;
    if (count == kHugeByte) {
      // Within what a plugin socket accepts (KubeletRegistrar::kMaxRequestBytes): 5000 IDs of
      // at most 64 bytes.
      ids.assign(kHugeCount, pickId(name, ids).substr(0, 64));
    } else {
      for (int n = count % 12; n > 0; --n) ids.push_back(pickId(name, ids));
    }
    for (std::string& id : ids) out.Add(std::move(id));
  }

  int containers() {
    const uint8_t count = in_.u8();
    return count == kHugeByte ? kHugeContainers : count % 4;
  }

  int32_t allocationSize() {
    switch (static_cast<SizePick>(in_.u8() % static_cast<uint8_t>(SizePick::Count))) {
      case SizePick::Zero: return 0;
      case SizePick::Negative: return -1 - in_.u8();
      case SizePick::Max: return INT32_MAX;
      case SizePick::Min: return INT32_MIN;
      case SizePick::Small: return in_.u8() % 10;
      case SizePick::Count: break;
    }
    return 0;
  }

  template <typename Message>
  bool parsed(Message& message) {
    const std::string bytes = in_.text(in_.u16() % 4096);
    return message.ParseFromString(bytes);
  }

  // One unary call on a fresh service for `name` (each call of the kubelet is on its own
  // context); `check` gets the inventory it was answered from.
  template <typename Request, typename Response, typename Method, typename Check>
  void unary(const char* call, const std::string& name, Method method, const Request& request, Check check) {
    DevicePluginService service(name, channel_);
    grpc::ServerContext context;
    Response response;
    const grpc::Status status = (service.*method)(&context, &request, &response);
    trace(call, name, status);
    check(channel_->current().get(), name, request, status, response);
  }

  void allocate(const std::string& name, const v1beta1::AllocateRequest& request) {
    unary<v1beta1::AllocateRequest, v1beta1::AllocateResponse>("Allocate", name, &DevicePluginService::Allocate,
                                                               request, checkAllocate);
  }

  void prefer(const std::string& name, const v1beta1::PreferredAllocationRequest& request) {
    unary<v1beta1::PreferredAllocationRequest, v1beta1::PreferredAllocationResponse>(
        "GetPreferredAllocation", name, &DevicePluginService::GetPreferredAllocation, request, checkPreferred);
  }

  void call() {
    const auto op = static_cast<Call>(in_.u8() % static_cast<uint8_t>(Call::Count));
    const std::string name = resource();
    switch (op) {
      case Call::Options:
        unary<v1beta1::Empty, v1beta1::DevicePluginOptions>(
            "GetDevicePluginOptions", name, &DevicePluginService::GetDevicePluginOptions, v1beta1::Empty(),
            [](const Inventory*, const std::string&, const v1beta1::Empty&, const grpc::Status& status,
               const v1beta1::DevicePluginOptions& options) {
              if (!status.ok() || options.pre_start_required() || !options.get_preferred_allocation_available())
                violated("GetDevicePluginOptions answered " + options.ShortDebugString());
            });
        break;
      case Call::Watch: {
        // A stream over a resource not published yet waits (bounded, kStreamCheck) for it:
        // too slow for a fuzzer, and nothing of the request is read there.
        const bool hangUp = (in_.u8() & 1) != 0;
        const auto current = channel_->current();
        const auto* resource = current ? current->find(name) : nullptr;
        if (resource == nullptr) break;
        DevicePluginService service(name, channel_);
        grpc::ServerContext context;
        OneAnswerWriter writer(service, hangUp);
        const grpc::Status status = service.watch(context, writer);
        trace("ListAndWatch", name, status);
        if (!status.ok() || writer.answers.size() != 1) violated("ListAndWatch of " + name + ": not one answer");
        checkDeviceList(*resource, writer.answers.front());
        break;
      }
      case Call::Republish:
        changeNode(node_, in_);
        publish();
        break;
      case Call::PreferredBuilt: {
        v1beta1::PreferredAllocationRequest request;
        for (int n = containers(); n > 0; --n) {
          auto* c = request.add_container_requests();
          fillIds(name, *c->mutable_available_deviceids());
          fillIds(name, *c->mutable_must_include_deviceids());
          c->set_allocation_size(allocationSize());
        }
        prefer(name, request);
        break;
      }
      case Call::PreferredParsed: {
        v1beta1::PreferredAllocationRequest request;
        if (parsed(request)) prefer(name, request);
        break;
      }
      case Call::AllocateBuilt: {
        v1beta1::AllocateRequest request;
        for (int n = containers(); n > 0; --n) fillIds(name, *request.add_container_requests()->mutable_devices_ids());
        allocate(name, request);
        break;
      }
      case Call::AllocateParsed: {
        v1beta1::AllocateRequest request;
        if (parsed(request)) allocate(name, request);
        break;
      }
      case Call::PreStartParsed: {
        v1beta1::PreStartContainerRequest request;
        if (!parsed(request)) break;
        // pre_start_required is false: the kubelet never calls it, and any call is answered.
        unary<v1beta1::PreStartContainerRequest, v1beta1::PreStartContainerResponse>(
            "PreStartContainer", name, &DevicePluginService::PreStartContainer, request,
            [](const Inventory*, const std::string&, const v1beta1::PreStartContainerRequest&,
               const grpc::Status& status, const v1beta1::PreStartContainerResponse&) {
              if (!status.ok()) violated("PreStartContainer refused: " + status.error_message());
            });
        break;
      }
      case Call::Count: break;
    }
  }

  InputReader& in_;
  Node node_;
  std::vector<std::string> names_;
  std::shared_ptr<InventoryChannel> channel_ = std::make_shared<InventoryChannel>();
  std::map<std::string, DeviceListUpdates> updates_;
  std::map<std::string, std::optional<std::string>> lastList_;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  // qaicd's log lines (a warning per refused Allocate) would flood the fuzzer's output; their
  // text is built all the same.
  qaic::qaicd::setVerbose(true);
  qaic::qaicd::setLogFd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  // protobuf logs each string field that is not UTF-8 as it refuses the message.
  google::protobuf::SetLogHandler(nullptr);
  writeSeedsIfAsked(*argc, *argv, "kubelet_service", kubeletServiceSeeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  InputReader in(data, size);
  const bool publishFirst = size == 0 || (data[0] & kNoInventoryYet) == 0;
  Session session(in);
  session.run(publishFirst);
  return 0;
}
