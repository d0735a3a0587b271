// SPDX-License-Identifier: Apache-2.0
// Partition: a qaicd lease. The QaicdClient connection is the lease itself (qaicd removes the
// partition when it closes), so the object keeps it open and releases explicitly on destruction
// to make the removal synchronous.
#include <qaic/Partition.hpp>

#include <cerrno>

#include "qaicd/QaicdClient.hpp"

namespace qaic::rt {

struct Partition::Impl {
  qaicd::QaicdClient client;
  qaicd::PartitionInfo info;
  ResourceRequest resources;
};

namespace {

QStatus statusForRefusal(int error) {
  switch (error) {
    case ENOSPC: return QS_NO_RESOURCES;
    case ENODEV:
    case ENOENT: return QS_NODEV;
    case EINVAL: return QS_INVAL;
    case ETIMEDOUT: return QS_TIMEDOUT;
    default: return QS_ERROR;
  }
}

}  // namespace

std::shared_ptr<Partition> Partition::acquire(const ResourceRequest& request, std::optional<QID> device,
                                              const std::string& label) {
  const std::string socket = qaicd::defaultQaicdSocket();
  auto client = qaicd::QaicdClient::connect(socket);
  if (!client) {
    if (client.error() == ENOENT || client.error() == ECONNREFUSED)
      throw Error(QS_NODEV, "qaicd is not running (socket " + socket + ")");
    throw Error(client.error() == ETIMEDOUT ? QS_TIMEDOUT : QS_ERROR,
                "cannot reach qaicd (socket " + socket + "): " + client.message());
  }
  auto created = client->createPartition(request, device, label);
  if (!created)
    throw Error(
        statusForRefusal(created.error()),
        "partition" + (device ? " on device " + std::to_string(*device) : std::string()) + ": " + created.message());
  const ResourceRequest resources = created->resources;
  return std::shared_ptr<Partition>(
      new Partition(std::make_unique<Impl>(Impl{std::move(*client), std::move(*created), resources})));
}

Partition::Partition(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Partition::~Partition() {
  // Best effort: should qaicd not answer, closing the connection below still ends the lease.
  (void)impl_->client.release(impl_->info.id);
}

QID Partition::id() const { return impl_->info.id; }
QID Partition::parent() const { return impl_->info.device; }
const ResourceRequest& Partition::resources() const { return impl_->resources; }
const std::string& Partition::label() const { return impl_->info.label; }
const std::string& Partition::node() const { return impl_->info.node; }

}  // namespace qaic::rt
