// SPDX-License-Identifier: Apache-2.0
// gtest assertions on qaic::Result (libqaic/base): EXPECT_TRUE(failsWith(node.mmapBo(12345),
// ENOENT)).
#pragma once

#include <gtest/gtest.h>

#include <cstring>

#include "base/Result.hpp"

namespace qaic::testing {

// Whether `result` failed with errno `expected`; the failure names what happened instead.
template <typename T>
::testing::AssertionResult failsWith(const Result<T>& result, int expected) {
  if (result) return ::testing::AssertionFailure() << "succeeded; expected " << strerrorname_np(expected);
  if (result.error() != expected)
    return ::testing::AssertionFailure() << result.message() << " (" << strerrorname_np(result.error())
                                         << "); expected " << strerrorname_np(expected);
  return ::testing::AssertionSuccess();
}

}  // namespace qaic::testing
