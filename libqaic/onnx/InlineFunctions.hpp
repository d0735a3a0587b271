// SPDX-License-Identifier: Apache-2.0
// Model-local functions (ModelProto.functions): what torch.onnx.export writes with
// export_modules_as_functions, and how onnxscript-defined operators of other domains travel
// (efficient-transformers' CtxScatter / CtxGather in com.qualcomm.cloud, for one). Each call is
// replaced by the function's body before conversion, so the importer sees standard operators only.
#pragma once

namespace onnx {
class ModelProto;
}

namespace qaic::onnx {

// Replaces, in the model's graph, every node that calls one of the model's functions (same
// domain and name) by the function's nodes: formal inputs and outputs become the call's values,
// the body's own values and node names get a prefix unique to the call, attributes that refer
// to the call's (ref_attr_name) take their value from it. Calls inside a body are expanded in
// turn. Throws ImportError naming the function on a malformed function or a call that does not
// fit it, when expansion goes deeper than 32 levels (a function that calls itself) or past
// 2^17 nodes.
void inlineLocalFunctions(::onnx::ModelProto& model);

}  // namespace qaic::onnx
