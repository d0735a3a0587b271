// SPDX-License-Identifier: Apache-2.0
// What kubelet_service requires of qaicd's device-plugin answers, computed from the inventory
// alone: the refusal a request must draw (its gRPC code, the container it names and the field
// or ID), and for an accepted request what its answer may hold. A violation prints what was
// asked and answered, then aborts (libFuzzer keeps the input).
#pragma once

#include <string>

#include <grpcpp/grpcpp.h>

#include "KubeletServiceInput.hpp"
#include "deviceplugin.pb.h"

namespace qaic::fuzz {

[[noreturn]] void violated(const std::string& what);

// The inventory qaicd offers for `node`: IDs unique per resource, each unit's accel index its
// device's or a static partition of its profile slot on that device, the slots of each device.
void checkInventory(const Node& node, const qaicd::Inventory& inventory);

// `inventory`: the one the service answered from (nullptr before the first).
void checkAllocate(const qaicd::Inventory* inventory, const std::string& resource,
                   const v1beta1::AllocateRequest& request, const grpc::Status& status,
                   const v1beta1::AllocateResponse& response);
void checkPreferred(const qaicd::Inventory* inventory, const std::string& resource,
                    const v1beta1::PreferredAllocationRequest& request, const grpc::Status& status,
                    const v1beta1::PreferredAllocationResponse& response);
// A ListAndWatch answer: the resource's units, in order, with their health and NUMA node.
void checkDeviceList(const qaicd::ResourceInventory& resource, const v1beta1::ListAndWatchResponse& response);

}  // namespace qaic::fuzz
