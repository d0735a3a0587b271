#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Gives every source file the project's license identifier (SPDX-License-Identifier: Apache-2.0,
# see LICENSE) as its first line, or its second after a #! line. Idempotent: a file that already
# names a license there is left as it is.
#   scripts/add-spdx.sh                 every tracked source file
#   scripts/add-spdx.sh FILE...         those files (files that are not source are skipped)
#   scripts/add-spdx.sh --check [FILE...]  change nothing; list the source files without the
#                                       identifier and exit 1 when there is any
# Source is what people write and edit: C and C++ (.c .cc .cpp .h .hpp .hpp.in), .proto, Python
# (.py .pyi), shell (.sh, any file starting with #!), CMake (CMakeLists.txt .cmake .cmake.in),
# Makefiles, Dockerfiles, systemd units, udev rules, YAML manifests and the pkg-config template.
# Not source: data (JSON, ONNX, containers, weights), documents (.md, LICENSE), the fuzz corpora,
# the Debian control and copyright files, tool settings (.clang-format, .gitignore), build trees.
set -euo pipefail
cd "$(dirname "$0")/.."

license=Apache-2.0
tag=SPDX-License-Identifier

usage() {
  sed -n '2,/^set -euo/p' "$0" |
    sed -e '$d' -e '/^# SPDX-License-Identifier:/d' -e 's/^# \{0,1\}//' >&2
  exit 2
}

# Sets style to how FILE writes a one-line comment: "//", "/*" (C headers, which keep C's own
# comments) or "#"; empty when FILE is not source. (A variable, not output: no subshell per file.)
comment_style() {
  local file=$1 name=${1##*/} first
  style=
  case "$file" in
    tests/fuzz/corpus/* | build/* | build-*/*) return 0 ;;
  esac
  case "$name" in
    *.c | *.cc | *.cpp | *.hpp | *.hpp.in | *.proto) style="//" ;;
    *.h) style="/*" ;;
    *.py | *.pyi | *.sh | *.cmake | *.cmake.in | CMakeLists.txt) style="#" ;;
    Makefile | Dockerfile) style="#" ;;
    *.service.in | *.socket.in | *.rules | *.yaml | *.yml | *.pc.in) style="#" ;;
    *.*) ;;
    *)
      # Programs without an extension (.ci/run): a #! line makes them source.
      IFS= read -r first < "$file" || true
      [[ $first == "#!"* ]] && style="#"
      ;;
  esac
  return 0
}

identifier_line() {
  case "$1" in
    "/*") echo "/* $tag: $license */" ;;
    *) echo "$1 $tag: $license" ;;
  esac
}

# True when FILE names a license where it belongs: line 1, or line 2 after a #! line.
has_identifier() {
  local file=$1 first second
  { IFS= read -r first || true; IFS= read -r second || true; } < "$file"
  [[ $first == *"$tag:"* ]] && return 0
  [[ $first == "#!"* && $second == *"$tag:"* ]]
}

add_identifier() {
  local file=$1 line=$2 tmp
  tmp=$(mktemp "$file.spdx.XXXXXX")
  if [[ $(head -c 2 "$file") == "#!" ]]; then
    { head -n 1 "$file"; echo "$line"; tail -n +2 "$file"; } > "$tmp"
  else
    { echo "$line"; cat "$file"; } > "$tmp"
  fi
  # Keep the file's mode (scripts stay executable).
  chmod --reference="$file" "$tmp"
  mv "$tmp" "$file"
}

check=0
case "${1:-}" in
  -h | --help) usage ;;
  --check) check=1; shift ;;
esac
files=()
if [[ $# -gt 0 ]]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files -- ':!tests/fuzz/corpus')
fi

missing=0 added=0 sources=0
for file in "${files[@]}"; do
  [[ -f $file ]] || { echo "add-spdx: no such file: $file" >&2; exit 2; }
  comment_style "$file"
  [[ -n $style ]] || continue
  sources=$((sources + 1))
  has_identifier "$file" && continue
  if ((check)); then
    echo "$file: no $tag line (scripts/add-spdx.sh $file)"
    missing=$((missing + 1))
  else
    add_identifier "$file" "$(identifier_line "$style")"
    added=$((added + 1))
  fi
done
if ((check)); then
  if ((missing > 0)); then
    echo "add-spdx: $missing of $sources source files have no $tag line" >&2
    exit 1
  fi
  echo "add-spdx: $sources source files name their license"
else
  echo "add-spdx: $added of $sources source files given the $tag line"
fi
