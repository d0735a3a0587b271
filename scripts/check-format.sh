#!/usr/bin/env bash
# Lists the C and C++ files that do not follow the top-level .clang-format, with how many of
# their lines clang-format would change, and exits 1 when there is any (0 when all follow it,
# 2 on a usage or tool error).
#   scripts/check-format.sh                 every tracked .c .cc .cpp .h .hpp file
#   scripts/check-format.sh FILE...         those files
#   scripts/check-format.sh --since REV     the files changed since REV (e.g. main)
#   scripts/check-format.sh --fix [FILE...] reformat in place instead of listing
# The uAPI header (libqaic/include/qaic/uapi/qaic_accel.h) keeps the kernel's own style.
# Needs clang-format (Debian package clang-format, installed by scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
command -v clang-format >/dev/null || { echo "check-format: clang-format not found (apt-get install clang-format)" >&2; exit 2; }

fix=0
files=()
case "${1:-}" in
  -h|--help) usage ;;
  --fix) fix=1; shift ;;
esac
if [[ "${1:-}" == --since ]]; then
  [[ $# -eq 2 ]] || usage
  mapfile -t files < <(git diff --name-only --diff-filter=d "$2" -- '*.c' '*.cc' '*.cpp' '*.h' '*.hpp')
elif [[ $# -gt 0 ]]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files -- '*.c' '*.cc' '*.cpp' '*.h' '*.hpp')
fi

unformatted=0
for file in "${files[@]}"; do
  [[ "$file" == libqaic/include/qaic/uapi/* ]] && continue
  [[ -f "$file" ]] || { echo "check-format: no such file: $file" >&2; exit 2; }
  if ((fix)); then
    clang-format -i --style=file "$file"
    continue
  fi
  changed=$(clang-format --style=file "$file" | diff "$file" - | grep -c '^[<>]' || true)
  if ((changed > 0)); then
    echo "$file: $changed lines differ"
    unformatted=$((unformatted + 1))
  fi
done
((fix)) && exit 0
if ((unformatted > 0)); then
  echo "check-format: $unformatted of ${#files[@]} files do not follow .clang-format (scripts/check-format.sh --fix FILE...)" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files follow .clang-format"
