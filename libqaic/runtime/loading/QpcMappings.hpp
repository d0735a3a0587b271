// SPDX-License-Identifier: Apache-2.0
// Translation of the container's IO descriptor and programs into the public seed 001 types.
#pragma once

#include <qaic/Qpc.hpp>

#include "container/QpcImage.hpp"

namespace qaic::rt {

BufferMapping toBufferMapping(const container::QpcBuffer& buffer);
BufferMappings toBufferMappings(const container::QpcImage& image);
// Each buffer as the device's DMA moves it: the device format's element type and bytes.
BufferMapping toDmaBufferMapping(const container::QpcBuffer& buffer);
BufferMappings toDmaBufferMappings(const container::QpcImage& image);
v2::BufferMappings toBufferMappingsV2(const container::QpcImage& image);
QpcInfo toQpcInfo(const container::QpcImage& image);

}  // namespace qaic::rt
