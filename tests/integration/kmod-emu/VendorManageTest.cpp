// SPDX-License-Identifier: Apache-2.0
// MANAGE in the vendor's firmware protocol (driver/VendorManage.hpp), framed as its open
// userspace frames it: the status query against the device's own figures, the image load,
// activation, deactivation and unload, the refusals in the firmware's status and the transport
// errors that stay EINVAL.
#include <unistd.h>

#include <array>
#include <cstring>
#include <string>

#include "DeviceAttributes.hpp"
#include "DeviceClient.hpp"
#include "EmuTest.hpp"
#include "ReluProgram.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;
namespace vendor = qaic::driver::vendor;
using vendor::Command;
using vendor::FirmwareStatus;

// A MANAGE message built transaction by transaction, sent, and its answer read back.
class VendorMessage {
 public:
  // A vendor command as its userspace lays it out: transaction header, then the request over
  // an 8-byte command header, the transaction's length counting both.
  template <typename Request>
  VendorMessage& command(const Request& request) {
    const qaic_manage_trans_hdr hdr{QAIC_TRANS_PASSTHROUGH_FROM_USR, static_cast<uint32_t>(16 + sizeof request)};
    put(hdr, len_);
    put(request, len_ + sizeof hdr);
    len_ += hdr.len;
    ++count_;
    return *this;
  }
  template <typename Transaction>
  VendorMessage& transaction(const Transaction& t) {
    put(t, len_);
    len_ += t.hdr.len;
    ++count_;
    return *this;
  }
  // 0 or the ioctl's errno; the answer's length and count in len()/count().
  int send(const DeviceNode& node) {
    qaic_manage_msg msg{len_, count_, reinterpret_cast<uintptr_t>(buffer_.data())};
    auto r = node.rawIoctl(DRM_IOCTL_QAIC_MANAGE, &msg, "MANAGE");
    if (!r) return r.error();
    len_ = msg.len;
    count_ = msg.count;
    return 0;
  }
  uint32_t len() const { return len_; }
  uint32_t count() const { return count_; }
  template <typename T>
  T at(std::size_t offset) const {
    T v{};
    std::memcpy(&v, buffer_.data() + offset, sizeof v);
    return v;
  }
  qaic_manage_trans_hdr header(std::size_t offset = 0) const { return at<qaic_manage_trans_hdr>(offset); }
  // The reply of the first transaction: its payload after the transaction header.
  template <typename Reply>
  Reply reply() const {
    return at<Reply>(sizeof(qaic_manage_trans_hdr));
  }

 private:
  template <typename T>
  void put(const T& v, std::size_t offset) {
    std::memcpy(buffer_.data() + offset, &v, sizeof v);
  }
  std::vector<std::byte> buffer_ = std::vector<std::byte>(QAIC_MANAGE_MAX_MSG_LENGTH);
  uint32_t len_ = 0;
  uint32_t count_ = 0;
};

vendor::StatusReply vendorStatus(const DeviceNode& node) {
  VendorMessage m;
  m.command(vendor::StatusRequest{static_cast<uint32_t>(Command::Status), 0, {}});
  if (int err = m.send(node)) throw std::runtime_error("vendor status: " + std::string(std::strerror(err)));
  EXPECT_EQ(m.count(), 1u);
  EXPECT_EQ(m.header().type, QAIC_TRANS_PASSTHROUGH_TO_USR);
  EXPECT_EQ(m.header().len, 8 + sizeof(vendor::StatusReply));
  EXPECT_EQ(m.len(), 8 + sizeof(vendor::StatusReply));
  return m.reply<vendor::StatusReply>();
}

// The resources of the vendor's reply against our own report of the same node.
void expectSameFigures(const vendor::StatusReply& v, const DeviceStatusResponse& own) {
  const vendor::ResourceInfo& r = v.device.resources;
  EXPECT_EQ(r.nspTotal, own.nspTotal);
  EXPECT_EQ(r.nspFree, own.nspFree);
  EXPECT_EQ(r.vcTotal, own.vcTotal);
  EXPECT_EQ(r.vcFree, own.vcFree);
  EXPECT_EQ(r.mcidTotal, own.mcidTotal);
  EXPECT_EQ(r.mcidFree, own.mcidFree);
  EXPECT_EQ(r.semTotal, own.semTotal);
  EXPECT_EQ(r.semFree, own.semFree);
  EXPECT_EQ(r.dramTotalMb, own.ddrTotalBytes >> 20);
  EXPECT_EQ(r.dramFreeMb, own.ddrFreeBytes >> 20);
  EXPECT_EQ(v.device.networksLoaded, own.networksLoaded);
  EXPECT_EQ(v.device.networksActive, own.networksActive);
  EXPECT_EQ(v.device.constantsLoaded, own.constantsLoaded);
  EXPECT_EQ(v.device.constantsInUse, own.constantsInUse);
  EXPECT_EQ(v.device.performance.nspHz, own.nspFrequencyMhz * 1000000u);
}

vendor::LoadElfRequest loadRequest(uint64_t length, uint32_t tag = 100) {
  vendor::LoadElfRequest r{};
  r.type = static_cast<uint32_t>(Command::LoadElf);
  r.tag = tag;
  r.processId = static_cast<uint32_t>(::getpid());
  std::strncpy(r.name, "relu", sizeof r.name - 1);
  r.length = length;
  return r;
}
qaic_manage_trans_dma_xfer imageTransfer(std::span<const std::byte> image, uint32_t tag = 100) {
  // The vendor's `pad` word is a count, 1.
  return {{QAIC_TRANS_DMA_XFER_FROM_USR, sizeof(qaic_manage_trans_dma_xfer)},
          tag,
          1,
          reinterpret_cast<uintptr_t>(image.data()),
          image.size()};
}
vendor::ActivateRequest activateRequest(uint32_t elfId) {
  vendor::ActivateRequest r{};
  r.type = static_cast<uint32_t>(Command::Activate);
  r.processId = static_cast<uint32_t>(::getpid());
  r.elfId = elfId;
  r.resourceReservationId = -1;
  r.vcReservationId = -1;
  r.vcSetup = 1;
  return r;
}
qaic_manage_trans_activate_to_dev vcSetup(uint32_t queueSize = 16) {
  return {{QAIC_TRANS_ACTIVATE_FROM_USR, sizeof(qaic_manage_trans_activate_to_dev)}, queueSize, 0, 0, 0};
}

// Loads `image` as the vendor's userspace does: the elf id, or 0 with the reply's status.
uint32_t vendorLoad(const DeviceNode& node, std::span<const std::byte> image, int32_t& status) {
  VendorMessage m;
  m.command(loadRequest(image.size())).transaction(imageTransfer(image));
  if (int err = m.send(node)) throw std::runtime_error("vendor load: " + std::string(std::strerror(err)));
  EXPECT_EQ(m.count(), 1u) << "the DMA transfer has no answer";
  const auto reply = m.reply<vendor::LoadReply>();
  EXPECT_EQ(reply.type, static_cast<uint32_t>(Command::LoadElfReply));
  status = reply.status;
  return reply.id;
}

TEST_F(EmuTest, VendorStatusCarriesTheDevicesFigures) {
  auto node = openNode();
  const uint32_t dbc = activateRelu(node);
  const auto v = vendorStatus(node);
  EXPECT_EQ(v.type, static_cast<uint32_t>(Command::StatusReply));
  EXPECT_EQ(v.status, 0);
  EXPECT_EQ(v.formatVersion, vendor::kDeviceInfoFormatVersion);
  EXPECT_EQ(v.device.protocolMajor, 17u);
  EXPECT_EQ(v.device.protocolMinor, 0u);
  auto own = queryDeviceStatus(node);
  ASSERT_TRUE(own) << own.message();
  expectSameFigures(v, *own);
  EXPECT_EQ(v.device.resources.nspTotal, kTestNsps);
  EXPECT_LT(v.device.resources.nspFree, kTestNsps) << "relu is active on DBC " << dbc;
  EXPECT_EQ(v.device.networksActive, 1u);
  // Identity: the fields qaic-util -q prints, against the device's attributes.
  auto text = [&](const char* name) {
    auto value = sysfs().read(name);
    return value ? *value : std::string("(unreadable)");
  };
  const std::string fw = text(sysfs::kEmuFwVersion);
  EXPECT_EQ(std::to_string(v.device.fwMajor) + "." + std::to_string(v.device.fwMinor) + "." +
                std::to_string(v.device.fwPatch) + "." + std::to_string(v.device.fwBuild),
            fw);
  EXPECT_EQ(std::string(v.device.serial), text(sysfs::kEmuSerial));
  EXPECT_EQ(std::string(v.device.boardSerial), text(sysfs::kEmuBoardSerial));
  EXPECT_EQ(std::string(v.device.fwQcImageVersion), "QSM.AIC." + fw);
  EXPECT_EQ(std::string(v.nsp.qcImageVersion), "QNSP.AIC." + fw);
  EXPECT_EQ(v.device.hwVersion, 2u << 28 | 1u << 16) << "hw_version 2.1.0";
  EXPECT_EQ(v.device.skuType, static_cast<uint8_t>(vendor::SkuType::Pcie)) << text(sysfs::kEmuSku);
}

TEST_F(EmuTest, VendorStatusOnAPartitionReportsThePartition) {
  auto parent = openNode();
  PartitionRequest create{};
  create.magic = kPartitionMagic;
  create.version = kPartitionVersion;
  create.op = static_cast<uint32_t>(PartitionOp::Create);
  create.resources = {2, 0, kSemaphoresPerDbc, 1, 256ull << 20};
  create.ownerUid = ::getuid();
  create.ownerGid = ::getgid();
  create.mode = 0600;
  auto p = partitionCommand(parent, create);
  ASSERT_TRUE(p) << p.message();
  ASSERT_EQ(p->status, 0);
  auto inside = DeviceNode::open(root(), p->partitionId);
  ASSERT_TRUE(inside) << inside.message();
  const auto v = vendorStatus(*inside);
  EXPECT_EQ(v.status, 0);
  EXPECT_EQ(v.device.resources.nspTotal, 2u);
  EXPECT_EQ(v.device.resources.vcTotal, 1u);
  EXPECT_EQ(v.device.resources.dramTotalMb, 256u);
  auto own = queryDeviceStatus(*inside);
  ASSERT_TRUE(own) << own.message();
  expectSameFigures(v, *own);
}

TEST_F(EmuTest, VendorLoadActivateDeactivateUnload) {
  auto node = openNode();
  int32_t status = -1;
  const uint32_t elf = vendorLoad(node, relu_, status);
  ASSERT_EQ(status, 0);
  ASSERT_NE(elf, 0u);
  EXPECT_EQ(attribute(sysfs::kEmuNetworksLoaded), 1u);

  VendorMessage activate;
  activate.command(activateRequest(elf)).transaction(vcSetup());
  ASSERT_EQ(activate.send(node), 0);
  ASSERT_EQ(activate.count(), 2u) << "the command's reply and the DBC's";
  const auto reply = activate.reply<vendor::ActivateReply>();
  EXPECT_EQ(reply.type, static_cast<uint32_t>(Command::ActivateReply));
  ASSERT_EQ(reply.status, 0);
  EXPECT_NE(reply.activationId, 0u);
  const std::size_t second = 8 + sizeof(vendor::ActivateReply);
  EXPECT_EQ(activate.header(second).type, QAIC_TRANS_ACTIVATE_FROM_DEV);
  const auto dbc = activate.at<qaic_manage_trans_activate_from_dev>(second);
  EXPECT_EQ(dbc.status, 0u);
  EXPECT_EQ(dbc.dbc_id, reply.virtualChannelId);
  EXPECT_EQ(attribute(sysfs::kEmuNetworksActive), 1u);
  EXPECT_LT(attribute(sysfs::kEmuNspFree), kTestNsps);

  // The vendor's userspace deactivates with the activation id and the DBC.
  vendor::DeactivateRequest off{static_cast<uint32_t>(Command::Deactivate), reply.activationId, 1, 0};
  VendorMessage deactivate;
  deactivate.command(off).transaction(qaic_manage_trans_deactivate{
      {QAIC_TRANS_DEACTIVATE_FROM_USR, sizeof(qaic_manage_trans_deactivate)}, dbc.dbc_id, 0});
  ASSERT_EQ(deactivate.send(node), 0);
  ASSERT_EQ(deactivate.count(), 2u);
  EXPECT_EQ(deactivate.reply<vendor::StatusOnlyReply>().type, static_cast<uint32_t>(Command::DeactivateReply));
  EXPECT_EQ(deactivate.reply<vendor::StatusOnlyReply>().status, 0);
  EXPECT_EQ(deactivate.header(16).type, QAIC_TRANS_DEACTIVATE_FROM_DEV);
  EXPECT_EQ(attribute(sysfs::kEmuNetworksActive), 0u);
  EXPECT_EQ(attribute(sysfs::kEmuNspFree), kTestNsps);
  // Again: nothing left to deactivate.
  VendorMessage again;
  again.command(off).transaction(qaic_manage_trans_deactivate{
      {QAIC_TRANS_DEACTIVATE_FROM_USR, sizeof(qaic_manage_trans_deactivate)}, dbc.dbc_id, 0});
  ASSERT_EQ(again.send(node), 0);
  EXPECT_EQ(again.reply<vendor::StatusOnlyReply>().status, static_cast<int32_t>(FirmwareStatus::NoNetworkToDeactivate));

  auto unload = [&] {
    VendorMessage m;
    m.command(vendor::UnloadRequest{static_cast<uint32_t>(Command::UnloadElf), elf});
    EXPECT_EQ(m.send(node), 0);
    EXPECT_EQ(m.reply<vendor::StatusOnlyReply>().type, static_cast<uint32_t>(Command::UnloadElfReply));
    return m.reply<vendor::StatusOnlyReply>().status;
  };
  EXPECT_EQ(unload(), 0);
  EXPECT_EQ(attribute(sysfs::kEmuNetworksLoaded), 0u);
  EXPECT_EQ(unload(), static_cast<int32_t>(FirmwareStatus::ResourceNotFound));
}

TEST_F(EmuTest, VendorActivationsTheFirmwareCannotHonourGetItsStatus) {
  auto node = openNode();
  auto activateStatus = [&](const vendor::ActivateRequest& request) {
    VendorMessage m;
    m.command(request).transaction(vcSetup());
    EXPECT_EQ(m.send(node), 0);
    EXPECT_EQ(m.count(), 1u) << "no DBC answer without an activation";
    EXPECT_EQ(m.reply<vendor::ActivateReply>().type, static_cast<uint32_t>(Command::ActivateReply));
    EXPECT_EQ(m.reply<vendor::ActivateReply>().activationId, 0u);
    return m.reply<vendor::ActivateReply>().status;
  };
  EXPECT_EQ(activateStatus(activateRequest(1234)), static_cast<int32_t>(FirmwareStatus::ResourceNotFound));

  int32_t status = -1;
  std::vector<std::byte> corrupt = relu_;
  corrupt[corrupt.size() / 2] ^= std::byte{0x5a};
  const uint32_t bad = vendorLoad(node, corrupt, status);
  ASSERT_EQ(status, 0) << "the image is looked at when it is activated";
  EXPECT_EQ(activateStatus(activateRequest(bad)), static_cast<int32_t>(FirmwareStatus::MetadataError));

  const uint32_t elf = vendorLoad(node, relu_, status);
  ASSERT_EQ(status, 0);
  auto withConstants = activateRequest(elf);
  withConstants.constantsId = 7;
  EXPECT_EQ(activateStatus(withConstants), static_cast<int32_t>(FirmwareStatus::ResourceNotFound));
  auto deactivated = activateRequest(elf);
  deactivated.initialState = 2;
  EXPECT_EQ(activateStatus(deactivated), static_cast<int32_t>(FirmwareStatus::ParameterError));
  EXPECT_EQ(attribute(sysfs::kEmuNspFree), kTestNsps) << "a refused activation holds nothing";
}

TEST_F(EmuTest, UnimplementedVendorCommandsGetTheFirmwaresErrorStatus) {
  auto node = openNode();
  // A constants load: its reply's shape (16 bytes, status at byte 8), UNDEFINED_REQUEST.
  VendorMessage constants;
  std::array<uint32_t, 24> loadConstants{static_cast<uint32_t>(Command::LoadConstants)};
  constants.command(loadConstants);
  ASSERT_EQ(constants.send(node), 0);
  ASSERT_EQ(constants.count(), 1u);
  EXPECT_EQ(constants.header().len, 8u + 16u);
  const auto loadReply = constants.reply<vendor::LoadReply>();
  EXPECT_EQ(loadReply.type, static_cast<uint32_t>(Command::LoadConstantsReply));
  EXPECT_EQ(loadReply.status, static_cast<int32_t>(FirmwareStatus::UndefinedRequest));
  EXPECT_EQ(loadReply.id, 0u);

  for (uint32_t type : {static_cast<uint32_t>(Command::Terminate), static_cast<uint32_t>(Command::CreateResourceGroup),
                        static_cast<uint32_t>(Command::ReserveVc), 21u, 49u}) {
    VendorMessage m;
    std::array<uint32_t, 16> request{type};
    m.command(request);
    ASSERT_EQ(m.send(node), 0) << type;
    const auto r = m.reply<vendor::StatusOnlyReply>();
    const auto shape = vendor::replyShape(type);
    EXPECT_EQ(r.type, shape ? shape->type : 0u) << type;
    EXPECT_EQ(r.status, static_cast<int32_t>(FirmwareStatus::UndefinedRequest)) << type;
  }

  // A request shorter than its command: the firmware's length error.
  VendorMessage shortLoad;
  shortLoad.command(std::array<uint32_t, 2>{static_cast<uint32_t>(Command::LoadElf), 100});
  ASSERT_EQ(shortLoad.send(node), 0);
  EXPECT_EQ(shortLoad.reply<vendor::LoadReply>().status, static_cast<int32_t>(FirmwareStatus::CommandLengthError));

  // The device's own figures through the vendor's resource and performance queries.
  VendorMessage resources;
  resources.command(vendor::ResourceInfoRequest{static_cast<uint32_t>(Command::ResourceInfo), 0, -1, 0});
  ASSERT_EQ(resources.send(node), 0);
  const auto info = resources.reply<vendor::ResourceInfoReply>();
  EXPECT_EQ(info.type, static_cast<uint32_t>(Command::ResourceInfoReply));
  EXPECT_EQ(info.status, 0);
  EXPECT_EQ(info.resources.nspTotal, kTestNsps);
  EXPECT_EQ(info.resources.vcTotal, kTestDbcs);
}

TEST_F(EmuTest, MalformedVendorTransportIsEinval) {
  auto node = openNode();
  // A passthrough transaction that is not whole 8-byte words, as mainline's transport refuses.
  VendorMessage odd;
  odd.command(std::array<uint32_t, 1>{static_cast<uint32_t>(Command::Status)});
  EXPECT_EQ(odd.send(node), EINVAL);
  // A count beyond the transactions.
  VendorMessage status;
  status.command(vendor::StatusRequest{static_cast<uint32_t>(Command::Status), 0, {}});
  qaic_manage_msg msg{status.len(), 2, 0};
  std::vector<std::byte> copy(QAIC_MANAGE_MAX_MSG_LENGTH);
  const auto hdr = status.header();
  std::memcpy(copy.data(), &hdr, sizeof hdr);
  msg.data = reinterpret_cast<uintptr_t>(copy.data());
  auto r = node.rawIoctl(DRM_IOCTL_QAIC_MANAGE, &msg, "MANAGE");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), EINVAL);
  // An image transfer of no bytes.
  VendorMessage empty;
  empty.command(loadRequest(0)).transaction(imageTransfer(std::span<const std::byte>(relu_.data(), 0)));
  EXPECT_EQ(empty.send(node), EINVAL);
  // An image nobody can read.
  UnreadablePage page;
  VendorMessage unreadable;
  unreadable.command(loadRequest(4096))
      .transaction(imageTransfer(std::span(reinterpret_cast<const std::byte*>(page.address()), 4096)));
  EXPECT_EQ(unreadable.send(node), EFAULT);
  // An activation's DBC transaction with a queue the transport refuses.
  VendorMessage zeroQueue;
  zeroQueue.command(activateRequest(1)).transaction(vcSetup(0));
  EXPECT_EQ(zeroQueue.send(node), EINVAL) << "the driver checks the queue before the firmware the image";
  EXPECT_EQ(vendorStatus(node).status, 0) << "the device is fine after all of that";
}

}  // namespace
}  // namespace qaic::emu::test
