// SPDX-License-Identifier: Apache-2.0
#include "driver/RequestElements.hpp"

namespace qaic::driver {

RequestElement sliceRequestElement(uint16_t reqId, uint32_t boHandle, uint32_t dir,
                                   const qaic_attach_slice_entry& slice, bool last) {
  RequestElement e{};
  e.reqId = reqId;
  const uint64_t host = makeIova(boHandle, static_cast<uint32_t>(slice.offset));
  if (dir == QAIC_DIR_TO_DEVICE) {
    e.cmd = kReqCmdToDevice;
    e.srcAddr = host;
    e.dstAddr = slice.dev_addr;
  } else {
    e.cmd = kReqCmdFromDevice;
    e.srcAddr = slice.dev_addr;
    e.dstAddr = host;
  }
  if (last) e.cmd |= kReqCmdCompletion;
  e.length = static_cast<uint32_t>(slice.size);
  e.dbAddr = slice.db_addr;
  e.dbLen = static_cast<uint8_t>(slice.db_len);
  e.dbData = slice.db_data;
  e.semCmd[0] = encodeSem(slice.sem0);
  e.semCmd[1] = encodeSem(slice.sem1);
  e.semCmd[2] = encodeSem(slice.sem2);
  e.semCmd[3] = encodeSem(slice.sem3);
  return e;
}

}  // namespace qaic::driver
