#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Exports a small GPT-style decoder in the KV-cache convention the card's LLM flow uses, and
runs PyTorch's own greedy generation with it as the reference.

    /usr/bin/python3 export_decoder.py OUTDIR [--layers 2] [--hidden 64] [--heads 4]
        [--ctx-len 32] [--vocab 128] [--prefill-len 8] [--generate 8] [--seed 0]
        [--cache-write scatter_elements|scatter_nd]
        [--convention plain|efficient-transformers] [--prompt-len N]

The model (random weights from --seed, built from torch.nn) has
  inputs   input_ids     int64 [batch_size, seq_len]
           position_ids  int64 [batch_size, seq_len]
           past_key.<i>, past_value.<i>   float [batch_size, heads, ctx_len, head_dim], per layer
  outputs  logits        float [batch_size, 1, vocab]: the token at the largest position only
           past_key.<i>_RetainedState, past_value.<i>_RetainedState: the caches with this call's
                         keys and values written at position_ids
batch_size, seq_len and ctx_len are symbolic dims of the ONNX file. The keys and values are
written into the cache with ScatterElements (torch's scatter) or, with --cache-write scatter_nd,
ScatterND (torch's index_put), and a query at position p
attends to the cache entries at positions <= p, so one model serves prefill (seq_len = prompt
length) and decode (seq_len = 1, the next position).

--convention efficient-transformers exports the same decoder the way efficient-transformers'
exports are built (docs/llm.md, "The efficient-transformers convention"): the prompt
(--prompt-len tokens) is run in chunks of --prefill-len, the last one padded with position -1;
the cache is written with ScatterND over (batch, head, position) tuples whose position is INT32_MAX
for a padding row, and read back with GatherND (batch_dims 2) at every position up to the call's
largest one and at INT32_MAX beyond it; logits are those of the largest position.

OUTDIR receives
  decoder.onnx            the model
  specializations.json    for qaic-exec -network-specialization-config: prefill and decode
  config.json             the sizes, and the prompt
  reference/              PyTorch's greedy generation: tokens.txt (the prompt's length, the
                          prompt, then the generated tokens, one per line), and per step k
                          (0 = prefill):
                          step<k>/<name>.raw for every input and output of that call, raw
                          little-endian in the buffer's type
  prefill.json, decode.json
                          qaic-runner batch JSONs (seed 000) over reference/ for two programs
                          compiled with static shapes (-onnx-define-symbol), KV cache in the IO
  generation.json         one batch JSON for one program compiled with -retained-state and the
                          specializations: IO set 0 the prefill, then one IO set per decode step;
                          only input_ids, position_ids and logits cross to the device
With --convention efficient-transformers, reference step k < chunks is prefill chunk k,
generation.json holds one IO set per chunk, prefill.json and decode.json are not written, and
custom_io.yaml lists the cache buffers as float16 as efficient-transformers writes it for
-custom-IO-list-file.
"""
import argparse
import json
import math
import pathlib
import sys
import warnings

import onnx
import torch
from torch import nn

from llm_convention import (INVALID_INDEX, PAD_TOKEN, io_names, prefill_calls, write_batch_jsons, write_custom_io,
                            write_raw, write_specializations)


def write_cache_scatter_elements(cache, position_ids, new):
    """cache[b, h, position_ids[b, s], :] = new[b, h, s, :] as torch.scatter: ScatterElements."""
    return cache.scatter(2, position_ids[:, None, :, None].expand_as(new), new)


def write_cache_scatter_nd(cache, position_ids, new):
    """The same write as index_put over (batch, head, position): ScatterND, as the vendor's
    CtxScatter lowers."""
    batch, heads = new.shape[0], new.shape[1]
    return cache.index_put((torch.arange(batch)[:, None, None], torch.arange(heads)[None, :, None],
                            position_ids[:, None, :]), new)


CACHE_WRITES = {"scatter_elements": write_cache_scatter_elements, "scatter_nd": write_cache_scatter_nd}

class ScatterRows(torch.autograd.Function):
    """ONNX ScatterND of `updates` into `cache` at the (batch, head, position) tuples `indices`
    [b, h, s, 3]; a tuple holding INT32_MAX writes nothing, as the card does."""

    @staticmethod
    def forward(ctx, cache, indices, updates):
        written = cache.clone()
        valid = (indices != INVALID_INDEX).all(dim=-1)
        rows = indices[valid]
        written[rows[:, 0], rows[:, 1], rows[:, 2]] = updates[valid]
        return written

    @staticmethod
    def symbolic(g, cache, indices, updates):
        return g.op("ScatterND", cache, indices, updates).setTypeAs(cache)


class GatherPositions(torch.autograd.Function):
    """ONNX GatherND with batch_dims 2: per (batch, head), the cache rows at `indices` [b, h, n, 1];
    INT32_MAX reads zeros, as the card does."""

    @staticmethod
    def forward(ctx, cache, indices):
        positions = indices[..., 0]
        valid = positions != INVALID_INDEX
        safe = torch.where(valid, positions, torch.zeros_like(positions))
        read = torch.gather(cache, 2, safe[..., None].expand(-1, -1, -1, cache.shape[3]))
        return read.masked_fill(~valid[..., None], 0.0)

    @staticmethod
    def symbolic(g, cache, indices):
        return g.op("GatherND", cache, indices, batch_dims_i=2).setTypeAs(cache)


def write_cache_marked(cache, position_ids, new):
    """The cache write of efficient-transformers' exports: ScatterND over (batch, head, position),
    a padding row (position -1) given position INT32_MAX so that it writes nothing."""
    batch, heads, seq = new.shape[0], new.shape[1], new.shape[2]
    positions = position_ids.masked_fill(position_ids < 0, INVALID_INDEX)
    shape = (batch, heads, seq)
    indices = torch.stack((torch.arange(batch)[:, None, None].expand(shape),
                           torch.arange(heads)[None, :, None].expand(shape),
                           positions[:, None, :].expand(shape)), dim=-1)
    return ScatterRows.apply(cache, indices, new)


def read_cache_marked(cache, position_ids):
    """The cache read of efficient-transformers' exports: GatherND of every cache position up to
    the call's largest position, INT32_MAX (zeros) beyond it."""
    batch, heads, ctx_len = cache.shape[0], cache.shape[1], cache.shape[2]
    positions = torch.arange(ctx_len)[None, None, :]
    beyond = positions > position_ids.max(dim=1, keepdim=True).values[:, :, None]
    indices = torch.where(beyond, torch.full_like(positions, INVALID_INDEX), positions)
    return GatherPositions.apply(cache, indices.expand(batch, heads, ctx_len)[..., None])


class Block(nn.Module):
    def __init__(self, hidden, heads, write_cache, read_cache=None, masked_value=None):
        super().__init__()
        self.write_cache = write_cache
        # None: attention reads the written cache itself (the plain convention).
        self.read_cache = read_cache
        self.masked_value = torch.finfo(torch.float32).min if masked_value is None else masked_value
        self.heads = heads
        self.head_dim = hidden // heads
        self.ln_attention = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.projection = nn.Linear(hidden, hidden)
        self.ln_mlp = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))

    def split_heads(self, x):
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x, position_ids, attend, past_key, past_value):
        q, k, v = self.qkv(self.ln_attention(x)).chunk(3, dim=-1)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        # Each new key and value goes to its own position of the cache.
        key = self.write_cache(past_key, position_ids, k)
        value = self.write_cache(past_value, position_ids, v)
        read_key, read_value = key, value
        if self.read_cache is not None:
            read_key, read_value = self.read_cache(key, position_ids), self.read_cache(value, position_ids)
        scores = torch.matmul(q, read_key.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(~attend, self.masked_value)
        attention = torch.matmul(torch.softmax(scores, dim=-1), read_value)
        batch, _, seq, _ = attention.shape
        x = x + self.projection(attention.transpose(1, 2).reshape(batch, seq, self.heads * self.head_dim))
        x = x + self.mlp(self.ln_mlp(x))
        return x, key, value


class Decoder(nn.Module):
    def __init__(self, layers, hidden, heads, ctx_len, vocab, cache_write="scatter_elements", convention="plain"):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden ({hidden}) must be a multiple of heads ({heads})")
        self.ctx_len = ctx_len
        self.convention = convention
        self.token_embedding = nn.Embedding(vocab, hidden)
        self.position_embedding = nn.Embedding(ctx_len, hidden)
        if convention == "efficient-transformers":
            # A finite mask value: a padding query sees no position at all, and its softmax must
            # stay finite also where the network computes in float16.
            def block():
                return Block(hidden, heads, write_cache_marked, read_cache_marked, -10000.0)
        else:
            def block():
                return Block(hidden, heads, CACHE_WRITES[cache_write])
        self.blocks = nn.ModuleList(block() for _ in range(layers))
        self.ln_final = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids, position_ids, *past):
        """past: past_key.0, past_value.0, past_key.1, ... Returns logits and the new caches in
        the same order."""
        if self.convention == "efficient-transformers":
            # Indexing the table, not nn.Embedding: a padding position (-1) reads the last row, as
            # ONNX's Gather does, where nn.Embedding would refuse it. Only padding rows read it.
            x = self.token_embedding(input_ids) + self.position_embedding.weight[position_ids]
        else:
            x = self.token_embedding(input_ids) + self.position_embedding(position_ids)
        # Query at position p sees the cache positions 0..p.
        cache_positions = torch.arange(past[0].shape[2])
        attend = (cache_positions[None, None, None, :] <= position_ids[:, None, :, None])
        caches = []
        for i, block in enumerate(self.blocks):
            x, key, value = block(x, position_ids, attend, past[2 * i], past[2 * i + 1])
            caches += [key, value]
        # Only the token at the largest position is predicted from.
        last = position_ids.argmax(dim=1, keepdim=True)[:, :, None].expand(-1, 1, x.shape[2])
        x = torch.gather(x, 1, last)
        return (self.lm_head(self.ln_final(x)), *caches)


def build_model(layers, hidden, heads, ctx_len, vocab, seed, cache_write="scatter_elements", convention="plain"):
    """The decoder with its weights from `seed`: the same call gives the same model."""
    torch.manual_seed(seed)
    return Decoder(layers, hidden, heads, ctx_len, vocab, cache_write, convention).eval()


def empty_cache(args, batch):
    shape = (batch, args.heads, args.ctx_len, args.hidden // args.heads)
    return [torch.zeros(shape) for _ in range(2 * args.layers)]


def export(model, args, path):
    inputs, outputs = io_names(args.layers)
    sample_ids = torch.zeros((1, args.prefill_len), dtype=torch.int64)
    sample_positions = torch.arange(args.prefill_len, dtype=torch.int64)[None, :]
    axes = {"input_ids": {0: "batch_size", 1: "seq_len"}, "position_ids": {0: "batch_size", 1: "seq_len"},
            "logits": {0: "batch_size"}}
    for name in inputs[2:] + outputs[1:]:
        axes[name] = {0: "batch_size", 2: "ctx_len"}
    with warnings.catch_warnings():
        # torch 1.13 announces that the g.op() of ScatterRows' and GatherPositions' symbolic
        # functions moves; it is what this torch has.
        warnings.simplefilter("ignore", FutureWarning)
        torch.onnx.export(model, (sample_ids, sample_positions, *empty_cache(args, 1)), str(path),
                          input_names=inputs, output_names=outputs, dynamic_axes=axes, opset_version=13,
                          do_constant_folding=True)
    # The tracer names logits' dim 1 as if it varied; it is the one predicted token.
    graph = onnx.load(str(path))
    graph.graph.output[0].type.tensor_type.shape.dim[1].dim_value = 1
    onnx.save(graph, str(path))


def generate(model, args, prompt):
    """Greedy generation, the model's own cache fed back; every call's inputs and outputs are
    written under reference/step<k>/ (the prefill calls first)."""
    inputs, outputs = io_names(args.layers)
    cache = empty_cache(args, 1)
    calls = [(torch.tensor([ids], dtype=torch.int64), torch.tensor([positions], dtype=torch.int64))
             for ids, positions in prefill_calls(args, prompt)]
    tokens = []
    with torch.no_grad():
        for step in range(len(calls) + args.generate - 1):
            ids, positions = calls[step]
            results = model(ids, positions, *cache)
            directory = args.out / "reference" / f"step{step}"
            for name, tensor in zip(inputs, (ids, positions, *cache)):
                write_raw(directory / f"{name}.raw", tensor)
            for name, tensor in zip(outputs, results):
                write_raw(directory / f"{name}.raw", tensor)
            cache = list(results[1:])
            if step + 1 < len(calls):
                continue  # a prefill chunk before the last predicts nothing the loop uses
            token = int(results[0][0, -1].argmax())
            tokens.append(token)
            calls.append((torch.tensor([[token]], dtype=torch.int64),
                          torch.tensor([[int(positions.max()) + 1]], dtype=torch.int64)))
    return tokens


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=pathlib.Path, help="output directory (created)")
    parser.add_argument("--layers", type=int, default=2, help="decoder blocks (default 2)")
    parser.add_argument("--hidden", type=int, default=64, help="hidden size (default 64)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    parser.add_argument("--ctx-len", type=int, default=32, help="KV cache length (default 32)")
    parser.add_argument("--vocab", type=int, default=128, help="vocabulary size (default 128)")
    parser.add_argument("--prefill-len", type=int, default=8,
                        help="prompt length, the prefill specialization's seq_len (default 8)")
    parser.add_argument("--generate", type=int, default=8,
                        help="tokens of the reference generation, prefill's included (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the prompt (default 0)")
    parser.add_argument("--cache-write", choices=sorted(CACHE_WRITES), default="scatter_elements",
                        help="how the model writes the cache: torch.scatter, exported as ScatterElements "
                             "(default), or index_put, exported as ScatterND (plain convention only)")
    parser.add_argument("--convention", choices=["plain", "efficient-transformers"], default="plain",
                        help="plain (default), or efficient-transformers': chunked prefill padded with "
                             "position -1, INT32_MAX-marked ScatterND writes and GatherND reads")
    parser.add_argument("--prompt-len", type=int,
                        help="prompt length (default --prefill-len); efficient-transformers convention "
                             "only, where the prompt is run in chunks of --prefill-len")
    args = parser.parse_args(argv)
    if args.prompt_len is None:
        args.prompt_len = args.prefill_len
    elif args.convention == "plain" and args.prompt_len != args.prefill_len:
        parser.error("--prompt-len differs from --prefill-len: the plain convention runs the prompt in one call")
    if args.convention == "efficient-transformers":
        args.cache_write = "scatter_nd"
    for name in ("layers", "hidden", "heads", "ctx_len", "vocab", "prefill_len", "generate", "prompt_len"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.hidden % args.heads:
        parser.error(f"--hidden ({args.hidden}) must be a multiple of --heads ({args.heads})")
    if args.prompt_len + args.generate - 1 > args.ctx_len:
        parser.error(f"--prompt-len + --generate - 1 ({args.prompt_len + args.generate - 1}) "
                     f"exceeds --ctx-len ({args.ctx_len})")
    return args


def main(argv):
    args = parse_arguments(argv)
    torch.set_num_threads(1)
    model = build_model(args.layers, args.hidden, args.heads, args.ctx_len, args.vocab, args.seed, args.cache_write,
                        args.convention)
    prompt = torch.randint(0, args.vocab, (args.prompt_len,), generator=torch.Generator().manual_seed(args.seed))
    prompt = [int(t) for t in prompt]
    args.out.mkdir(parents=True, exist_ok=True)
    export(model, args, args.out / "decoder.onnx")
    write_specializations(args)
    if args.convention == "efficient-transformers":
        write_custom_io(args)
    tokens = generate(model, args, prompt)
    (args.out / "reference" / "tokens.txt").write_text("".join(f"{t}\n" for t in [len(prompt)] + prompt + tokens))
    chunks = len(prefill_calls(args, prompt))
    write_batch_jsons(args, chunks)
    config = {key: getattr(args, key) for key in ("layers", "hidden", "heads", "ctx_len", "vocab", "prefill_len",
                                                  "generate", "seed", "cache_write", "convention", "prompt_len")}
    config["prompt"] = prompt
    config["tokens"] = tokens
    # Reference steps 0..prefill_chunks-1 are the prefill calls; position_ids are int64, padding
    # rows hold pad_token at position -1.
    config["prefill_chunks"] = chunks
    config["pad_token"] = PAD_TOKEN
    # Written last: its presence says the directory is complete.
    (args.out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    print(f"{args.out}: decoder.onnx ({args.layers} layers, hidden {args.hidden}, ctx_len {args.ctx_len}); "
          f"prompt {prompt}; greedy tokens {tokens}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
