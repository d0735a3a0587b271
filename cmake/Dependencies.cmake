# SPDX-License-Identifier: Apache-2.0
# Debian 12 packages (scripts/install-deps.sh). A missing one stops configuration with its name.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(dnnl REQUIRED CONFIG)
if(NOT QAIC_FUZZ)
  find_package(GTest REQUIRED)
  find_package(benchmark REQUIRED)
  pkg_check_modules(FUSE3 REQUIRED IMPORTED_TARGET fuse3)
  pkg_check_modules(UDEV REQUIRED IMPORTED_TARGET libudev)
  pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)  # socket activation, sd_notify
  find_program(HELP2MAN help2man REQUIRED)                         # man pages from --help
endif()
find_package(gRPC CONFIG REQUIRED)  # qaicd's kubelet device plugin (libgrpc++-dev, protobuf-compiler-grpc)
# liburing: the runtime's completion loop and the data path's futex calls (libqaic/driver).
pkg_check_modules(URING REQUIRED IMPORTED_TARGET liburing)
# libdrm: the DRM core's structures (drm.h) for the emulator, drmIoctl and PRIME for libqaic.
pkg_check_modules(LIBDRM REQUIRED IMPORTED_TARGET libdrm)
find_package(Protobuf REQUIRED)
find_package(ONNX CONFIG QUIET)
find_program(DEBIAN_PYTHON /usr/bin/python3 REQUIRED NO_DEFAULT_PATH)
find_package(ZLIB REQUIRED)
