// SPDX-License-Identifier: Apache-2.0
// What the device plugin answers from an inventory alone: Allocate's container view (real and
// emulated roots), GetPreferredAllocation's packing, and the refusals, each naming the ID.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "kubelet/Inventory.hpp"

namespace qaic::qaicd {
namespace {

Unit unitOn(uint32_t device, uint32_t slot, std::optional<uint32_t> node, std::optional<int64_t> numa = {}) {
  return Unit{"dev" + std::to_string(device) + "-p-" + std::to_string(slot), true, numa, device, node};
}

// Four devices of a partition profile: 0 has 1 unit, 1 has 3, 2 has 2 (NUMA 1), 3 has 4.
ResourceInventory partitions() {
  ResourceInventory r{"qualcomm.com/p", true, {}};
  uint32_t node = 100;
  const uint32_t counts[] = {1, 3, 2, 4};
  for (uint32_t d = 0; d < 4; ++d)
    for (uint32_t s = 0; s < counts[d]; ++s) r.units.push_back(unitOn(d, s, node++, d == 2 ? 1 : 0));
  return r;
}

std::vector<std::string> idsOf(const ResourceInventory& r) {
  std::vector<std::string> ids;
  for (const Unit& u : r.units) ids.push_back(u.id);
  return ids;
}

std::vector<std::string> prefer(const ResourceInventory& r, const std::vector<std::string>& available,
                                const std::vector<std::string>& must, int64_t size) {
  auto chosen = preferredAllocation(r, available, must, size);
  if (auto* refusal = std::get_if<Refusal>(&chosen)) {
    ADD_FAILURE() << refusal->message;
    return {};
  }
  return std::get<std::vector<std::string>>(chosen);
}

std::string refusalOf(const std::variant<std::vector<std::string>, Refusal>& result) {
  if (auto* r = std::get_if<Refusal>(&result)) return r->message;
  ADD_FAILURE() << "not refused";
  return {};
}

TEST(KubeletInventoryTest, OfferListsWholeDevicesAndEveryProfileSlot) {
  Inventory base;
  base.root = "/tmp/emu";
  base.emulated = true;
  // Devices 1 and 2 are peers: their units are in p2p group 1, device 0's in its own.
  const std::vector<OfferedDevice> devices{{0, "0000:01:00.0", 0, "/dev/shm/a", true, "", 0},
                                           {1, "0000:02:00.0", 1, "/dev/shm/a", true, "p", 3, {2}},
                                           {2, "accel2", std::nullopt, "", false, "p", 1, {1}}};
  // Slot 0 of device 1, slot 2 (spelled with a leading zero: the same slot) and a lease that
  // chose a profile label; device 2's slot 0 is there but the device is not Ready.
  const std::vector<OfferedPartition> partitions{{100, 1, "k8s:p:0", true},
                                                 {101, 1, "k8s:p:02", true},
                                                 {102, 1, "k8s:p:1", false},
                                                 {103, 2, "k8s:p:0", true},
                                                 {104, 1, "static:team", true}};
  const Inventory offered = offerInventory(base, {"p"}, devices, partitions);
  EXPECT_EQ(offered.root, "/tmp/emu");
  EXPECT_EQ(offered.shmDirs, (std::map<uint32_t, std::string>{{0, "/dev/shm/a"}, {1, "/dev/shm/a"}, {2, ""}}));
  ASSERT_EQ(offered.resources.size(), 2u);
  EXPECT_EQ(offered.resources[0],
            (ResourceInventory{"qualcomm.com/qaic", false, {Unit{"0000:01:00.0", true, 0, 0, 0}}}));
  EXPECT_EQ(offered.resources[1],
            (ResourceInventory{
                "qualcomm.com/p",
                true,
                {Unit{"0000:02:00.0-p-0", true, 1, 1, 100, 1}, Unit{"0000:02:00.0-p-1", false, 1, 1, std::nullopt, 1},
                 Unit{"0000:02:00.0-p-2", true, 1, 1, 101, 1}, Unit{"accel2-p-0", false, std::nullopt, 2, 103, 1}}}));
}

TEST(KubeletInventoryTest, AllocateOnTheRealRootIsTheDeviceNodeAndItsIndex) {
  Inventory inventory;
  inventory.root = "/";
  ResourceInventory whole{
      "qualcomm.com/qaic", false, {Unit{"0000:01:00.0", true, 0, 0, 0}, Unit{"0000:02:00.0", true, 0, 1, 1}}};
  auto result = allocateContainer(inventory, whole, {"0000:02:00.0", "0000:01:00.0"});
  ASSERT_TRUE(std::holds_alternative<ContainerAllocation>(result));
  const auto& a = std::get<ContainerAllocation>(result);
  ASSERT_EQ(a.devices.size(), 2u);
  EXPECT_EQ(a.devices[0].containerPath, "/dev/accel/accel0");
  EXPECT_EQ(a.devices[0].hostPath, "/dev/accel/accel0");
  EXPECT_EQ(a.devices[1].hostPath, "/dev/accel/accel1");
  EXPECT_EQ(a.devices[1].permissions, "rw");
  EXPECT_EQ(a.envs.at("QAIC_VISIBLE_DEVICES"), "0,1");
  EXPECT_EQ(a.envs.count("QAIC_PARTITION"), 0u);
  EXPECT_EQ(a.envs.count("QAIC_ROOT"), 0u) << "a real root needs nothing but the node";
  EXPECT_TRUE(a.mounts.empty());
}

TEST(KubeletInventoryTest, AllocateOnAnEmulatedRootMountsItsTree) {
  Inventory inventory;
  inventory.root = "/tmp/emu";
  inventory.emulated = true;
  inventory.shmDirs = {{1, "/dev/shm/qaic-emu.7.x"}, {3, "/dev/shm/qaic-emu.7.x"}};
  ResourceInventory r{"qualcomm.com/p", true, {unitOn(1, 0, 105), unitOn(3, 0, 101)}};
  auto result = allocateContainer(inventory, r, {"dev1-p-0", "dev3-p-0"});
  ASSERT_TRUE(std::holds_alternative<ContainerAllocation>(result));
  const auto& a = std::get<ContainerAllocation>(result);
  EXPECT_EQ(a.envs.at("QAIC_PARTITION"), "101,105");
  EXPECT_EQ(a.envs.at("QAIC_VISIBLE_DEVICES"), "101,105");
  EXPECT_EQ(a.envs.at("QAIC_ROOT"), "/tmp/emu");
  EXPECT_EQ(a.devices[0].hostPath, "/tmp/emu/dev/accel/accel101");
  EXPECT_EQ(a.devices[0].containerPath, "/dev/accel/accel101");
  // Node and attributes of each partition, and the one shared-memory directory of both devices.
  ASSERT_EQ(a.mounts.size(), 5u);
  EXPECT_EQ(a.mounts[0].hostPath, "/tmp/emu/dev/accel/accel101");
  EXPECT_FALSE(a.mounts[0].readOnly);
  EXPECT_EQ(a.mounts[1].hostPath, "/tmp/emu/sys/class/accel/accel101");
  EXPECT_TRUE(a.mounts[1].readOnly);
  EXPECT_EQ(a.mounts[4].hostPath, "/dev/shm/qaic-emu.7.x");
  for (const auto& m : a.mounts) EXPECT_EQ(m.containerPath, m.hostPath);

  // --kubelet-mounts-only: the same container view without DeviceSpecs, which runc-based
  // runtimes refuse for anything but a device node.
  inventory.deviceSpecs = false;
  auto mountsOnly = allocateContainer(inventory, r, {"dev1-p-0"});
  ASSERT_TRUE(std::holds_alternative<ContainerAllocation>(mountsOnly));
  EXPECT_TRUE(std::get<ContainerAllocation>(mountsOnly).devices.empty());
  EXPECT_EQ(std::get<ContainerAllocation>(mountsOnly).mounts.size(), 3u);
  inventory.root = "/";
  inventory.emulated = false;
  EXPECT_EQ(std::get<ContainerAllocation>(allocateContainer(inventory, r, {"dev1-p-0"})).devices.size(), 1u)
      << "a real device node is always a DeviceSpec";
}

TEST(KubeletInventoryTest, AllocateRefusalsNameTheIdAndTheResource) {
  Inventory inventory;
  inventory.root = "/";
  ResourceInventory r{"qualcomm.com/p", true, {unitOn(0, 0, 100), unitOn(0, 1, std::nullopt)}};
  auto refused = [&](const std::vector<std::string>& ids) {
    auto result = allocateContainer(inventory, r, ids);
    if (auto* refusal = std::get_if<Refusal>(&result)) return *refusal;
    ADD_FAILURE() << "allocated";
    return Refusal{};
  };
  EXPECT_NE(refused({"dev0-p-0", "zzz"}).message.find("unknown device ID \"zzz\" for qualcomm.com/p"),
            std::string::npos);
  EXPECT_NE(refused({"dev0-p-0", "dev0-p-0"}).message.find("\"dev0-p-0\" is named twice"), std::string::npos);
  EXPECT_NE(refused({"a", "b", "c"}).message.find("3 qualcomm.com/p devices requested, but this node has 2"),
            std::string::npos);
  EXPECT_EQ(refused({}).code, Refusal::Code::InvalidArgument);
  // A partition that is not on its device right now (a reset ended it) cannot be handed out.
  const Refusal missing = refused({"dev0-p-1"});
  EXPECT_EQ(missing.code, Refusal::Code::Unavailable);
  EXPECT_NE(missing.message.find("its partition is not on device 0"), std::string::npos) << missing.message;
  EXPECT_EQ(quoteId(std::string("a\x01\"b", 4)), "\"a\\x01\\x22b\"");
  EXPECT_EQ(quoteId(std::string(100, 'x')), "\"" + std::string(64, 'x') + "\" (100 bytes)");
  // A kubelet's message in qaicd's log stays one line.
  EXPECT_EQ(quoteText("refused\nqaicd[1] 0.000 warning: forged", 512),
            "\"refused\\x0aqaicd[1] 0.000 warning: forged\"");
  EXPECT_EQ(quoteText(std::string(600, 'y'), 512), "\"" + std::string(512, 'y') + "\" (600 bytes)");
}

// Every InvalidArgument refusal names the request field it is about, as the kubelet spells it
// (kubelet_service found Allocate's "is named twice" and "devices requested" naming none, and
// GetPreferredAllocation's "must_include device ID" not the field).
TEST(KubeletInventoryTest, RefusalsNameTheRequestField) {
  Inventory inventory;
  inventory.root = "/";
  const ResourceInventory r = partitions();
  const auto all = idsOf(r);
  for (const auto& ids : std::vector<std::vector<std::string>>{
           {}, {"dev0-p-0", "dev0-p-0"}, {"nope"}, std::vector<std::string>(all.size() + 1, "x")}) {
    auto result = allocateContainer(inventory, r, ids);
    ASSERT_TRUE(std::holds_alternative<Refusal>(result));
    EXPECT_TRUE(std::get<Refusal>(result).message.starts_with("devices_ids: ")) << std::get<Refusal>(result).message;
  }
  const std::vector<std::pair<std::string, std::string>> preferred{
      {refusalOf(preferredAllocation(r, all, {}, 0)), "allocation_size"},
      {refusalOf(preferredAllocation(r, {"dev0-p-0"}, {}, 2)), "allocation_size"},
      {refusalOf(preferredAllocation(r, {"dev0-p-0", "nope"}, {}, 1)), "available_deviceIDs"},
      {refusalOf(preferredAllocation(r, {"dev0-p-0", "dev0-p-0"}, {}, 1)), "available_deviceIDs"},
      {refusalOf(preferredAllocation(r, {"dev0-p-0"}, {"dev1-p-0"}, 1)), "must_include_deviceIDs"},
      {refusalOf(preferredAllocation(r, {"dev0-p-0", "dev1-p-0"}, {"dev0-p-0", "dev0-p-0"}, 2)),
       "must_include_deviceIDs"},
      {refusalOf(preferredAllocation(r, all, {"dev1-p-0", "dev1-p-1"}, 1)), "must_include_deviceIDs"},
      {refusalOf(preferredAllocation(r, std::vector<std::string>(all.size() + 1, "x"), {}, 1)), "available_deviceIDs"}};
  for (const auto& [message, field] : preferred) EXPECT_NE(message.find(field), std::string::npos) << message;
}

TEST(KubeletInventoryTest, PreferredAllocationPacksOntoFewDevices) {
  const ResourceInventory r = partitions();
  const auto all = idsOf(r);
  // 3 fit exactly on device 1, the tightest device that holds them all.
  EXPECT_EQ(prefer(r, all, {}, 3), (std::vector<std::string>{"dev1-p-0", "dev1-p-1", "dev1-p-2"}));
  // 1 goes to the device with a single unit left, keeping bigger holes whole.
  EXPECT_EQ(prefer(r, all, {}, 1), std::vector<std::string>{"dev0-p-0"});
  EXPECT_EQ(prefer(r, all, {}, 4).front().substr(0, 4), "dev3");
  // 6: nothing holds them; the fullest device first (4, NUMA node 0), then the tightest fit for
  // the rest on the same NUMA node (device 1) rather than the exact fit on node 1 (device 2).
  auto six = prefer(r, all, {}, 6);
  ASSERT_EQ(six.size(), 6u);
  std::map<std::string, int> perDevice;
  for (const auto& id : six) ++perDevice[id.substr(0, 4)];
  EXPECT_EQ(perDevice, (std::map<std::string, int>{{"dev1", 2}, {"dev3", 4}}));
  // must_include comes first and fills its own device before another.
  EXPECT_EQ(prefer(r, all, {"dev3-p-2"}, 2), (std::vector<std::string>{"dev3-p-2", "dev3-p-0"}));
  // Only what is available counts.
  EXPECT_EQ(prefer(r, {"dev1-p-0", "dev3-p-1", "dev3-p-3"}, {}, 2), (std::vector<std::string>{"dev3-p-1", "dev3-p-3"}));
  EXPECT_EQ(prefer(r, all, {}, static_cast<int64_t>(all.size())).size(), all.size());
}

TEST(KubeletInventoryTest, PreferredAllocationKeepsToTheNumaNodeChosen) {
  ResourceInventory r{"qualcomm.com/qaic", false, {}};
  for (uint32_t d = 0; d < 4; ++d) r.units.push_back(Unit{"gpu" + std::to_string(d), true, d % 2, d, d});
  // The device that must be included is on NUMA node 1: the second one comes from node 1 too.
  EXPECT_EQ(prefer(r, idsOf(r), {"gpu1"}, 2), (std::vector<std::string>{"gpu1", "gpu3"}));
  EXPECT_EQ(prefer(r, idsOf(r), {"gpu2"}, 2), (std::vector<std::string>{"gpu2", "gpu0"}));
}

TEST(KubeletInventoryTest, PreferredAllocationRefusals) {
  const ResourceInventory r = partitions();
  const auto all = idsOf(r);
  EXPECT_NE(refusalOf(preferredAllocation(r, all, {}, 0)).find("allocation_size: 0"), std::string::npos);
  EXPECT_NE(refusalOf(preferredAllocation(r, {"dev0-p-0"}, {}, 2)).find("more than the 1 available"),
            std::string::npos);
  EXPECT_NE(refusalOf(preferredAllocation(r, {"dev0-p-0", "nope"}, {}, 1)).find("unknown device ID \"nope\""),
            std::string::npos);
  EXPECT_NE(refusalOf(preferredAllocation(r, {"dev0-p-0"}, {"dev1-p-0"}, 1)).find("not among available"),
            std::string::npos);
  EXPECT_NE(refusalOf(preferredAllocation(r, {"dev0-p-0", "dev0-p-0"}, {}, 1)).find("named twice"), std::string::npos);
  EXPECT_NE(refusalOf(preferredAllocation(r, all, {"dev1-p-0", "dev1-p-1"}, 1)).find("exceed allocation_size"),
            std::string::npos);
  std::vector<std::string> flood(10'000, "x");
  EXPECT_NE(refusalOf(preferredAllocation(r, flood, {}, 1)).find("10000 available_deviceIDs"), std::string::npos);
}

// Whole devices in p2p groups {0, 1, 2}, {3, 4} and {5} (each group named by its lowest index).
ResourceInventory wholeDevicesInGroups(std::optional<int64_t> numaOfFive = {}) {
  ResourceInventory r{"qualcomm.com/qaic", false, {}};
  const uint32_t groups[] = {0, 0, 0, 3, 3, 5};
  for (uint32_t d = 0; d < 6; ++d)
    r.units.push_back(Unit{"card" + std::to_string(d), true, d == 5 ? numaOfFive : std::nullopt, d, d, groups[d]});
  return r;
}

// prefer(), in ID order: which cards, whatever the order they were picked in.
std::vector<std::string> preferred(const ResourceInventory& r, const std::vector<std::string>& available,
                                   const std::vector<std::string>& mustInclude, int64_t size) {
  auto ids = prefer(r, available, mustInclude, size);
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(KubeletInventoryTest, PreferredAllocationKeepsToOneP2pGroup) {
  const ResourceInventory r = wholeDevicesInGroups();
  const std::vector<std::string> all = idsOf(r);
  // Two cards: the group that holds them most tightly ({3, 4}), not the first two cards.
  EXPECT_EQ(preferred(r, all, {}, 2), (std::vector<std::string>{"card3", "card4"}));
  // Three: only {0, 1, 2} holds them.
  EXPECT_EQ(preferred(r, all, {}, 3), (std::vector<std::string>{"card0", "card1", "card2"}));
  // A must-include card brings its group's others first.
  EXPECT_EQ(preferred(r, all, {"card1"}, 2), (std::vector<std::string>{"card0", "card1"}));
  EXPECT_EQ(preferred(r, all, {"card4"}, 2), (std::vector<std::string>{"card3", "card4"}));
  // Only what the kubelet offers counts: with card 4 taken, {0, 1, 2} is the only group of two.
  EXPECT_EQ(preferred(r, {"card0", "card2", "card3", "card5"}, {}, 2), (std::vector<std::string>{"card0", "card2"}));
  // The same request gets the same answer.
  EXPECT_EQ(preferred(r, all, {}, 2), preferred(r, all, {}, 2));
}

TEST(KubeletInventoryTest, PreferredAllocationSpansTheFewestP2pGroups) {
  const ResourceInventory r = wholeDevicesInGroups();
  const std::vector<std::string> all = idsOf(r);
  // Four cards: the largest group whole, then the tightest fit for the one left ({5}).
  EXPECT_EQ(preferred(r, all, {}, 4), (std::vector<std::string>{"card0", "card1", "card2", "card5"}));
  // Five: {0, 1, 2} and {3, 4}; two groups, not three.
  EXPECT_EQ(preferred(r, all, {}, 5), (std::vector<std::string>{"card0", "card1", "card2", "card3", "card4"}));
  // Must-include cards in two groups: both groups are used before a third.
  EXPECT_EQ(preferred(r, all, {"card5", "card3"}, 3), (std::vector<std::string>{"card3", "card4", "card5"}));
  // Asking for more than are offered is refused naming the field.
  EXPECT_EQ(refusalOf(preferredAllocation(r, all, {}, 7)), "allocation_size 7 is more than the 6 available devices");
}

}  // namespace
}  // namespace qaic::qaicd
