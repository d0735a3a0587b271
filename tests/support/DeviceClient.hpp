// SPDX-License-Identifier: Apache-2.0
// Test helper: the uAPI client the tests drive an emulated device with. The emulator's tests
// (its uAPI conformance suite) speak to it through the same client library the runtime uses
// (libqaic/driver): the device node and its ioctls (DeviceNode, ManageCalls, DeviceProtocol and
// the vendor's firmware messages in VendorManage), buffer objects, DBC windows with their rings
// and completion events, and, for tests that play the device's side of a window, the response
// publisher the emulator writes answers with.
#pragma once

#include "DeviceAttributes.hpp"
#include "driver/BufferObject.hpp"
#include "driver/CompletionEvent.hpp"
#include "driver/DbcWindow.hpp"
#include "driver/DeviceNode.hpp"
#include "driver/DeviceProtocol.hpp"
#include "driver/DeviceRoot.hpp"
#include "driver/FutexRing.hpp"
#include "driver/ManageCalls.hpp"
#include "driver/RequestElements.hpp"
#include "driver/ResponsePublisher.hpp"
#include "driver/VendorManage.hpp"
