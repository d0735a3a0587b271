// SPDX-License-Identifier: Apache-2.0
// What Qpc::get() points to, for libqaic's own classes (Context, InferenceSet, ...): the
// validated container image. Not installed; applications only see the opaque declaration.
#pragma once

#include <qaic/Types.hpp>

#include "container/QpcImage.hpp"

namespace qaic::rt {

struct QAicQpcObj {
  const container::QpcImage* image = nullptr;
};

}  // namespace qaic::rt
