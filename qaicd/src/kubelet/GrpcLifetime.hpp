// SPDX-License-Identifier: Apache-2.0
// gRPC is initialized once, by the first user in the process, and stays so until the process
// exits. Left to itself, gRPC 1.51 shuts down whenever its last object (server, channel) is
// destroyed, and that shutdown joins its executor thread, which may sit up to 10 s in an epoll
// wait first: a plugin server restarting after a kubelet restart, or qaicd stopping on
// SIGTERM, would stall that long. gRPC's own threads then end with the process; the project's
// threads are all joined before it exits.
#pragma once

namespace qaic::qaicd {

void keepGrpcInitialized();

}  // namespace qaic::qaicd
