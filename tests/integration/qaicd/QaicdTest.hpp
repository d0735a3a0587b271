// SPDX-License-Identifier: Apache-2.0
// The qaicd suite's fixture is the test support's emulator + qaicd fixture (QaicdFixture.hpp),
// under the suite name its tests have always had.
#pragma once

#include "QaicdFixture.hpp"

namespace qaic::qaicd::test {

using QaicdTest = testing::QaicdFixture;
using testing::kDeviceNsps;
using testing::kDeviceVcs;

}  // namespace qaic::qaicd::test
