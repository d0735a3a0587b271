// SPDX-License-Identifier: Apache-2.0
// The vendor's IO descriptor (aicapi.IoDesc of QAicApi.proto in this folder) for a container, as
// code written for the card reads it (efficient-transformers' session, the vendor's qaicrt):
// one set named "default" of every binding, retained-state ones included, also given as the
// selected set, and one allowed_shapes entry per specialization. Built on first use; the public
// header sees only VendorIoBinding and the serialized bytes, never a protobuf type.
#pragma once

#include <qaic/Qpc.hpp>

#include <string>
#include <vector>

#include "container/QpcImage.hpp"

namespace qaic::rt {

// The vendor's bufferIoDataTypeEnum code for a runtime element type: the same code for the
// types 0 to 8, UINT8_Q_TYPE for plain uint8 (and bool, exchanged as one byte), TYPE_INVALID
// (255) for what the vendor cannot describe (complex float64, invalid).
int vendorDataTypeCode(QAicBufferDataTypeEnum type);

// The bindings in the descriptor's order (see VendorIoBinding).
std::vector<VendorIoBinding> vendorIoBindings(const container::QpcImage& image);

// The serialized aicapi.IoDesc of those bindings for the program `programName`.
std::string serializeVendorIoDesc(const std::vector<VendorIoBinding>& bindings, const std::string& programName);

}  // namespace qaic::rt
