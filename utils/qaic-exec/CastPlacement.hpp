// SPDX-License-Identifier: Apache-2.0
// Where a network's precision conversions run. A decoder exported in float whose KV cache is
// float16 on the device (custom IO) converts the whole cache to float before its update and back
// after it, at every call; these rewrites make such a cache a float16 tensor updated in place,
// and move the remaining widening to the point where the values are computed with.
#pragma once

#include <vector>

#include "RetainedState.hpp"
#include "ir/Graph.hpp"

namespace qaic::compiler {

// For each retained pair held in a narrower type than the graph computes in, the pattern
//   in -> cast(float) -> scatter(src) -> out' -> cast(narrow) -> out
// becomes a scatter of `in` itself, in the narrow type, with its updates rounded to it first
// (what the card stores anyway); readers of out' read a widened copy. The emulator then writes the
// update where the state lives (RetainedMemory's in-place rule) instead of converting and copying
// the whole state. The current call's updates are rounded before the call reads them back, as
// -convert-to-fp16 computes. Returns how many pairs were rewritten; the graph is re-inferred.
int keepRetainedInBufferPrecision(ir::Graph& graph, const std::vector<RetainedPair>& pairs);

// With -convert-to-fp16 (float constants stored as float16): a float constant whose every reader
// only selects from it (an embedding table read by gather) becomes a float16 constant widened
// after the selection, instead of a widened copy of the whole table in device memory. Returns how
// many constants changed; the graph is re-inferred.
int keepSelectedConstantsNarrow(ir::Graph& graph);

// Moves each exact widening cast (float16 to float) below the data movement its value goes
// through first (reshape, flatten, transpose, slice, strided_slice, gather, gather_nd): the same
// values, with half the bytes moved. Returns how many moves were made; the graph is re-inferred.
int sinkWideningCasts(ir::Graph& graph);

// A float matmul whose right operand is a widened float16 tensor computed at run time (not a
// constant) that nothing else reads, reads the float16 tensor itself (the kernel widens in
// registers); when that tensor is a transpose of the last two axes that nothing else reads, the
// matmul becomes matmul_trans_b of the transpose's input. A float16 right operand that is then a
// gather_nd of rows (batch_dims = rank - 2, one index per row: efficient-transformers' CtxGather
// of a cache's positions) that nothing else reads becomes matmul_gathered_b of the gather's
// inputs. Attention then reads a float16 KV cache's keys and values where they lie, the unfilled
// positions skipped, with no float, transposed or gathered copy of the cache. Run after
// sinkWideningCasts (which brings the casts down to the matmuls). Returns how many rewrites were
// made; the graph is re-inferred.
int readNarrowMatmulOperands(ir::Graph& graph);

}  // namespace qaic::compiler
