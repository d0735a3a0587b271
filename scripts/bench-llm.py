#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""make bench, LLM: a GPT-2-small-shaped decoder (12 layers, hidden 768, 12 heads, ctx_len 256,
vocab 50257) generating on the emulated card against PyTorch's own generation with its KV cache,
in the same run and at the same thread count.

  bench-llm.py BUILD_DIR [--threads N] [--tokens N] [--repeat N]

  1. examples/llm/export_decoder.py exports the decoder (cached in BUILD_DIR/tests/bench/llm,
     keyed by the script's contents; about 650 MB) with a 128-token prompt.
  2. qaic-exec compiles it (-aic-num-cores=THREADS) into one program with -retained-state and
     the exporter's specializations (prefill 128, decode 1), and, for reference, into two static
     programs whose KV cache travels in the IO; qaic-emu runs them and examples/llm's
     llm-generate times prefill and decode (medians of --repeat generations of --tokens tokens);
     its tokens must equal PyTorch's.
  3. The same module in PyTorch (torch.set_num_threads(THREADS)) times its prefill and its decode
     steps over its own cache.
  4. On the retained program, a decode step through qaicrt's Program/ExecObj/Queue (the vendor's
     lower-level Python API, as efficient-transformers' session drives it) and through qaic-runner
     (the recorded decode steps, one inference at a time).
Prints the ratios (goals: decode step <= 1.5x PyTorch's, prefill of 128 tokens <= 1.0x, the vendor
API's decode step <= 1.2x qaic-runner's), the bytes moved per decode step between the user's
buffers and the device, and the CPU.
"""
import argparse
import hashlib
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE = pathlib.Path(__file__).resolve().parents[1]
EXPORT = SOURCE / "examples/llm/export_decoder.py"
SHAPE = {"layers": 12, "hidden": 768, "heads": 12, "ctx_len": 256, "vocab": 50257, "prefill_len": 128}
PREFILL = re.compile(r"^prefill: (\d+) tokens in ([\d.]+) ms, (\d+) bytes moved$", re.M)
DECODE = re.compile(r"^decode: (\d+) tokens in ([\d.]+) ms, ([\d.]+) tokens/s, (\d+) bytes moved per step$", re.M)


def cpu_name():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} CPUs"
    return f"{os.cpu_count()} CPUs"


def run(cmd, **kwargs):
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"bench-llm: {cmd[0]} exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return result.stdout


def exported(build, generate):
    args = [f"--{k.replace('_', '-')}={v}" for k, v in SHAPE.items()] + [f"--generate={generate}", "--seed=0"]
    key = hashlib.sha256(EXPORT.read_bytes() + " ".join(args).encode()).hexdigest()[:16]
    out = build / "tests" / "bench" / "llm" / key
    if not (out / "config.json").exists():
        shutil.rmtree(out, ignore_errors=True)
        run(["/usr/bin/python3", EXPORT, out, *args], timeout=1800)
    return out


def compile_retained(build, model, work, threads):
    """One program: the cache retained on the device, prefill and decode as specializations."""
    run([build / "bin/qaic-exec", f"-m={model / 'decoder.onnx'}", f"-aic-binary-dir={work / 'retained'}",
         f"-aic-num-cores={threads}", "-retained-state",
         f"-network-specialization-config={model / 'specializations.json'}"], timeout=1800)
    return [work / "retained"]


def compile_static(build, model, work, threads):
    """A prefill and a decode program with static shapes; the cache is their IO."""
    programs = []
    for name, seq_len in (("prefill", SHAPE["prefill_len"]), ("decode", 1)):
        run([build / "bin/qaic-exec", f"-m={model / 'decoder.onnx'}", f"-aic-binary-dir={work / name}",
             f"-aic-num-cores={threads}", "-onnx-define-symbol=batch_size,1", f"-onnx-define-symbol=seq_len,{seq_len}",
             f"-onnx-define-symbol=ctx_len,{SHAPE['ctx_len']}"], timeout=1800)
        programs.append(work / name)
    return programs


class EmulatedCard:
    """qaic-emu on a root of its own for the time of a with-block; env() is the clients'."""

    def __init__(self, build, work):
        self.build, self.root = build, work / "root"

    def __enter__(self):
        self.root.mkdir(exist_ok=True)
        self.pid = int(run([self.build / "bin/qaic-emu", "--root", self.root, "--daemon"]).strip())
        return self

    def env(self, **extra):
        return dict(os.environ, QAIC_ROOT=str(self.root), **{k: str(v) for k, v in extra.items()})

    def __exit__(self, *_):
        os.kill(self.pid, 15)
        for _ in range(100):
            if not pathlib.Path(f"/proc/{self.pid}").exists():
                break
            time.sleep(0.1)
        subprocess.run(["fusermount3", "-u", "-z", str(self.root)], capture_output=True)


# The decode loop as efficient-transformers' inference session runs it (qaicrt's Program, ExecObj
# and Queue over the aicapi IoDesc, the retained cache's bindings skipped with size-0 buffers),
# after one prefill; prints the median time of a decode step (setData .. getData) in ms.
VENDOR_DECODE = r"""
import json, statistics, sys, time
import numpy as np
import qaicrt
import QAicApi_pb2 as aicapi

program_dir, prompt, steps = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
context = qaicrt.Context(qaicrt.QIDList([0]))
queue = qaicrt.Queue(context, 0)
qpc = qaicrt.Qpc(program_dir)
iodesc = aicapi.IoDesc()
iodesc.ParseFromString(bytes(qpc.getIoDescriptor()[1]))
bindings = iodesc.selected_set.bindings
index = {b.name: b.index for b in bindings}
program = qaicrt.Program(context, 0, qpc, qaicrt.QAicProgramProperties())
assert program.load() == qaicrt.QS_SUCCESS and program.activate() == qaicrt.QS_SUCCESS
exec_obj = qaicrt.ExecObj(context, program)
itemsize = {aicapi.FLOAT_TYPE: 4, aicapi.FLOAT_16_TYPE: 2, aicapi.INT64_I_TYPE: 8, aicapi.INT32_I_TYPE: 4}
qbuffers = [qaicrt.QBuffer(bytes(b.size)) for b in bindings]
dims = qaicrt.BufferDimensionsVecRef([(itemsize[b.type], list(b.dims)) for b in bindings])
for b in bindings:
    if b.name.startswith("past_"):
        qbuffers[b.index], dims[b.index] = qaicrt.QBuffer(b""), (8, [0])
vocab = bindings[index["logits"]].dims[2]
qbuffers[index["logits"]], dims[index["logits"]] = qaicrt.QBuffer(bytes(4 * vocab)), (4, [1, 1, vocab])


def step(ids, positions):
    for name, array in (("input_ids", ids), ("position_ids", positions)):
        qbuffers[index[name]], dims[index[name]] = qaicrt.QBuffer(array.tobytes()), (8, list(array.shape))
    assert exec_obj.setData(qbuffers, dims) == qaicrt.QS_SUCCESS
    assert queue.enqueue(exec_obj) == qaicrt.QS_SUCCESS
    assert exec_obj.waitForCompletion() == qaicrt.QS_SUCCESS
    status, outputs = exec_obj.getData()
    return int(np.frombuffer(bytes(outputs[index["logits"]]), np.float32).argmax())


token = step(np.array([prompt], np.int64), np.arange(len(prompt), dtype=np.int64)[None, :])
times = []
for position in range(len(prompt), len(prompt) + steps):
    start = time.perf_counter()
    token = step(np.array([[token]], np.int64), np.array([[position]], np.int64))
    times.append((time.perf_counter() - start) * 1e3)
print(statistics.median(times))
"""
RUNNER = re.compile(r"^InferenceCnt (\d+) TotalDuration (\d+)us", re.M)


def decode_step_paths(build, card, program, model, config, work):
    """A decode step's time through the vendor's Python API and through qaic-runner (the recorded
    decode steps of generation.json, one inference at a time), on the retained program."""
    steps = config["generate"] - 1
    batch = json.loads((model / "generation.json").read_text())
    decode_only = work / "decode-steps.json"
    sets = batch["IO-files"][-steps:]
    for entry in (entry for io_set in sets for entry in io_set):
        entry["path"] = str(model / entry["path"])  # relative to the export, not to this file
    decode_only.write_text(json.dumps({"IO-files": sets}))
    vendor = run(["/usr/bin/python3", "-c", VENDOR_DECODE, program, json.dumps(config["prompt"]), steps],
                 env=card.env(PYTHONPATH=build / "python"), timeout=3600)
    runner = run([build / "bin/qaic-runner", "-t", program, "--aic-batch-json-input", decode_only,
                  "-n", str(steps * 4), "-S", "1", "-T", "1", "-a", "1"], env=card.env(), timeout=3600)
    counts = RUNNER.search(runner)
    if not counts:
        sys.exit(f"bench-llm: unexpected qaic-runner output:\n{runner}")
    return {"vendor_step_ms": float(vendor.strip()), "runner_step_ms": int(counts.group(2)) / int(counts.group(1)) / 1e3}


def on_device(build, card, programs, config, repeat):
    out = run([build / "bin/llm-generate", "--prompt", ",".join(map(str, config["prompt"])),
               "--tokens", str(config["generate"]), "--repeat", str(repeat), *programs], env=card.env(),
              timeout=3600)
    tokens = [int(t) for t in out.splitlines()[0].split()]
    prefill, decode = PREFILL.search(out), DECODE.search(out)
    if not prefill or not decode:
        sys.exit(f"bench-llm: unexpected llm-generate output:\n{out}")
    steps = int(decode.group(1))
    return {"tokens": tokens, "prefill_ms": float(prefill.group(2)), "decode_step_ms": float(decode.group(2)) / steps,
            "decode_bytes": int(decode.group(4)), "prefill_bytes": int(prefill.group(3))}


def in_pytorch(config, threads, repeat):
    import torch
    sys.path.insert(0, str(EXPORT.parent))
    import export_decoder
    torch.set_num_threads(threads)
    model = export_decoder.build_model(config["layers"], config["hidden"], config["heads"], config["ctx_len"],
                                       config["vocab"], config["seed"])
    head_dim = config["hidden"] // config["heads"]
    prompt = torch.tensor([config["prompt"]], dtype=torch.int64)
    prefill_ms, step_ms, tokens = [], [], []
    with torch.no_grad():
        for _ in range(repeat):
            cache = [torch.zeros(1, config["heads"], config["ctx_len"], head_dim) for _ in range(2 * config["layers"])]
            start = time.perf_counter()
            results = model(prompt, torch.arange(prompt.shape[1])[None, :], *cache)
            prefill_ms.append((time.perf_counter() - start) * 1e3)
            tokens = [int(results[0][0, -1].argmax())]
            for position in range(prompt.shape[1], prompt.shape[1] + config["generate"] - 1):
                start = time.perf_counter()
                results = model(torch.tensor([[tokens[-1]]]), torch.tensor([[position]]), *results[1:])
                step_ms.append((time.perf_counter() - start) * 1e3)
                tokens.append(int(results[0][0, -1].argmax()))
    return {"tokens": tokens, "prefill_ms": statistics.median(prefill_ms), "decode_step_ms": statistics.median(step_ms)}


def verdict(ok):
    return "meets" if ok else "MISSES"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", type=pathlib.Path)
    parser.add_argument("--threads", type=int, default=1,
                        help="PyTorch's threads and the program's NSP cores (default 1: an activation computes "
                             "on one host thread per NSP)")
    parser.add_argument("--tokens", type=int, default=16, help="tokens per generation, the prefill's included")
    parser.add_argument("--repeat", type=int, default=3, help="generations timed on each side (medians)")
    args = parser.parse_args()
    build = args.build.resolve()
    model = exported(build, args.tokens)
    config = json.loads((model / "config.json").read_text())
    work = pathlib.Path(tempfile.mkdtemp(prefix="qaic-bench-llm."))
    try:
        with EmulatedCard(build, work) as card:
            retained = compile_retained(build, model, work, args.threads)
            device = on_device(build, card, retained, config, args.repeat)
            paths = decode_step_paths(build, card, retained[0], model, config, work)
            shutil.rmtree(work / "retained")
            static = on_device(build, card, compile_static(build, model, work, args.threads), config, args.repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    torch_side = in_pytorch(config, args.threads, args.repeat)
    print(f"CPU: {cpu_name()}; GPT-2-small-shaped decoder (12 layers, hidden 768, 12 heads, ctx_len 256, "
          f"vocab 50257), batch 1, {args.threads} thread(s) each side")
    if any(side["tokens"] != config["tokens"] for side in (device, static, torch_side)):
        print(f"TOKENS DIFFER: retained {device['tokens']}, static {static['tokens']}, PyTorch now "
              f"{torch_side['tokens']}, reference {config['tokens']}")
        return 1
    decode = device["decode_step_ms"] / torch_side["decode_step_ms"]
    prefill = device["prefill_ms"] / torch_side["prefill_ms"]
    print(f"decode step: {device['decode_step_ms']:.2f} ms / PyTorch {torch_side['decode_step_ms']:.2f} ms = "
          f"{decode:.2f}x ({verdict(decode <= 1.5)} the <= 1.5x goal)")
    print(f"prefill of {SHAPE['prefill_len']} tokens: {device['prefill_ms']:.1f} ms / PyTorch "
          f"{torch_side['prefill_ms']:.1f} ms = {prefill:.2f}x ({verdict(prefill <= 1.0)} the <= 1.0x goal)")
    print(f"bytes moved per decode step between the user's buffers and the device: {device['decode_bytes']:,} "
          f"(prefill: {device['prefill_bytes']:,}); tokens equal PyTorch's ({len(config['tokens'])})")
    vendor = paths["vendor_step_ms"] / paths["runner_step_ms"]
    print(f"decode step through qaicrt's Program/ExecObj/Queue (efficient-transformers' session): "
          f"{paths['vendor_step_ms']:.2f} ms / qaic-runner {paths['runner_step_ms']:.2f} ms = {vendor:.2f}x "
          f"({verdict(vendor <= 1.2)} the <= 1.2x goal)")
    print(f"  reference, two static programs, the cache in the IO: decode step {static['decode_step_ms']:.2f} ms "
          f"({static['decode_step_ms'] / torch_side['decode_step_ms']:.2f}x), prefill {static['prefill_ms']:.1f} ms "
          f"({static['prefill_ms'] / torch_side['prefill_ms']:.2f}x), {static['decode_bytes']:,} bytes per decode step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
