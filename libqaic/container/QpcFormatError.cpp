// SPDX-License-Identifier: Apache-2.0
#include "container/QpcFormatError.hpp"

namespace qaic::container {

const char* qpcErrorCodeName(QpcErrorCode code) {
  switch (code) {
    case QpcErrorCode::Io: return "io";
    case QpcErrorCode::Truncated: return "truncated";
    case QpcErrorCode::BadMagic: return "bad-magic";
    case QpcErrorCode::BadVersion: return "bad-version";
    case QpcErrorCode::BadCrc: return "bad-crc";
    case QpcErrorCode::BadHeader: return "bad-header";
    case QpcErrorCode::OutOfRange: return "out-of-range";
    case QpcErrorCode::Overlap: return "overlap";
    case QpcErrorCode::AbsurdCount: return "absurd-count";
    case QpcErrorCode::BadString: return "bad-string";
    case QpcErrorCode::BadValue: return "bad-value";
  }
  return "unknown";
}

}  // namespace qaic::container
