#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages the project needs, and only those that are missing.
# Idempotent: a second run installs nothing and prints one line.
set -euo pipefail

packages=(
  build-essential cmake pkg-config clang libclang-rt-14-dev clang-format zlib1g-dev
  libfuse3-dev fuse3 liburing-dev libdrm-dev libudev-dev
  nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev libonnx-dev libprotobuf-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc
  # Only recommended by libdnnl-dev, but dnnl-config.cmake requires OpenCL (Debian's oneDNN is
  # built with the OpenCL GPU runtime), and packages are installed without recommends.
  ocl-icd-opencl-dev
  python3-numpy python3-protobuf python3-onnx python3-torch python3-torchvision python3-pytest
  # The qaicrt extension module (python/): pybind11 and the interpreter's headers.
  pybind11-dev python3-dev
  # Install, packaging and services (cmake/Install.cmake, deploy/): socket activation and
  # sd_notify, man pages from --help, the .deb tool chain and its checker, systemd-analyze,
  # man to read the pages.
  libsystemd-dev help2man dpkg-dev lintian systemd man-db
  # lspci (libpci) against the emulated PCI functions inside `qaic-emu --namespace`.
  pciutils
  # docs/ci.md's recipe, tested: a fresh Debian 12 root from Debian's archive.
  mmdebstrap
  python3-yaml
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
