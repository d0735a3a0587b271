// SPDX-License-Identifier: Apache-2.0
// Test helper: the IR as the tests build, parse and inspect it: graphs (parse, load, infer
// shapes), the operator specifications (OpRegistry) and weights files written for a test's model
// or read back from a compile's output.
#pragma once

#include "ir/Graph.hpp"
#include "ir/OpRegistry.hpp"
#include "ir/Weights.hpp"
