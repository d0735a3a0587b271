// SPDX-License-Identifier: Apache-2.0
// Whether this build is instrumented by a sanitizer. The whole build is instrumented alike, so a
// test also knows how the emulator and tools it starts were built. Tests use it to account for
// what a sanitizer itself costs (shadow memory, quarantine, allocator caches), never to skip.
#pragma once

namespace qaic::testing {

// GCC says so with __SANITIZE_*__, Clang with __has_feature (which GCC 12 lacks).
#if defined(__has_feature)
#define QAIC_TEST_HAS_FEATURE(name) __has_feature(name)
#else
#define QAIC_TEST_HAS_FEATURE(name) 0
#endif

#if defined(__SANITIZE_ADDRESS__) || QAIC_TEST_HAS_FEATURE(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#if defined(__SANITIZE_THREAD__) || QAIC_TEST_HAS_FEATURE(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#undef QAIC_TEST_HAS_FEATURE

inline constexpr bool kUnderSanitizer = kAddressSanitizer || kThreadSanitizer;

}  // namespace qaic::testing
