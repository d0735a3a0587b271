// SPDX-License-Identifier: Apache-2.0
// Seed 000's batch JSON examples, shared by qaic-runner's batch JSON reader test and its
// end-to-end test on a device (the same text must parse and run).
#pragma once

namespace qaic::testing {

// The "Regular Network" (in0, in1, out): two IO sets whose entries come in different orders,
// data-type and elem-size used interchangeably; files input0.raw, input1.raw and output.raw.
inline constexpr const char* kRegularNetworkBatchJson = R"({"IO-files": [
    [ { "path":"output.raw", "elem-size": 4, "io-direction":"out", "map-to":"out" },
      { "path":"input0.raw", "data-type": "float", "io-direction":"in", "map-to":"in0" },
      { "path":"input1.raw", "data-type": "int", "io-direction":"in", "map-to":"in1" } ],
    [ { "path":"input1.raw", "data-type": "int", "io-direction":"in", "map-to":"in1" },
      { "path":"output.raw", "elem-size": 4, "io-direction":"out", "map-to":"out" },
      { "path":"input0.raw", "data-type": "float", "io-direction":"in", "map-to":"in0" } ]
  ]})";

}  // namespace qaic::testing
