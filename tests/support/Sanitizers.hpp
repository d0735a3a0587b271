// Whether this build is instrumented by a sanitizer. The whole build is instrumented alike, so a
// test also knows how the emulator and tools it starts were built. Tests use it to account for
// what a sanitizer itself costs (shadow memory, quarantine, allocator caches), never to skip.
#pragma once

namespace qaic::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#else
inline constexpr bool kThreadSanitizer = false;
#endif

inline constexpr bool kUnderSanitizer = kAddressSanitizer || kThreadSanitizer;

}  // namespace qaic::testing
