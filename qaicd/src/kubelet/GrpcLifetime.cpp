// SPDX-License-Identifier: Apache-2.0
#include "kubelet/GrpcLifetime.hpp"

#include <grpc/grpc.h>

namespace qaic::qaicd {

void keepGrpcInitialized() {
  // A function-local static: thread-safe and once per process. grpc_shutdown is never called.
  static const bool initialized = (grpc_init(), true);
  (void)initialized;
}

}  // namespace qaic::qaicd
