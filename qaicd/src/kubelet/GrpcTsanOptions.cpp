// SPDX-License-Identifier: Apache-2.0
// ThreadSanitizer's defaults for the programs that run gRPC (qaicd and the kubelet plugin's
// tests and benchmark); compiled only into a -fsanitize=thread build.
//
// Why: Debian's gRPC, Abseil and protobuf are not instrumented. gRPC hands buffers between its
// own threads under absl::Mutex and its own atomics, which ThreadSanitizer cannot see, so every
// malloc, free, memcpy and recvmsg those libraries make through TSan's interceptors looks like
// a race with the thread that touched the memory before (a minimal sync server and client show
// over a hundred such reports per run). `ignore_noninstrumented_modules=1` makes the
// interceptors stop checking calls made from uninstrumented libraries. Every access made by the
// project's own (instrumented) code is still checked, including code that gRPC's threads call
// into: a deliberate data race inside a DevicePlugin handler is still reported with this
// setting. A `called_from_lib:` suppression list was tried and rejected: it also silences
// every thread those libraries create, hiding races in our handlers. $TSAN_OPTIONS still
// overrides this.
#if defined(__SANITIZE_THREAD__)
#define QAIC_TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define QAIC_TSAN_BUILD 1
#endif
#endif

#ifdef QAIC_TSAN_BUILD
extern "C" const char* __tsan_default_options() { return "ignore_noninstrumented_modules=1"; }
#endif
