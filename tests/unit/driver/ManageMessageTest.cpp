// SPDX-License-Identifier: Apache-2.0
#include "driver/ManageMessage.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace qaic::driver {
namespace {

template <typename T>
T at(const ManageBuffer& buffer, std::size_t offset) {
  T value;
  std::memcpy(&value, buffer.data() + offset, sizeof value);
  return value;
}

template <typename T>
void put(std::vector<std::byte>& bytes, const T& value) {
  const auto* raw = reinterpret_cast<const std::byte*>(&value);
  bytes.insert(bytes.end(), raw, raw + sizeof value);
}

template <typename T>
std::vector<std::byte> bytesOf(const T& value) {
  std::vector<std::byte> bytes;
  put(bytes, value);
  return bytes;
}

TEST(ManageMessageBuilder, LaysOutTransactionsBackToBack) {
  ManageMessageBuilder builder;
  builder.status().activate(64, 9, makeActivateOptions(5, 1)).deactivate(3).dmaTransfer(5, 0x1000, 77);
  const ManageBuffer& b = builder.buffer();
  EXPECT_EQ(b.count, 4u);
  EXPECT_EQ(b.len, 8u + 24u + 16u + 32u);

  const auto status = at<qaic_manage_trans_status_to_dev>(b, 0);
  EXPECT_EQ(status.hdr.type, QAIC_TRANS_STATUS_FROM_USR);
  EXPECT_EQ(status.hdr.len, 8u);

  const auto activate = at<qaic_manage_trans_activate_to_dev>(b, 8);
  EXPECT_EQ(activate.hdr.type, QAIC_TRANS_ACTIVATE_FROM_USR);
  EXPECT_EQ(activate.hdr.len, 24u);
  EXPECT_EQ(activate.queue_size, 64u);
  EXPECT_EQ(activate.eventfd, 9u);
  EXPECT_EQ(activateLoadId(activate.options), 5u);
  EXPECT_EQ(activateProgramIndex(activate.options), 1u);
  EXPECT_EQ(activate.pad, 0u);

  const auto deactivate = at<qaic_manage_trans_deactivate>(b, 32);
  EXPECT_EQ(deactivate.hdr.type, QAIC_TRANS_DEACTIVATE_FROM_USR);
  EXPECT_EQ(deactivate.dbc_id, 3u);

  const auto dma = at<qaic_manage_trans_dma_xfer>(b, 48);
  EXPECT_EQ(dma.hdr.type, QAIC_TRANS_DMA_XFER_FROM_USR);
  EXPECT_EQ(dma.tag, 5u);
  EXPECT_EQ(dma.addr, 0x1000u);
  EXPECT_EQ(dma.size, 77u);
}

TEST(ManageMessageBuilder, PassthroughCarriesResourceGroupPayload) {
  ResourceGroupRequest request{kResourceGroupMagic,
                               kResourceGroupVersion,
                               static_cast<uint32_t>(ResourceGroupOp::Reserve),
                               0,
                               4,
                               1,
                               8,
                               1,
                               1 << 20};
  ManageMessageBuilder builder;
  builder.resourceGroup(request);
  const ManageBuffer& b = builder.buffer();
  ASSERT_EQ(b.len, 8u + sizeof request);
  const auto hdr = at<qaic_manage_trans_hdr>(b, 0);
  EXPECT_EQ(hdr.type, QAIC_TRANS_PASSTHROUGH_FROM_USR);
  EXPECT_EQ(hdr.len, b.len);
  const auto payload = at<ResourceGroupRequest>(b, 8);
  EXPECT_EQ(payload.resources.numNsp, 4u);
  EXPECT_EQ(payload.resources.ddrSize, 1u << 20);
}

TEST(ManageMessageBuilder, RefusesToExceedFourKiBNamingTheTransaction) {
  ManageMessageBuilder builder;
  std::vector<std::byte> payload(QAIC_MANAGE_MAX_MSG_LENGTH - 8 - 8);
  builder.passthrough(payload).status();  // exactly 4096 bytes
  EXPECT_EQ(builder.buffer().len, QAIC_MANAGE_MAX_MSG_LENGTH);
  try {
    builder.deactivate(0);
    FAIL() << "a 4112-byte message was accepted";
  } catch (const ManageMessageError& e) {
    EXPECT_NE(std::string(e.what()).find("deactivate"), std::string::npos) << e.what();
  }
  EXPECT_EQ(builder.buffer().count, 2u) << "a refused transaction must not be half-added";
}

TEST(ManageReply, ParsesEveryReplyType) {
  std::vector<std::byte> bytes;
  put(bytes, qaic_manage_trans_activate_from_dev{{QAIC_TRANS_ACTIVATE_FROM_DEV, 24}, 0, 7, 0});
  put(bytes, qaic_manage_trans_deactivate{{QAIC_TRANS_DEACTIVATE_FROM_DEV, 16}, 7, 0});
  put(bytes, qaic_manage_trans_status_from_dev{{QAIC_TRANS_STATUS_TO_USR, 24}, 5, 0, 0, QAIC_STATUS_FLAG_CRC_REQUIRED});
  ResourceGroupResponse group{kResourceGroupMagic, kResourceGroupVersion, -ENOSPC, 0, 0, 0, 0, 0, 0};
  put(bytes, qaic_manage_trans_hdr{QAIC_TRANS_PASSTHROUGH_TO_USR, 8 + sizeof group});
  put(bytes, group);

  const auto replies = parseManageReply(bytes, 4);
  ASSERT_EQ(replies.size(), 4u);
  EXPECT_EQ(std::get<ActivateReply>(replies[0]).dbcId, 7u);
  EXPECT_EQ(std::get<DeactivateReply>(replies[1]).dbcId, 7u);
  EXPECT_EQ(std::get<StatusReply>(replies[2]).major, 5u);
  EXPECT_EQ(std::get<StatusReply>(replies[2]).flags, QAIC_STATUS_FLAG_CRC_REQUIRED);
  const auto answer = std::get<PassthroughReply>(replies[3]).resourceGroup();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, -ENOSPC);
}

void expectRejected(const std::vector<std::byte>& bytes, uint32_t count, const std::string& needle) {
  try {
    parseManageReply(bytes, count);
    FAIL() << "accepted; expected an error mentioning '" << needle << "'";
  } catch (const ManageMessageError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ManageReply, RejectsMalformedReplies) {
  expectRejected(bytesOf(uint32_t{QAIC_TRANS_ACTIVATE_FROM_DEV}), 1, "transaction 0");
  expectRejected(bytesOf(qaic_manage_trans_hdr{QAIC_TRANS_STATUS_TO_USR, 4}), 1, "len 4");
  expectRejected(bytesOf(qaic_manage_trans_hdr{QAIC_TRANS_PASSTHROUGH_TO_USR, 4000}), 1, "len 4000");
  expectRejected(bytesOf(qaic_manage_trans_deactivate{{QAIC_TRANS_ACTIVATE_FROM_DEV, 16}, 1, 0}), 1, "len 16 != 24");
  expectRejected(bytesOf(qaic_manage_trans_deactivate{{QAIC_TRANS_DEACTIVATE_FROM_USR, 16}, 1, 0}), 1, "type 10");
  expectRejected(bytesOf(qaic_manage_trans_deactivate{{QAIC_TRANS_DEACTIVATE_FROM_DEV, 16}, 1, 0}), 2, "transaction 1");
  auto trailing = bytesOf(qaic_manage_trans_deactivate{{QAIC_TRANS_DEACTIVATE_FROM_DEV, 16}, 1, 0});
  put(trailing, uint64_t{0});
  expectRejected(trailing, 1, "8 bytes after");
}

TEST(ManageReply, ResourceGroupNeedsMagicVersionAndSize) {
  PassthroughReply reply;
  ResourceGroupResponse r{kResourceGroupMagic + 1, kResourceGroupVersion, 0, 1, 1, 0, 0, 0, 0};
  reply.data.assign(reinterpret_cast<std::byte*>(&r), reinterpret_cast<std::byte*>(&r) + sizeof r);
  EXPECT_FALSE(reply.resourceGroup().has_value());
  r.magic = kResourceGroupMagic;
  std::memcpy(reply.data.data(), &r, sizeof r);
  EXPECT_TRUE(reply.resourceGroup().has_value());
  reply.data.pop_back();
  EXPECT_FALSE(reply.resourceGroup().has_value());
}

TEST(ManageMessageBuilder, PeerGroupMembershipPrecedesItsActivate) {
  PeerGroupRequest request{};
  request.magic = kPeerGroupMagic;
  request.version = kPeerGroupVersion;
  request.token = 0x1234567890ull;
  request.part = 1;
  request.parts = 4;
  ManageMessageBuilder builder;
  builder.peerGroup(request).activate(16, 0, makeActivateOptions(3, 0));
  const ManageBuffer& b = builder.buffer();
  EXPECT_EQ(b.count, 2u);
  const auto hdr = at<qaic_manage_trans_hdr>(b, 0);
  EXPECT_EQ(hdr.type, QAIC_TRANS_PASSTHROUGH_FROM_USR);
  ASSERT_EQ(hdr.len, 8u + sizeof request);
  EXPECT_EQ(hdr.len % 8, 0u) << "mainline passes whole 8-byte words only";
  const auto payload = at<PeerGroupRequest>(b, 8);
  EXPECT_EQ(payload.token, 0x1234567890ull);
  EXPECT_EQ(payload.part, 1u);
  EXPECT_EQ(payload.parts, 4u);
  EXPECT_EQ(at<qaic_manage_trans_hdr>(b, hdr.len).type, QAIC_TRANS_ACTIVATE_FROM_USR);
}

TEST(ManageReply, PeerGroupAnswerNeedsMagicVersionAndSize) {
  PeerGroupResponse r{};
  r.magic = kPeerGroupMagic;
  r.version = kPeerGroupVersion + 1;
  r.status = -18;  // EXDEV
  PassthroughReply reply;
  reply.data.assign(reinterpret_cast<std::byte*>(&r), reinterpret_cast<std::byte*>(&r) + sizeof r);
  EXPECT_FALSE(reply.peerGroup().has_value());
  r.version = kPeerGroupVersion;
  std::memcpy(reply.data.data(), &r, sizeof r);
  ASSERT_TRUE(reply.peerGroup().has_value());
  EXPECT_EQ(reply.peerGroup()->status, -18);
  EXPECT_FALSE(reply.resourceGroup().has_value());
  reply.data.pop_back();
  EXPECT_FALSE(reply.peerGroup().has_value());
}

}  // namespace
}  // namespace qaic::driver
