// SPDX-License-Identifier: Apache-2.0
// kubelet_service's seed corpus (KubeletServiceSeeds.hpp), in the format KubeletServiceInput.hpp
// describes.
#include "KubeletServiceSeeds.hpp"

#include "KubeletServiceInput.hpp"
#include "deviceplugin.pb.h"

namespace qaic::fuzz {

namespace {

using Writer = KubeletInputWriter;

struct Device {
  uint8_t gap = 0;
  IdKind id = IdKind::Pci;
  uint8_t numa = 0;
  bool healthy = true;
  uint8_t nsp = 16;
};

Writer& devices(Writer& w, const std::vector<Device>& list) {
  w.u8(static_cast<uint8_t>(list.size()));
  for (const Device& d : list) w.u8(d.gap).op(d.id).u8(d.numa).u8(d.healthy).u8(d.nsp);
  return w;
}

Writer& profile(Writer& w, const std::string& name, DevicesKind kind, const std::vector<uint8_t>& indices,
                uint8_t perDevice, uint8_t nsp) {
  w.text(name).op(kind);
  if (kind == DevicesKind::Indices) {
    w.u8(static_cast<uint8_t>(indices.size()));
    for (uint8_t i : indices) w.u8(i);
  }
  return w.u8(perDevice).u8(nsp);
}

// A partition labelled for its device's own profile slot.
Writer& partition(Writer& w, uint8_t device, uint8_t slot, bool isStatic = true) {
  return w.u8(device).u8(slot).op(LabelKind::OwnProfile).u8(isStatic);
}

Writer& call(Writer& w, Call c, uint8_t resource) { return w.op(c).u8(resource); }
Writer& unit(Writer& w, uint8_t index) { return w.op(IdPick::Unit).u8(index); }
Writer& small(Writer& w, uint8_t size) { return w.op(SizePick::Small).u8(size); }

Writer& message(Writer& w, const google::protobuf::MessageLite& m) {
  const std::string bytes = m.SerializeAsString();
  return w.u16(static_cast<uint16_t>(bytes.size())).bytes(bytes.data(), bytes.size());
}

}  // namespace

Seeds kubeletServiceSeeds() {
  Seeds seeds;
  auto add = [&](const char* name, const Writer& w) { seeds.emplace_back(name, w.data()); };
  {
    // Three whole devices on a real root, two NUMA nodes: answered calls, then each refusal.
    Writer w;
    w.u8(0).u8(0);
    devices(w, {{0, IdKind::Pci, 0}, {0, IdKind::Pci, 0}, {0, IdKind::Pci, 1}}).u8(0);
    call(w, Call::Options, 0);
    call(w, Call::Watch, 0).u8(0);
    unit(unit(call(w, Call::AllocateBuilt, 0).u8(1).u8(2), 0), 2);
    call(w, Call::PreferredBuilt, 0).u8(1).u8(3);
    unit(unit(unit(w, 0), 1), 2).u8(1);
    small(unit(w, 2), 2);
    call(w, Call::AllocateBuilt, 0).u8(1).u8(2);
    unit(w, 1).op(IdPick::Repeat).u8(0);
    call(w, Call::AllocateBuilt, 0).u8(1).u8(1).op(IdPick::Raw).text("0000:09:00.0\n\x01");
    call(w, Call::AllocateBuilt, 0).u8(1).u8(0);
    call(w, Call::PreferredBuilt, 0).u8(1).u8(1);
    unit(w, 0).u8(0).op(SizePick::Zero);
    call(w, Call::Republish, 0).u8(0).u8(1);
    call(w, Call::Watch, 0).u8(1);
    call(w, Call::AllocateBuilt, 3).u8(1).u8(1);
    unit(w, 0);
    add("whole-devices", w);
  }
  {
    // Two profiles on an emulated root: qaic-4nsp on devices 0 and 1 (4 slots each), qaic-1nsp
    // (2 per device) on the rest; some slots have their partition, one only as a lease.
    Writer w;
    w.u8(kEmulated).u8(2);
    profile(w, "qaic-4nsp", DevicesKind::Indices, {0, 1}, 0, 4);
    profile(w, "qaic-1nsp", DevicesKind::All, {}, 2, 1);
    devices(w, {{0, IdKind::Pci, 0}, {0, IdKind::Accel, 0}, {0, IdKind::Pci, 1}}).u8(9);
    for (uint8_t slot = 0; slot < 4; ++slot) partition(w, 0, slot);
    partition(partition(w, 1, 0), 1, 1);
    partition(partition(w, 2, 0), 2, 1, false);
    w.u8(2).u8(0).op(LabelKind::Raw).text("k8s:qaic-1nsp:01").u8(1);
    unit(unit(call(w, Call::AllocateBuilt, 1).u8(1).u8(2), 0), 4);
    call(w, Call::PreferredBuilt, 1).u8(1).u8(6);
    for (uint8_t i = 0; i < 6; ++i) unit(w, i);
    small(unit(w.u8(1), 4), 3);
    call(w, Call::AllocateBuilt, 1).u8(1).u8(1);
    unit(w, 6);
    unit(call(w, Call::AllocateBuilt, 2).u8(2).u8(1), 0).u8(1);
    unit(w, 1);
    call(w, Call::Republish, 1).u8(1).u8(2);
    call(w, Call::Watch, 1).u8(0);
    call(w, Call::Republish, 2).u8(2).u8(2).u8(1);
    call(w, Call::Watch, 2).u8(0);
    add("profiles-emulated", w);
  }
  {
    // Requests as the kubelet sends them, parsed from protobuf bytes.
    Writer w;
    w.u8(kMountsOnly | kEmulated).u8(0);
    devices(w, {{0, IdKind::Pci, kUnknownNuma}, {0, IdKind::Pci, kUnknownNuma}}).u8(0);
    v1beta1::AllocateRequest allocate;
    allocate.add_container_requests()->add_devices_ids("0000:01:00.0");
    allocate.add_container_requests()->add_devices_ids("0000:00:00.0");
    message(call(w, Call::AllocateParsed, 0), allocate);
    v1beta1::PreferredAllocationRequest prefer;
    auto* c = prefer.add_container_requests();
    c->add_available_deviceids("0000:00:00.0");
    c->add_available_deviceids("0000:01:00.0");
    c->add_must_include_deviceids("0000:01:00.0");
    c->set_allocation_size(1);
    message(call(w, Call::PreferredParsed, 0), prefer);
    v1beta1::PreStartContainerRequest preStart;
    preStart.add_devices_ids("0000:00:00.0");
    message(call(w, Call::PreStartParsed, 0), preStart);
    add("parsed-requests", w);
  }
  {
    // Beyond every limit: 300 containers, 5000 IDs, the largest sizes, a 4000-byte ID.
    Writer w;
    w.u8(0).u8(0);
    devices(w, {{0}, {1}}).u8(0);
    call(w, Call::AllocateBuilt, 0).u8(1).u8(kHugeByte);
    unit(w, 0);
    call(w, Call::PreferredBuilt, 0).u8(1).u8(2);
    unit(unit(w, 0), 1).u8(0).op(SizePick::Max);
    call(w, Call::PreferredBuilt, 0).u8(1).u8(1);
    unit(w, 0).u8(0).op(SizePick::Negative).u8(7);
    call(w, Call::AllocateBuilt, 0).u8(1).u8(1).op(IdPick::Long).u16(4000);
    call(w, Call::AllocateBuilt, 0).u8(kHugeByte).u8(1);  // last: its containers read what follows
    unit(w, 0);
    add("huge", w);
  }
  {
    // Calls before qaicd published anything, then refused profiles (a name that is not a
    // resource name, two profiles taking every device).
    Writer w;
    w.u8(kNoInventoryYet).u8(2);
    profile(w, "Not A Name", DevicesKind::All, {}, 0, 1);
    profile(w, "p", DevicesKind::All, {}, 70, 1);
    devices(w, {{0}}).u8(0);
    unit(call(w, Call::AllocateBuilt, 0).u8(1).u8(1), 0);
    call(w, Call::Republish, 0).u8(0).u8(0);
    unit(call(w, Call::AllocateBuilt, 0).u8(1).u8(1), 0);
    add("no-inventory-yet", w);
  }
  return seeds;
}

}  // namespace qaic::fuzz
