// SPDX-License-Identifier: Apache-2.0
// Test helper: descriptors a test opens itself (sockets, pipes) held by the product's one owner
// of a descriptor (qaic::UniqueFd), so that they are closed when an ASSERT ends the test early.
#pragma once

#include "base/UniqueFd.hpp"
