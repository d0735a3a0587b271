#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The vector conversion kernels are compiled per file with different instruction sets (-mavx2,
# or the AVX-512 flags). A vector helper those files share must not be a weak (inline, external
# linkage) symbol: the linker would keep one file's copy for all, and the AVX2 kernels could run
# AVX-512 instructions on a CPU without them. Unoptimised builds (make sanitize, make tsan) emit
# such symbols whenever the helpers have external linkage, so this check bites there.
# Usage: isa-linkage.sh ARCHIVE (qaic_format's, or qaic_mx's: the MXFP6 kernels do the same)
set -eu
archive=$1
[ -f "$archive" ] || { echo "error: $archive not found" >&2; exit 2; }
shared=$(nm -C --defined-only "$archive" 2>/dev/null | grep ' W ' | grep -E 'qaic::kernels::(format|mx)::' | grep '__vector' || true)
if [ -n "$shared" ]; then
  echo "error: vector helpers of the conversion kernels are weak symbols in $archive:" >&2
  echo "$shared" >&2
  exit 1
fi
echo "no weak vector helpers in $(basename "$archive")"
