// SPDX-License-Identifier: Apache-2.0
// Partitions: a share of one device (NSPs, multicast ids, semaphores, virtual channels, DDR) that
// qaicd carves off for this process and that appears as its own device, accel<id> with id >= 100,
// which only this process's user may open and whose activations cannot exceed it. The partition
// lives as long as the Partition object (its connection to qaicd is the lease): when the object
// is destroyed or the process exits, qaicd removes it and everything activated in it stops.
//
// Two ways to run inside one (docs/runtime.md, "Partitions"):
//   auto p = Partition::acquire(resourcesFor(*qpc, 2));
//   auto context = Context::Factory(nullptr, {p->id()});   // keep `p` alive as long as `context`
// or let the context acquire and hold it:
//   ResourceRequest r = resourcesFor(*qpc, 2);
//   QAicContextProperties props;
//   props.partition = &r;
//   auto context = Context::Factory(&props, {});           // getDevices() == {partition id}
// Without qaicd nothing changes: Context::Factory(nullptr, {}) uses the whole devices.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <qaic/Context.hpp>
#include <qaic/Qpc.hpp>
#include <qaic/Resources.hpp>

namespace qaic::rt {

// What `numActivations` activations of program `programIndex` of `qpc` need: its NSPs, multicast
// ids and semaphores each, one virtual channel each, and DDR for the IO region plus the constants
// each (the same rule the device charges an activation by). A multi-device program needs this on
// each of its cards: every field the largest any of its device parts needs. Throws
// Error(QS_INVAL) for zero activations, a program index out of range or a total that overflows.
ResourceRequest resourcesFor(const Qpc& qpc, uint32_t numActivations, uint32_t programIndex = 0);

class Partition {
 public:
  // Asks qaicd (socket: $QAICD_SOCKET, or /run/qaic/qaicd.sock) for a partition holding
  // `request` on `device` (absent: the first device with room), labelled `label` (printable
  // ASCII, at most 31 bytes; shown by qaic-util). Throws Error:
  //   QS_NO_RESOURCES  the device lacks a resource; the message names it
  //                    ("numNsp: 9 requested, 8 free")
  //   QS_NODEV         qaicd is not running ("qaicd is not running (socket PATH)"), or no such
  //                    device
  //   QS_INVAL         a request qaicd refuses as malformed (no NSP, no VC, a bad label)
  //   QS_TIMEDOUT      qaicd did not answer within 10 s
  //   QS_ERROR         anything else, with qaicd's message
  static std::shared_ptr<Partition> acquire(const ResourceRequest& request, std::optional<QID> device = std::nullopt,
                                            const std::string& label = {});
  // Releases the partition (waiting for qaicd's answer, at most 10 s), so its device node is
  // gone when this returns. Activations still running in it end with QS_DEV_REMOVED.
  ~Partition();
  Partition(const Partition&) = delete;
  Partition& operator=(const Partition&) = delete;

  QID id() const;                            // the derived device: pass it to Context::Factory
  QID parent() const;                        // the device it was carved from
  const ResourceRequest& resources() const;  // what it holds
  const std::string& label() const;
  const std::string& node() const;  // absolute path of its device node

 private:
  struct Impl;
  explicit Partition(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace qaic::rt
