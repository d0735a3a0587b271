#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks the tree's style and exits 1 when any check fails (0 when all pass, 2 on a usage or tool
# error). Three checks, each over the files of its kind:
#   C and C++     follow the top-level .clang-format; each file that does not is listed with how
#                 many of its lines clang-format would change. The uAPI header
#                 (libqaic/include/qaic/uapi/qaic_accel.h) keeps the kernel's own style.
#   Markdown      no line over 100 characters outside code blocks and tables
#                 (scripts/check-markdown.py)
#   source files  name their license on their first line (scripts/add-spdx.sh --check)
# Usage:
#   scripts/check-format.sh                 every tracked file
#   scripts/check-format.sh FILE...         those files
#   scripts/check-format.sh --since REV     the files changed since REV (e.g. main); the license
#                                           line only in the files added (or moved) since REV
#   scripts/check-format.sh --fix [FILE...] reformat C and C++ in place instead of checking
# Needs clang-format (Debian package clang-format, installed by scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '2,/^set -euo/p' "$0" |
    sed -e '$d' -e '/^# SPDX-License-Identifier:/d' -e 's/^# \{0,1\}//' >&2
  exit 2
}
command -v clang-format >/dev/null ||
  { echo "check-format: clang-format not found (apt-get install clang-format)" >&2; exit 2; }

fix=0
files=()
new_files=()
case "${1:-}" in
  -h|--help) usage ;;
  --fix) fix=1; shift ;;
esac
if [[ "${1:-}" == --since ]]; then
  [[ $# -eq 2 ]] || usage
  mapfile -t files < <(git diff --name-only --diff-filter=d "$2")
  # Without rename detection a moved file counts as added: it has to carry the line too.
  mapfile -t new_files < <(git diff --name-only --no-renames --diff-filter=A "$2")
elif [[ $# -gt 0 ]]; then
  files=("$@")
  new_files=("$@")
else
  mapfile -t files < <(git ls-files -- ':!tests/fuzz/corpus')
  new_files=("${files[@]}")
fi

code_files=()
markdown_files=()
for file in "${files[@]}"; do
  [[ -f "$file" ]] || { echo "check-format: no such file: $file" >&2; exit 2; }
  case "$file" in
    libqaic/include/qaic/uapi/*) ;;
    *.c|*.cc|*.cpp|*.h|*.hpp) code_files+=("$file") ;;
    *.md) markdown_files+=("$file") ;;
  esac
done

if ((fix)); then
  for file in "${code_files[@]}"; do clang-format -i --style=file "$file"; done
  exit 0
fi

failed=0
unformatted=0
for file in "${code_files[@]}"; do
  changed=$(clang-format --style=file "$file" | diff "$file" - | grep -c '^[<>]' || true)
  if ((changed > 0)); then
    echo "$file: $changed lines differ"
    unformatted=$((unformatted + 1))
  fi
done
if ((unformatted > 0)); then
  echo "check-format: $unformatted of ${#code_files[@]} files do not follow .clang-format" \
    "(scripts/check-format.sh --fix FILE...)" >&2
  failed=1
else
  echo "check-format: ${#code_files[@]} files follow .clang-format"
fi

if ((${#markdown_files[@]} > 0)); then
  scripts/check-markdown.py "${markdown_files[@]}" || failed=1
fi
if ((${#new_files[@]} > 0)); then
  scripts/add-spdx.sh --check "${new_files[@]}" || failed=1
fi
exit "$failed"
