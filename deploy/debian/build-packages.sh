#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make package: the Debian packages of a built tree, from what `cmake --install` puts into /usr,
# one package per install component (cmake/Install.cmake):
#   libqaic1    the runtime library (libqaic.so.1)
#   libqaic-dev headers, libqaic.so, qaic.pc, the qaic CMake package, examples/consumer
#   qaic-tools  qaic-runner, qaic-util, qaic-exec and qaic-compile, lightnet, udev rules, docs
#   qaicd       the daemon and its systemd units (socket activated)
#   qaic-emu    the emulator, qaic-emu@.service and /etc/qaic-emu/default.json
#   python3-qaic the qaicrt module with its stubs and the qaic package, for Debian's python3
#   qaic-compat the vendor's /opt/qti-aic paths as links into the others (cmake/Compat.cmake)
# Depends on Debian's libraries come from dpkg-shlibdeps, control files from dpkg-gencontrol,
# the archives from dpkg-deb (owned by root without fakeroot); lintian checks each.
# Usage: deploy/debian/build-packages.sh BUILD_DIR OUT_DIR [--no-lintian]
set -euo pipefail

build=$(cd "${1:?build dir}" && pwd)
mkdir -p "${2:?output dir}"
out=$(cd "$2" && pwd)
run_lintian=1
[[ ${3:-} == --no-lintian ]] && run_lintian=0
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)

version=$(sed -n 's/^project(qaic-stack VERSION \([0-9.]*\).*/\1/p' "$source_dir/CMakeLists.txt")
[[ -n $version ]] || { echo "build-packages: no project version in CMakeLists.txt" >&2; exit 1; }
debian_version="$version-1"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
python_version=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
python_next=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % (sys.version_info[0], sys.version_info[1] + 1))')
work=$(mktemp -d /tmp/qaic-packages.XXXXXX)
trap 'rm -rf "$work"' EXIT

declare -A component=([libqaic1]=runtime [libqaic-dev]=dev [qaic-tools]=tools [qaicd]=daemon [qaic-emu]=emulator
                      [python3-qaic]=python)
packages=(libqaic1 libqaic-dev qaic-tools qaicd qaic-emu python3-qaic qaic-compat)

# debian/ as dpkg-shlibdeps and dpkg-gencontrol expect it: control, changelog, one tree per package.
mkdir -p "$work/debian"
sed "s/@MULTIARCH@/$multiarch/g" "$here/control" > "$work/debian/control"
date=$(date -R -d "@$(git -C "$source_dir" log -1 --format=%ct 2>/dev/null || date +%s)")
cat > "$work/debian/changelog" <<EOF
qaic-stack ($debian_version) unstable; urgency=medium

  * Packages built from the qaic-stack tree by deploy/debian/build-packages.sh.

 -- qaic-stack maintainers <qaic-stack@example.org>  $date
EOF

for pkg in "${packages[@]}"; do
  root="$work/debian/$pkg"
  mkdir -p "$root"
  if [[ $pkg == qaic-compat ]]; then
    DESTDIR="$root" cmake -DMODE=install -DBUILD="$build" -DPREFIX=/usr -DCOMPAT_ROOT=/opt/qti-aic \
      -DMANIFEST="$work/compat-manifest.txt" -P "$source_dir/cmake/Compat.cmake" > "$work/install-$pkg.log"
  else
    DESTDIR="$root" cmake --install "$build" --prefix /usr --component "${component[$pkg]}" > "$work/install-$pkg.log"
  fi
  # Debian 12 keeps udev rules and systemd units under /lib (merged-/usr aliases them).
  for dir in udev systemd; do
    if [[ -d $root/usr/lib/$dir ]]; then
      mkdir -p "$root/lib"
      mv "$root/usr/lib/$dir" "$root/lib/$dir"
    fi
  done
  # Man pages compressed (symlinks follow their target's new name), binaries stripped of debug
  # information, as Debian policy asks.
  if [[ -d $root/usr/share/man ]]; then
    find "$root/usr/share/man" -type f -name '*.[18]' -exec gzip -9n {} +
    find "$root/usr/share/man" -type l -name '*.[18]' | while read -r link; do
      target=$(readlink "$link")
      rm "$link"
      ln -s "$target.gz" "$link.gz"
    done
  fi
  find "$root" -type f \( -path '*/bin/*' -o -path '*/sbin/*' -o -name '*.so.*' -o -path '*/dist-packages/*.so' \) \
    -exec strip --strip-unneeded --remove-section=.comment --remove-section=.note {} +
  find "$root" -depth -type d -empty -delete
  doc="$root/usr/share/doc/$pkg"
  mkdir -p "$doc"
  # The machine-readable (DEP-5) copyright file naming the license, Apache-2.0 (LICENSE).
  cp "$here/copyright" "$doc/copyright"
  gzip -9n < "$work/debian/changelog" > "$doc/changelog.Debian.gz"
  # The generated changelog closes no Debian bug: these packages are not uploaded to Debian.
  mkdir -p "$root/usr/share/lintian/overrides"
  echo "$pkg: initial-upload-closes-no-bugs" > "$root/usr/share/lintian/overrides/$pkg"
  # /opt/qti-aic is where the vendor's software looks; these links are that package's only point.
  [[ $pkg == qaic-compat ]] && echo "$pkg: dir-or-file-in-opt" >> "$root/usr/share/lintian/overrides/$pkg"
  mkdir -p "$root/DEBIAN"
done

# libqaic1: the shlibs line dpkg-shlibdeps reads for every package that links libqaic.so.1, and
# the ldconfig trigger for the shared library.
echo "libqaic 1 libqaic1 (>= $version)" > "$work/debian/libqaic1/DEBIAN/shlibs"
echo "activate-noawait ldconfig" > "$work/debian/libqaic1/DEBIAN/triggers"
# The emulator's configuration is the administrator's to edit.
(cd "$work/debian/qaic-emu" && find etc -type f -printf '/%p\n') > "$work/debian/qaic-emu/DEBIAN/conffiles"

cd "$work"
for pkg in "${packages[@]}"; do
  root="debian/$pkg"
  mapfile -t elves < <(find "$root" -type f \( -path '*/bin/*' -o -path '*/sbin/*' -o -name '*.so.*' -o -path '*/dist-packages/*.so' \) | sort)
  echo "misc:Depends=" > "debian/$pkg.substvars"
  # The extension module is built for one python3 minor version: the one this tree was built for.
  [[ $pkg == python3-qaic ]] &&
    echo "python3:Depends=python3 (>= $python_version), python3 (<< $python_next), python3-numpy, python3-protobuf" >> "debian/$pkg.substvars"
  if ((${#elves[@]})); then
    dpkg-shlibdeps -T"debian/$pkg.substvars" -p"shlibs" -l"debian/libqaic1/usr/lib/$multiarch" "${elves[@]}" 2> "$work/shlibdeps-$pkg.log" ||
      { cat "$work/shlibdeps-$pkg.log" >&2; exit 1; }
  fi
  dpkg-gencontrol -p"$pkg" -P"$root" -T"debian/$pkg.substvars" -v"$debian_version"
  find "$root" -path "$root/DEBIAN" -prune -o -type d -exec chmod 0755 {} +
  # The files' checksums (debsums, dpkg --verify), conffiles left out as dh_md5sums does:
  # dpkg keeps their checksums itself.
  (cd "$root" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -printf '%P\0' |
    LC_ALL=C sort -z | xargs -0 -r md5sum) > "$root/DEBIAN/md5sums"
  dpkg-deb --root-owner-group -Zxz --build "$root" "$out" > /dev/null
done

# Beside the packages, what a container image of them is built from (docs/ci.md): the output
# directory is deploy/ci/Dockerfile's build context.
cp "$source_dir/deploy/ci/Dockerfile" "$source_dir/deploy/ci/qaic-ci-job.sh" "$out/"

debs=()
for pkg in "${packages[@]}"; do debs+=("$out/${pkg}_${debian_version}_$(dpkg --print-architecture).deb"); done
for deb in "${debs[@]}"; do
  [[ -f $deb ]] || { echo "build-packages: $deb was not built" >&2; exit 1; }
  printf '%-48s %8s bytes\n' "$(basename "$deb")" "$(stat -c %s "$deb")"
done
if ((run_lintian)); then
  # Errors fail the build; deploy/debian/README.md explains the one tag overridden.
  lintian --tag-display-limit 0 "${debs[@]}" | tee "$out/lintian.txt"
  if grep -q '^E: ' "$out/lintian.txt"; then
    echo "build-packages: lintian reported errors" >&2
    exit 1
  fi
fi
