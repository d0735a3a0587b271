// SPDX-License-Identifier: Apache-2.0
#include "driver/CompletionEvent.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

namespace qaic::driver {
namespace {

using namespace std::chrono_literals;

TEST(CompletionEvent, TimesOutWithoutSignal) {
  auto event = CompletionEvent::create();
  ASSERT_TRUE(event) << event.message();
  auto fired = event->wait(20ms);
  ASSERT_TRUE(fired) << fired.message();
  EXPECT_FALSE(*fired);
}

TEST(CompletionEvent, SignalIsSeenOnceAndConsumed) {
  auto event = CompletionEvent::create();
  ASSERT_TRUE(event);
  const uint64_t one = 1;
  ASSERT_EQ(::write(event->fd(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  ASSERT_EQ(::write(event->fd(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  auto fired = event->wait(1000ms);
  ASSERT_TRUE(fired);
  EXPECT_TRUE(*fired);
  auto again = event->wait(10ms);
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again) << "both writes are one wake-up, as with an MSI";
}

}  // namespace
}  // namespace qaic::driver
