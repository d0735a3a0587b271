#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's greedy generation with export_llama.py's model, layer by layer from its external data.

    /usr/bin/python3 llama_reference.py MODELDIR OUTDIR [--prompt-len 128] [--generate 32]
        [--prompt-seed 0] [--weights plain|mxfp6] [--mxfp6-format e2m3|e3m2]

The weights are read with numpy.memmap from MODELDIR/llama.onnx.data, one matrix at a time, so
the model is never whole in memory. With --weights mxfp6 every MatMul weight is first rounded
through MXFP6 (mxfp6.py: what -mxfp6-matmul stores), once, into OUTDIR/rounded.data (float16
where that holds the rounded values exactly, else float32). Everything is computed in float32,
the KV cache included. The prompt (--prompt-len tokens drawn from --prompt-seed) runs in one
call, then one call per generated token; the card's calls are recorded for qaic-runner: the
prompt in calls of the model's prefill length, padded at position -1 as efficient-transformers
feeds them, then the reference's tokens.

OUTDIR receives
  tokens.npy              int64: the generated tokens (--generate of them)
  logits.npy              float32 [generate, vocab]: every step's logits (the prompt's, then
                          each generated token's)
  reference/step<k>/      per call of the card: input_ids.raw, position_ids.raw (int64, as the
                          card sees them), and logits.raw (float32) for the last prefill call
                          and every decode step
  generation.json         a qaic-runner batch JSON over reference/: one IO set per call
  config.json             the model's parameters, the prompt, the tokens, the calls; written last
"""
import argparse
import json
import pathlib
import sys
import time
import types

import numpy
import torch

import mxfp6
from llm_convention import PAD_TOKEN, prefill_calls, reference_digest, write_batch_jsons, write_raw

NUMPY_DTYPES = {"float16": numpy.float16, "float32": numpy.float32}
# Rows of a weight rounded at once: a multiple of the 32-row MXFP6 block, so that blocks never
# straddle two pieces, and small enough that the rounding's float32 temporaries stay small.
ROUNDING_ROWS = 256


class Weights:
    """The model's tensors as memory maps of its external data (or of the rounded copy)."""

    def __init__(self, model_dir):
        config = model_dir / "config.json"
        if not config.is_file():
            raise SystemExit(f"llama_reference: {config}: no such file (not a complete export_llama.py output)")
        self.config = json.loads(config.read_text())
        self.parameters = self.config["parameters"]
        self.dtype = NUMPY_DTYPES[self.parameters["dtype"]]
        self.data = model_dir / self.config["data"]
        self.tensors = {t["name"]: dict(t, dtype=self.parameters["dtype"], file=str(self.data))
                        for t in self.config["tensors"]}

    def array(self, name):
        entry = self.tensors[name]
        return numpy.memmap(entry["file"], dtype=NUMPY_DTYPES[entry["dtype"]], mode="r", offset=entry["offset"],
                            shape=tuple(entry["shape"]))

    def tensor(self, name):
        """One tensor as a float32 torch tensor (a copy; the map is released)."""
        return torch.from_numpy(numpy.array(self.array(name), dtype=numpy.float32))

    @staticmethod
    def write_rounded(file, source, element, dtype):
        """Writes `source` rounded through MXFP6 as `dtype`, ROUNDING_ROWS rows at a time; False
        (the file then incomplete) as soon as a rounded value does not fit `dtype` exactly."""
        for row in range(0, source.shape[0], ROUNDING_ROWS):
            piece = mxfp6.round_weight(source[row:row + ROUNDING_ROWS], element)
            narrow = piece.astype(dtype)
            if not numpy.array_equal(narrow.astype(numpy.float32), piece):
                return False
            file.write(memoryview(numpy.ascontiguousarray(narrow)))
        return True

    def round_matmuls(self, out, element):
        """Rounds every MatMul weight through MXFP6 into `out`, one at a time; later reads of
        those weights read the rounded copy."""
        manifest = out.with_suffix(".json")
        stat = self.data.stat()
        key = {"data": str(self.data), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "format": element.name}
        if manifest.exists() and out.exists():
            saved = json.loads(manifest.read_text())
            if saved["key"] == key:
                self.tensors.update(saved["tensors"])
                return
        rounded = {}
        with open(out, "wb") as file:
            for name in [name for name, entry in self.tensors.items() if entry["kind"] == "matmul"]:
                source = self.array(name)
                offset = file.tell()
                stored_dtype = numpy.dtype(self.dtype)
                if not self.write_rounded(file, source, element, stored_dtype):
                    # A value the stored type cannot hold exactly: the whole tensor in float32.
                    file.seek(offset)
                    file.truncate()
                    stored_dtype = numpy.dtype(numpy.float32)
                    self.write_rounded(file, source, element, stored_dtype)
                rounded[name] = {"name": name, "kind": "matmul", "shape": list(source.shape), "offset": offset,
                                 "length": file.tell() - offset, "dtype": stored_dtype.name, "file": str(out)}
        manifest.write_text(json.dumps({"key": key, "tensors": rounded}, indent=1) + "\n")
        self.tensors.update(rounded)


def matmul(x, weight):
    """x [rows, K] @ weight [K, N]. Many rows go through oneDNN's linear when torch has it:
    Debian's torch multiplies with the reference BLAS, six times slower on a 128-token prefill."""
    if x.shape[0] >= 16 and torch.backends.mkldnn.is_available():
        transposed = weight.t().contiguous().to_mkldnn()
        return torch._C._nn.mkldnn_linear(x.contiguous().to_mkldnn(), transposed, None).to_dense()
    return x @ weight


def rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rotary(weights, positions):
    """The rows of the model's own cos and sin tables at `positions`, as the graph gathers them
    (stored in the weights' type, so both sides rotate by the same values)."""
    rows = numpy.asarray(positions)
    return tuple(torch.from_numpy(numpy.array(weights.array(name)[rows], dtype=numpy.float32))
                 for name in ("rotary.cos", "rotary.sin"))


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


class Decoder:
    """The decoder's calls over a float32 KV cache [layers][heads, ctx_len, head_dim]."""

    def __init__(self, weights):
        self.weights = weights
        p = self.p = weights.parameters
        self.head_dim = p["hidden"] // p["heads"]
        shape = (p["heads"], p["ctx_len"], self.head_dim)
        self.keys = [torch.zeros(shape) for _ in range(p["layers"])]
        self.values = [torch.zeros(shape) for _ in range(p["layers"])]

    def __call__(self, ids, positions):
        """The logits (float32 [vocab]) of the largest position; the rows at `positions` of the
        cache written."""
        p, w = self.p, self.weights
        heads, head_dim, eps = p["heads"], self.head_dim, p["rms_eps"]
        count = len(ids)
        table = w.array("embed_tokens.weight")
        x = torch.from_numpy(numpy.array(table[numpy.asarray(ids)], dtype=numpy.float32))
        cos, sin = rotary(w, positions)
        index = torch.tensor(positions)
        attend = torch.arange(p["ctx_len"])[None, :] <= index[:, None]
        for i in range(p["layers"]):
            prefix = f"layers.{i}."
            h = rms_norm(x, w.tensor(prefix + "input_norm.weight"), eps)

            def heads_first(name, h=h, prefix=prefix):
                projected = matmul(h, w.tensor(prefix + f"attention.{name}.weight"))
                return projected.view(count, heads, head_dim).transpose(0, 1)

            q = rotate(heads_first("q"), cos, sin)
            self.keys[i][:, index] = rotate(heads_first("k"), cos, sin)
            self.values[i][:, index] = heads_first("v")
            scores = q @ self.keys[i].transpose(1, 2) / numpy.sqrt(head_dim)
            scores = scores.masked_fill(~attend[None], float("-inf"))
            attention = torch.softmax(scores, dim=-1) @ self.values[i]
            attention = attention.transpose(0, 1).reshape(count, p["hidden"])
            x = x + matmul(attention, w.tensor(prefix + "attention.o.weight"))
            h = rms_norm(x, w.tensor(prefix + "post_attention_norm.weight"), eps)
            gate = matmul(h, w.tensor(prefix + "mlp.gate.weight"))
            up = matmul(h, w.tensor(prefix + "mlp.up.weight"))
            x = x + matmul(torch.nn.functional.silu(gate) * up, w.tensor(prefix + "mlp.down.weight"))
        last = x[int(numpy.argmax(positions))]
        return rms_norm(last, w.tensor("norm.weight"), eps) @ w.tensor("lm_head.weight")


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", type=pathlib.Path, help="export_llama.py's output directory")
    parser.add_argument("out", type=pathlib.Path, help="output directory (created)")
    parser.add_argument("--prompt-len", type=int, default=128, help="prompt tokens (default 128)")
    parser.add_argument("--generate", type=int, default=32, help="tokens to generate (default 32)")
    parser.add_argument("--prompt-seed", type=int, default=0, help="seed of the prompt (default 0)")
    parser.add_argument("--weights", choices=["plain", "mxfp6"], default="plain",
                        help="the weights as stored (plain, default) or rounded through MXFP6 (mxfp6)")
    parser.add_argument("--mxfp6-format", choices=sorted(mxfp6.FORMATS), default="e2m3",
                        help="the MXFP6 element encoding (default e2m3)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: every core)")
    args = parser.parse_args(argv)
    for name in ("prompt_len", "generate"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv):
    args = parse_arguments(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    weights = Weights(args.model)
    p = weights.parameters
    if args.prompt_len + args.generate - 1 > p["ctx_len"]:
        raise SystemExit(f"--prompt-len + --generate - 1 ({args.prompt_len + args.generate - 1}) exceeds the "
                         f"model's ctx_len ({p['ctx_len']})")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "config.json").unlink(missing_ok=True)
    started = time.monotonic()
    if args.weights == "mxfp6":
        weights.round_matmuls(args.out / "rounded.data", mxfp6.FORMATS[args.mxfp6_format])
    rounding = time.monotonic() - started
    prompt = [int(t) for t in numpy.random.default_rng(args.prompt_seed).integers(0, p["vocab"], args.prompt_len)]
    sizes = types.SimpleNamespace(layers=p["layers"], hidden=p["hidden"], heads=p["heads"], ctx_len=p["ctx_len"],
                                  vocab=p["vocab"], prefill_len=p["prefill_len"], generate=args.generate,
                                  convention="efficient-transformers", out=args.out)
    calls = prefill_calls(sizes, prompt)
    chunks = len(calls)
    decoder = Decoder(weights)
    tokens, all_logits = [], []
    started = time.monotonic()
    with torch.no_grad():
        # The card's prefill calls, recorded for qaic-runner; the reference runs the prompt at
        # once (the same logits at its last position: attention is causal, and a call's rows see
        # the rows of earlier calls through the cache), which is what it compares.
        for step, (ids, positions) in enumerate(calls):
            directory = args.out / "reference" / f"step{step}"
            write_raw(directory / "input_ids.raw", numpy.array([ids], dtype=numpy.int64))
            write_raw(directory / "position_ids.raw", numpy.array([positions], dtype=numpy.int64))
        step, ids, positions = chunks - 1, prompt, list(range(len(prompt)))
        while True:
            logits = decoder(ids, positions).numpy().astype(numpy.float32)
            directory = args.out / "reference" / f"step{step}"
            write_raw(directory / "logits.raw", logits)
            all_logits.append(logits)
            tokens.append(int(numpy.argmax(logits)))
            if len(tokens) == args.generate:
                break
            step += 1
            ids, positions = [tokens[-1]], [positions[-1] + 1]
            directory = args.out / "reference" / f"step{step}"
            write_raw(directory / "input_ids.raw", numpy.array([ids], dtype=numpy.int64))
            write_raw(directory / "position_ids.raw", numpy.array([positions], dtype=numpy.int64))
    seconds = time.monotonic() - started
    numpy.save(args.out / "tokens.npy", numpy.array(tokens, dtype=numpy.int64))
    numpy.save(args.out / "logits.npy", numpy.stack(all_logits).astype(numpy.float32))
    write_batch_jsons(sizes, chunks)
    config = {"model": str(args.model.resolve()), "parameters": p, "weights": args.weights,
              "mxfp6_format": args.mxfp6_format if args.weights == "mxfp6" else None, "prompt_len": args.prompt_len,
              "prompt_seed": args.prompt_seed, "generate": args.generate, "prefill_len": p["prefill_len"],
              "prefill_chunks": chunks, "pad_token": PAD_TOKEN, "prompt": prompt, "tokens": tokens,
              "seconds": {"rounding": rounding, "generation": seconds}, "sources": reference_digest()}
    # Written last: its presence says the directory is complete.
    (args.out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    print(f"{args.out}: {args.weights} weights; prompt of {len(prompt)} in {chunks} calls; greedy tokens {tokens} "
          f"({seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
