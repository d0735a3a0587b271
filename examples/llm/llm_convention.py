# SPDX-License-Identifier: Apache-2.0
"""What the decoder exporters of examples/llm share: the names of the model's inputs and outputs,
how a prompt becomes prefill calls, and the files written next to the model for qaic-exec and
qaic-runner (specializations.json, custom_io.yaml, the batch JSONs over reference/step<k>/).

The functions take an `args` namespace with the sizes: layers, hidden, heads, ctx_len, vocab,
prefill_len, generate, convention ("plain" or "efficient-transformers") and out (a directory).
"""
import hashlib
import json
import pathlib

import numpy

# efficient-transformers' mark of a cache row not to write and of a cache position not to read.
INVALID_INDEX = 2**31 - 1

# The token id of prefill padding (its rows write nothing, so any id would do).
PAD_TOKEN = 0


def io_names(layers):
    """The model's inputs (input_ids, position_ids, past_key.<i>, past_value.<i>) and outputs
    (logits, then each cache input's <name>_RetainedState), in order."""
    inputs = ["input_ids", "position_ids"]
    outputs = ["logits"]
    for i in range(layers):
        inputs += [f"past_key.{i}", f"past_value.{i}"]
        outputs += [f"past_key.{i}_RetainedState", f"past_value.{i}_RetainedState"]
    return inputs, outputs


def prefill_calls(args, prompt):
    """The prompt's (input_ids, position_ids) per prefill call: the whole prompt at once (plain),
    or chunks of args.prefill_len, the last one padded to full length at position -1, as
    efficient-transformers' generation loop feeds them."""
    if args.convention == "plain":
        return [(prompt, list(range(len(prompt))))]
    chunks = -(-len(prompt) // args.prefill_len)
    padding = chunks * args.prefill_len - len(prompt)
    ids = prompt + [PAD_TOKEN] * padding
    positions = list(range(len(prompt))) + [-1] * padding
    size = args.prefill_len
    return [(ids[k * size:(k + 1) * size], positions[k * size:(k + 1) * size]) for k in range(chunks)]


def write_raw(path, array):
    """One buffer as raw little-endian bytes in its own type (a torch tensor or a numpy array)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if hasattr(array, "detach"):
        array = array.detach().contiguous().numpy()
    path.write_bytes(numpy.ascontiguousarray(array).tobytes())


def io_entry(path, data_type, direction, name, dims=None):
    entry = {"path": path, "data-type": data_type, "io-direction": direction, "map-to": name}
    if dims is not None:
        entry["dims"] = dims
    return entry


def io_set(args, step, seq_len, with_cache, with_dims):
    """One IO set over reference/step<step>/; outputs are there for -c."""
    inputs, outputs = io_names(args.layers)
    head_dim = args.hidden // args.heads
    directory = f"reference/step{step}"
    dims = {"input_ids": [1, seq_len], "position_ids": [1, seq_len], "logits": [1, 1, args.vocab]}
    entries = []
    for name in inputs[:2]:
        entries.append(io_entry(f"{directory}/{name}.raw", "int64_t", "in", name, dims[name] if with_dims else None))
    entries.append(io_entry(f"{directory}/logits.raw", "float", "out", "logits",
                            dims["logits"] if with_dims else None))
    if with_cache:
        cache_dims = [1, args.heads, args.ctx_len, head_dim]
        for name in inputs[2:]:
            entries.append(io_entry(f"{directory}/{name}.raw", "float", "in", name,
                                    cache_dims if with_dims else None))
        for name in outputs[1:]:
            entries.append(io_entry(f"{directory}/{name}.raw", "float", "out", name,
                                    cache_dims if with_dims else None))
    return entries


def write_batch_jsons(args, chunks):
    """generation.json (one IO set per prefill chunk, then one per decode step, for a program
    compiled with -retained-state) and, in the plain convention, prefill.json and decode.json
    (the cache in the IO, for programs compiled with static shapes)."""
    steps = range(chunks, chunks + args.generate - 1)

    def write(name, sets):
        (args.out / name).write_text(json.dumps({"IO-files": sets}, indent=1) + "\n")

    if args.convention == "plain":
        write("prefill.json", [io_set(args, 0, args.prefill_len, True, False)])
        write("decode.json", [io_set(args, k, 1, True, False) for k in steps])
    write("generation.json", [io_set(args, k, args.prefill_len, False, True) for k in range(chunks)] +
          [io_set(args, k, 1, False, True) for k in steps])


def write_custom_io(args):
    """custom_io.yaml as efficient-transformers writes it for -custom-IO-list-file: every cache
    input, then every cache output, in float16."""
    with (args.out / "custom_io.yaml").open("w") as out:
        for suffix in ("", "_RetainedState"):
            for layer in range(args.layers):
                for kind in ("key", "value"):
                    out.write(f" - IOName: past_{kind}.{layer}{suffix}\n   Precision: float16\n\n")


def write_specializations(args):
    """specializations.json for -network-specialization-config: prefill (seq_len = prefill_len),
    then decode (seq_len 1), batch 1, at ctx_len."""
    specializations = [{"batch_size": "1", "seq_len": str(args.prefill_len), "ctx_len": str(args.ctx_len)},
                       {"batch_size": "1", "seq_len": "1", "ctx_len": str(args.ctx_len)}]
    # efficient-transformers writes this file with json.dump(..., indent=4).
    indent = 4 if args.convention == "efficient-transformers" else 1
    (args.out / "specializations.json").write_text(json.dumps({"specializations": specializations},
                                                              indent=indent) + "\n")


def reference_digest():
    """A digest of the sources llama_reference.py computes with: a reference made by other
    sources is made again."""
    here = pathlib.Path(__file__).resolve().parent
    sources = ("llama_reference.py", "mxfp6.py", "llm_convention.py")
    return hashlib.sha256(b"".join((here / name).read_bytes() for name in sources)).hexdigest()[:16]
