#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a Llama-2-shaped decoder as ONNX with external data, never holding the model in memory.

    /usr/bin/python3 export_llama.py OUTDIR [--layers 32] [--hidden 4096] [--heads 32]
        [--intermediate 11008] [--vocab 32000] [--ctx-len 1024] [--prefill-len 32]
        [--dtype float16|float32] [--seed 0]

The defaults are Llama-2-7B's: RMSNorm (eps 1e-5), rotary embeddings (theta 10000, cos and sin
tables gathered by position_ids), SwiGLU MLP, no biases, an untied lm_head. The graph is built
with onnx.helper in efficient-transformers' convention, as export_decoder.py --convention
efficient-transformers writes it (docs/llm.md): inputs input_ids, position_ids (int64
[batch_size, seq_len]) and past_key.<i>, past_value.<i> ([batch_size, heads, ctx_len, head_dim]);
outputs logits (float32 [batch_size, 1, vocab], of the largest position) and the caches as
<name>_RetainedState, written with ScatterND at (batch, head, position) tuples (INT32_MAX for a
padding row at position -1) and read back with GatherND (batch_dims 2), INT32_MAX beyond the
call's largest position. The network computes in float32, as the vendor's FP16 flow does (FP16
weights, FP32 accumulation): a float16 weight reaches it through a Cast, which qaic-exec folds into
the constant (stored as float16 again under -convert-to-fp16), and the caches are float32 in the
graph, float16 on the device through custom_io.yaml, as efficient-transformers exports them.

Every weight is random normal * 0.02 (the norms' 1 + normal * 0.02) from its own generator,
seeded by (--seed, crc32 of its name), so any tensor can be regenerated alone; each is written
to the external data file in chunks as it is drawn, so the peak RSS is a few chunks, whatever
the model's size. A MatMul weight is stored [K, N] (x @ W).

OUTDIR receives
  llama.onnx              the graph; every weight a reference into llama.onnx.data
  llama.onnx.data         the weights, each at an offset aligned to 4096 bytes
  specializations.json    prefill (seq_len = --prefill-len) and decode (seq_len 1) at --ctx-len
  custom_io.yaml          the caches in float16, for -custom-IO-list-file
  config.json             the sizes and every tensor's name, dtype, shape and offset; written last,
                          its presence says the directory is complete
"""
import argparse
import json
import math
import pathlib
import sys
import time
import zlib

import numpy
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper

from llm_convention import INVALID_INDEX, io_names, write_custom_io, write_specializations

ALIGNMENT = 4096
# Elements drawn at once: the generator's working set is a few arrays of this size.
CHUNK_ELEMENTS = 1 << 22
WEIGHT_STD = 0.02
# efficient-transformers' masked score: finite, so that a padding query (no position to attend)
# stays finite where the network computes in float16.
MASKED_SCORE = -10000.0
DTYPES = {"float16": (numpy.float16, TensorProto.FLOAT16), "float32": (numpy.float32, TensorProto.FLOAT)}
# What config.json must match for an existing directory to be reused.
PARAMETERS = ("layers", "hidden", "heads", "intermediate", "vocab", "ctx_len", "prefill_len", "max_positions",
              "rms_eps", "rope_theta", "dtype", "seed")


def tensor_generator(seed, name):
    """The generator of one tensor: the same (seed, name) always draws the same values."""
    return numpy.random.default_rng([seed, zlib.crc32(name.encode())])


def weight_names(layers):
    """Every weight of the model with its kind (embedding, matmul, norm), in file order."""
    names = [("embed_tokens.weight", "embedding")]
    for i in range(layers):
        prefix = f"layers.{i}."
        names += [(prefix + "input_norm.weight", "norm")]
        names += [(prefix + f"attention.{p}.weight", "matmul") for p in ("q", "k", "v", "o")]
        names += [(prefix + "post_attention_norm.weight", "norm")]
        names += [(prefix + f"mlp.{p}.weight", "matmul") for p in ("gate", "up", "down")]
    names += [("norm.weight", "norm"), ("lm_head.weight", "matmul")]
    return names


def weight_shape(args, name):
    hidden, intermediate = args.hidden, args.intermediate
    if name == "embed_tokens.weight":
        return (args.vocab, hidden)
    if name == "lm_head.weight":
        return (hidden, args.vocab)
    if name.endswith("norm.weight"):
        return (hidden,)
    if ".mlp.down." in name:
        return (intermediate, hidden)
    if ".mlp." in name:
        return (hidden, intermediate)
    return (hidden, hidden)


def rotary_tables(args):
    """cos and sin [max_positions, head_dim] as Llama's rotary embedding computes them (the
    frequencies repeated over both halves), in float32."""
    head_dim = args.hidden // args.heads
    inverse = 1.0 / (args.rope_theta ** (numpy.arange(0, head_dim, 2, dtype=numpy.float32) / head_dim))
    angles = numpy.outer(numpy.arange(args.max_positions, dtype=numpy.float32), inverse)
    angles = numpy.concatenate((angles, angles), axis=1)
    return numpy.cos(angles).astype(numpy.float32), numpy.sin(angles).astype(numpy.float32)


class ExternalData:
    """The external data file, written tensor by tensor; the manifest says where each one is."""

    def __init__(self, path, dtype):
        self.path = path
        self.file = open(path, "wb")
        self.numpy_dtype, self.onnx_dtype = DTYPES[dtype]
        self.manifest = []

    def align(self):
        position = self.file.tell()
        padding = -position % ALIGNMENT
        if padding:
            self.file.write(b"\0" * padding)
        return position + padding

    def add(self, name, kind, shape, chunks):
        """Writes the float32 arrays `chunks` yields (the tensor in C order) as the file's dtype."""
        offset = self.align()
        for chunk in chunks:
            self.file.write(memoryview(numpy.ascontiguousarray(chunk.astype(self.numpy_dtype, copy=False))))
        length = self.file.tell() - offset
        expected = math.prod(shape) * numpy.dtype(self.numpy_dtype).itemsize
        if length != expected:
            raise AssertionError(f"{name}: wrote {length} bytes, its shape {shape} needs {expected}")
        self.manifest.append({"name": name, "kind": kind, "shape": list(shape), "offset": offset, "length": length})
        return self.reference(name, shape, offset, length)

    def reference(self, name, shape, offset, length):
        tensor = TensorProto(name=name, data_type=self.onnx_dtype, dims=shape)
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", self.path.name), ("offset", str(offset)), ("length", str(length))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        return tensor

    def close(self):
        self.file.close()


def random_chunks(seed, name, kind, shape):
    """The tensor's values in C order, CHUNK_ELEMENTS at a time, from its own generator."""
    generator = tensor_generator(seed, name)
    remaining = math.prod(shape)
    while remaining:
        count = min(remaining, CHUNK_ELEMENTS)
        chunk = generator.standard_normal(count, dtype=numpy.float32)
        chunk *= numpy.float32(WEIGHT_STD)
        if kind == "norm":
            chunk += numpy.float32(1.0)
        yield chunk
        remaining -= count


class GraphBuilder:
    """Nodes with generated output names, and small constants held in the graph itself."""

    def __init__(self, dtype):
        self.nodes = []
        self.initializers = []
        self.weight_dtype = DTYPES[dtype][1]
        self.count = 0

    def weight(self, name):
        """A stored weight as the network's float32: a Cast when it is stored as float16."""
        return name if self.weight_dtype == TensorProto.FLOAT else self.op("Cast", name, to=TensorProto.FLOAT)

    def op(self, op_type, *inputs, outputs=None, **attributes):
        if outputs is None:
            self.count += 1
            outputs = [f"{op_type.lower()}_{self.count}"]
        self.nodes.append(helper.make_node(op_type, list(inputs), outputs, **attributes))
        return outputs[0] if len(outputs) == 1 else outputs

    def constant(self, values, dtype=numpy.int64):
        self.count += 1
        name = f"constant_{self.count}"
        self.initializers.append(onnx.numpy_helper.from_array(numpy.array(values, dtype=dtype), name))
        return name

    def float_constant(self, value):
        return self.constant(value, numpy.float32)


def rms_norm(g, x, weight, eps):
    """Llama's RMSNorm: x / sqrt(mean(x^2) + eps) times the weight."""
    variance = g.op("ReduceMean", g.op("Mul", x, x), axes=[-1], keepdims=1)
    inverse = g.op("Reciprocal", g.op("Sqrt", g.op("Add", variance, g.float_constant(eps))))
    return g.op("Mul", g.op("Mul", x, inverse), g.weight(weight))


def rotate(g, x, cos, sin, head_dim):
    """x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x[..., half:], x[..., :half])."""
    half = head_dim // 2
    axis = g.constant([3])
    first = g.op("Slice", x, g.constant([0]), g.constant([half]), axis)
    second = g.op("Slice", x, g.constant([half]), g.constant([head_dim]), axis)
    rotated = g.op("Concat", g.op("Neg", second), first, axis=3)
    return g.op("Add", g.op("Mul", x, cos), g.op("Mul", rotated, sin))


def build_graph(args, weights):
    """The decoder over `weights` (name -> initializer name) in efficient-transformers' form."""
    g = GraphBuilder(args.dtype)
    heads, head_dim = args.heads, args.hidden // args.heads
    inputs, outputs = io_names(args.layers)
    marker = g.constant(INVALID_INDEX)

    # Shapes: batch and seq_len from input_ids, ctx_len from the first cache.
    ids_shape = g.op("Shape", "input_ids")
    batch = g.op("Gather", ids_shape, g.constant(0), axis=0)
    batch_1d = g.op("Slice", ids_shape, g.constant([0]), g.constant([1]))
    seq_1d = g.op("Slice", ids_shape, g.constant([1]), g.constant([2]))
    ctx = g.op("Gather", g.op("Shape", "past_key.0"), g.constant(2), axis=0)
    ctx_1d = g.op("Unsqueeze", ctx, g.constant([0]))
    heads_1d = g.constant([heads])

    # Cache writes: (batch, head, position) per new row, INT32_MAX for a padding row (-1).
    position_ids = "position_ids"
    marked = g.op("Where", g.op("Less", position_ids, g.constant(0)), marker, position_ids)
    write_shape = g.op("Concat", batch_1d, heads_1d, seq_1d, axis=0)
    batch_index = g.op("Reshape", g.op("Range", g.constant(0), batch, g.constant(1)), g.constant([-1, 1, 1]))
    head_index = g.constant(numpy.arange(heads).reshape(1, heads, 1))
    position_index = g.op("Unsqueeze", marked, g.constant([1]))
    last_axis = g.constant([3])
    columns = [g.op("Unsqueeze", g.op("Expand", index, write_shape), last_axis)
               for index in (batch_index, head_index, position_index)]
    write_index = g.op("Concat", *columns, axis=3)

    # Cache reads: every position up to the call's largest, INT32_MAX (zeros) beyond it.
    cache_positions = g.op("Range", g.constant(0), ctx, g.constant(1))
    largest = g.op("Unsqueeze", g.op("ReduceMax", position_ids, axes=[1], keepdims=1), g.constant([2]))
    beyond = g.op("Greater", g.op("Reshape", cache_positions, g.constant([1, 1, -1])), largest)
    read_positions = g.op("Where", beyond, marker, g.op("Reshape", cache_positions, g.constant([1, 1, -1])))
    read_shape = g.op("Concat", batch_1d, heads_1d, ctx_1d, axis=0)
    read_index = g.op("Unsqueeze", g.op("Expand", read_positions, read_shape), last_axis)

    # A query at position p attends to cache positions <= p (a padding query to none).
    attend = g.op("LessOrEqual", g.op("Reshape", cache_positions, g.constant([1, 1, 1, -1])),
                  g.op("Unsqueeze", position_ids, g.constant([1, 3])))
    # Rotary tables gathered by position ([batch, 1, seq_len, head_dim]); -1 reads the last row,
    # as ONNX's Gather does, and only padding rows read it.
    cos = g.op("Unsqueeze", g.op("Gather", g.weight(weights["rotary.cos"]), position_ids, axis=0), g.constant([1]))
    sin = g.op("Unsqueeze", g.op("Gather", g.weight(weights["rotary.sin"]), position_ids, axis=0), g.constant([1]))
    split_heads = g.constant([0, 0, heads, head_dim])
    merge_heads = g.constant([0, 0, args.hidden])
    score_scale = g.float_constant(1.0 / math.sqrt(head_dim))
    masked = g.float_constant(MASKED_SCORE)

    x = g.op("Gather", g.weight(weights["embed_tokens.weight"]), "input_ids", axis=0)
    for i in range(args.layers):
        prefix = f"layers.{i}."
        h = rms_norm(g, x, weights[prefix + "input_norm.weight"], args.rms_eps)

        def project(name, h=h, prefix=prefix):
            return g.op("MatMul", h, g.weight(weights[prefix + f"attention.{name}.weight"]))

        def heads_first(t):
            return g.op("Transpose", g.op("Reshape", t, split_heads), perm=[0, 2, 1, 3])

        q = rotate(g, heads_first(project("q")), cos, sin, head_dim)
        k = rotate(g, heads_first(project("k")), cos, sin, head_dim)
        v = heads_first(project("v"))
        key = g.op("ScatterND", inputs[2 + 2 * i], write_index, k, outputs=[outputs[1 + 2 * i]])
        value = g.op("ScatterND", inputs[3 + 2 * i], write_index, v, outputs=[outputs[2 + 2 * i]])
        read_key = g.op("GatherND", key, read_index, batch_dims=2)
        read_value = g.op("GatherND", value, read_index, batch_dims=2)
        scores = g.op("Mul", g.op("MatMul", q, g.op("Transpose", read_key, perm=[0, 1, 3, 2])), score_scale)
        scores = g.op("Where", attend, scores, masked)
        probabilities = g.op("Softmax", scores, axis=-1)
        attention = g.op("MatMul", probabilities, read_value)
        attention = g.op("Reshape", g.op("Transpose", attention, perm=[0, 2, 1, 3]), merge_heads)
        x = g.op("Add", x, g.op("MatMul", attention, g.weight(weights[prefix + "attention.o.weight"])))

        h = rms_norm(g, x, weights[prefix + "post_attention_norm.weight"], args.rms_eps)
        gate = g.op("MatMul", h, g.weight(weights[prefix + "mlp.gate.weight"]))
        up = g.op("MatMul", h, g.weight(weights[prefix + "mlp.up.weight"]))
        swiglu = g.op("Mul", g.op("Mul", gate, g.op("Sigmoid", gate)), up)
        x = g.op("Add", x, g.op("MatMul", swiglu, g.weight(weights[prefix + "mlp.down.weight"])))

    # Only the token at the largest position is predicted from.
    last = g.op("Unsqueeze", g.op("ArgMax", position_ids, axis=1, keepdims=1), g.constant([2]))
    last = g.op("Expand", last, g.op("Concat", batch_1d, g.constant([1, args.hidden]), axis=0))
    x = g.op("GatherElements", x, last, axis=1)
    x = rms_norm(g, x, weights["norm.weight"], args.rms_eps)
    g.op("MatMul", x, g.weight(weights["lm_head.weight"]), outputs=["logits"])

    cache_shape = ["batch_size", heads, "ctx_len", head_dim]
    graph_inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "seq_len"]),
                    helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch_size", "seq_len"])]
    graph_inputs += [helper.make_tensor_value_info(name, TensorProto.FLOAT, cache_shape) for name in inputs[2:]]
    graph_outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch_size", 1, args.vocab])]
    graph_outputs += [helper.make_tensor_value_info(name, TensorProto.FLOAT, cache_shape) for name in outputs[1:]]
    return g, graph_inputs, graph_outputs


def write_model(args):
    """Writes the weights, then the graph referring to them; returns the manifest."""
    data = ExternalData(args.out / "llama.onnx.data", args.dtype)
    initializers = []
    weights = {}
    started = time.monotonic()
    for name, kind in weight_names(args.layers):
        shape = weight_shape(args, name)
        initializers.append(data.add(name, kind, shape, random_chunks(args.seed, name, kind, shape)))
        weights[name] = name
    for name, table in zip(("rotary.cos", "rotary.sin"), rotary_tables(args)):
        initializers.append(data.add(name, "rotary", table.shape, [table]))
        weights[name] = name
    data.close()
    written = time.monotonic() - started
    g, graph_inputs, graph_outputs = build_graph(args, weights)
    graph = helper.make_graph(g.nodes, "llama", graph_inputs, graph_outputs, initializer=initializers + g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="export_llama.py")
    model.ir_version = 8
    onnx.save(model, str(args.out / "llama.onnx"))
    return data.manifest, written


def parameters(args):
    return {key: getattr(args, key) for key in PARAMETERS}


def is_complete(out, args):
    """Whether `out` holds this script's output for the same parameters."""
    try:
        config = json.loads((out / "config.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return False
    data = out / "llama.onnx.data"
    end = max(t["offset"] + t["length"] for t in config["tensors"])
    return (config.get("parameters") == parameters(args) and (out / "llama.onnx").exists() and data.exists()
            and data.stat().st_size >= end)


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=pathlib.Path, help="output directory (created)")
    parser.add_argument("--layers", type=int, default=32, help="decoder layers (default 32)")
    parser.add_argument("--hidden", type=int, default=4096, help="hidden size (default 4096)")
    parser.add_argument("--heads", type=int, default=32, help="attention heads (default 32)")
    parser.add_argument("--intermediate", type=int, default=11008, help="MLP size (default 11008)")
    parser.add_argument("--vocab", type=int, default=32000, help="vocabulary size (default 32000)")
    parser.add_argument("--ctx-len", type=int, default=1024, help="KV cache length (default 1024)")
    parser.add_argument("--prefill-len", type=int, default=32,
                        help="seq_len of the prefill specialization (default 32)")
    parser.add_argument("--max-positions", type=int,
                        help="rows of the rotary tables (default --ctx-len)")
    parser.add_argument("--rms-eps", type=float, default=1e-5, help="RMSNorm epsilon (default 1e-5)")
    parser.add_argument("--rope-theta", type=float, default=10000.0, help="rotary base (default 10000)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float16",
                        help="type of the stored weights (default float16)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights (default 0)")
    parser.add_argument("--force", action="store_true",
                        help="write even when OUTDIR already holds the same model")
    args = parser.parse_args(argv)
    if args.max_positions is None:
        args.max_positions = args.ctx_len
    for name in ("layers", "hidden", "heads", "intermediate", "vocab", "ctx_len", "prefill_len", "max_positions"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.hidden % args.heads or (args.hidden // args.heads) % 2:
        parser.error(f"--hidden ({args.hidden}) must be --heads ({args.heads}) times an even head size")
    if args.max_positions < args.ctx_len:
        parser.error(f"--max-positions ({args.max_positions}) is less than --ctx-len ({args.ctx_len})")
    # What llm_convention's writers read.
    args.convention = "efficient-transformers"
    return args


def main(argv):
    args = parse_arguments(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.force and is_complete(args.out, args):
        print(f"{args.out}: already holds this model; nothing written")
        return 0
    (args.out / "config.json").unlink(missing_ok=True)
    manifest, seconds = write_model(args)
    write_specializations(args)
    write_custom_io(args)
    size = sum(t["length"] for t in manifest)
    config = {"parameters": parameters(args), "convention": args.convention, "alignment": ALIGNMENT,
              "data": "llama.onnx.data", "weight_std": WEIGHT_STD, "tensors": manifest}
    # Written last: its presence says the directory is complete.
    (args.out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    print(f"{args.out}: llama.onnx, {len(manifest)} tensors, {size / 2**30:.2f} GiB of {args.dtype} weights "
          f"written in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
