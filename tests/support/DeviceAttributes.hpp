// SPDX-License-Identifier: Apache-2.0
// Test helper: a device's sysfs attributes, read as the tests check what a device publishes
// (its state, the emulator's pid and resources): the names from their one definition
// (driver::sysfs, SysfsNames.hpp) and the reader the runtime and the tools use (SysfsDevice), so
// that a test reads an attribute exactly as the product does.
#pragma once

#include "driver/SysfsDevice.hpp"
#include "driver/SysfsNames.hpp"
