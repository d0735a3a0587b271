#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The real-size flow (make llm-7b): export_llama.py's decoder generated, compiled with
efficient-transformers' command line, run on an emulated card through qaic-runner and through
qaic.Session, checked against llama_reference.py, with its time and memory measured.

    /usr/bin/python3 run_llama.py --build BUILD --dir DIR [export_llama.py's size options]
        [--prompt-len 128] [--generate 32] [--reference-weights plain|mxfp6] [--cores 16]

  1. DIR/model: export_llama.py (skipped when DIR/model holds the same model).
  2. DIR/reference-<weights>: llama_reference.py's greedy generation (skipped when done).
  3. DIR/qpc: qaic-exec -m=... -aic-hw -aic-hw-version=2.0 -network-specialization-config=...
     -convert-to-fp16 -retained-state -aic-num-cores=N -custom-IO-list-file=... -compile-only
     -aic-binary-dir=... -mxfp6-matmul, as efficient-transformers' compile helper runs it.
  4. qaic-emu on a temporary root; qaic-runner runs the reference's calls (generation.json:
     the prompt's prefill chunks, then each reference token) and writes every call's logits;
     a client loop with qaic.Session generates greedily, timing prefill and each decode step.
  5. Both must give the reference's tokens, and every call's logits must be within --bound
     (max |device - reference| <= bound * max |reference|) of the reference's.
Prints a table and writes DIR/summary.json. Peak memory is read from /proc/<pid>/status every
50 ms: VmHWM (the kernel's own peak of the resident set) and the peak of RssAnon (resident
private memory: the resident set beyond file-backed mappings such as mapped weights, and beyond
shared memory). The memory bandwidth is that of a numpy copy of 1 GiB (bytes read plus bytes
written, per second, best of 3); a decode step is compared with the time to read the bytes of
the weights it uses once at that bandwidth.
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy

from llm_convention import reference_digest

HERE = pathlib.Path(__file__).resolve().parent
SIZE_OPTIONS = ("layers", "hidden", "heads", "intermediate", "vocab", "ctx_len", "prefill_len", "dtype", "seed")
# MXFP6 stores 32 elements of 6 bits and one 8-bit scale per block.
MXFP6_BYTES_PER_ELEMENT = (32 * 6 + 8) / 8 / 32

# efficient-transformers' generation loop against qaic.Session: the prompt padded to whole
# prefill chunks (pad token at position -1), one run per chunk, then one run per token. argv:
# program, the reference's config.json, the output .npy of every call's logits. Prints JSON:
# the tokens, the prefill's time and each decode step's time (ms).
SESSION_LOOP = r"""
import json, sys, time
import numpy as np
import qaic

program, config, out = sys.argv[1], json.loads(open(sys.argv[2]).read()), sys.argv[3]
session = qaic.Session(program, data_path_timeout_ms=int(sys.argv[4]))
prompt, chunk = config["prompt"], config["prefill_len"]
padded = -(-len(prompt) // chunk) * chunk
ids = np.full((1, padded), config["pad_token"], np.int64)
ids[0, :len(prompt)] = prompt
positions = np.where(np.arange(padded) < len(prompt), np.arange(padded), -1)[None, :].astype(np.int64)
calls = []
start = time.perf_counter()
for k in range(padded // chunk):
    part = slice(k * chunk, (k + 1) * chunk)
    calls.append(session.run({"input_ids": ids[:, part], "position_ids": positions[:, part]})["logits"].reshape(-1))
prefill_ms = (time.perf_counter() - start) * 1e3
tokens, steps = [int(calls[-1].argmax())], []
position = len(prompt)
while len(tokens) < config["generate"]:
    start = time.perf_counter()
    logits = session.run({"input_ids": np.array([[tokens[-1]]], np.int64),
                          "position_ids": np.array([[position]], np.int64)})["logits"].reshape(-1)
    steps.append((time.perf_counter() - start) * 1e3)
    calls.append(logits)
    tokens.append(int(logits.argmax()))
    position += 1
np.save(out, np.stack(calls).astype(np.float32))
print(json.dumps({"tokens": tokens, "prefill_ms": prefill_ms, "step_ms": steps}))
"""


class MemoryWatch:
    """Samples /proc/<pid>/status until stopped: the peak of RssAnon, and the last VmHWM."""

    def __init__(self, pid, interval=0.05):
        self.pid, self.interval = pid, interval
        self.peak_anon_kib = 0
        self.hwm_kib = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True)
        self.thread.start()

    def sample(self):
        try:
            lines = pathlib.Path(f"/proc/{self.pid}/status").read_text().splitlines()
        except (FileNotFoundError, ProcessLookupError):
            return
        fields = {line.split(":")[0]: line.split(":")[1].split() for line in lines if ":" in line}
        if "RssAnon" in fields:
            self.peak_anon_kib = max(self.peak_anon_kib, int(fields["RssAnon"][0]))
        if "VmHWM" in fields:
            self.hwm_kib = max(self.hwm_kib, int(fields["VmHWM"][0]))

    def watch(self):
        while not self.stopping.is_set():
            self.sample()
            self.stopping.wait(self.interval)

    def stop(self):
        self.sample()
        self.stopping.set()
        self.thread.join()
        return {"peak_rss_anon_mib": self.peak_anon_kib / 1024, "vm_hwm_mib": self.hwm_kib / 1024}


def run_measured(cmd, env=None):
    """Runs `cmd` to its end, its memory watched; returns (stdout, seconds, memory) and stops the
    flow when it fails. The kernel's own peak (wait4's ru_maxrss) backs the sampled VmHWM of a
    process too short for a sample."""
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen([str(c) for c in cmd], stdout=stdout, stderr=stderr, text=True, env=env)
        watch = MemoryWatch(process.pid)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        memory = watch.stop()
        memory["vm_hwm_mib"] = max(memory["vm_hwm_mib"], usage.ru_maxrss / 1024)
        stdout.seek(0)
        stderr.seek(0)
        output, errors = stdout.read(), stderr.read()
    if process.returncode != 0:
        sys.exit(f"run_llama: {cmd[0]} exited {process.returncode}:\n{output}{errors}")
    return output, seconds, memory


class EmulatedCard:
    """qaic-emu on a temporary root for the time of a with-block, its memory watched."""

    def __init__(self, build):
        self.build = build

    def __enter__(self):
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="qaic-emu-root."))
        result = subprocess.run([str(self.build / "bin/qaic-emu"), "--root", str(self.root), "--daemon"],
                                capture_output=True, text=True, check=True)
        self.pid = int(result.stdout.strip())
        self.watch = MemoryWatch(self.pid)
        return self

    def env(self, **extra):
        return dict(os.environ, QAIC_ROOT=str(self.root), **{k: str(v) for k, v in extra.items()})

    def __exit__(self, *_):
        self.memory = self.watch.stop()
        os.kill(self.pid, 15)
        for _ in range(100):
            if not pathlib.Path(f"/proc/{self.pid}").exists():
                break
            time.sleep(0.1)
        subprocess.run(["fusermount3", "-u", "-z", str(self.root)], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


def memory_bandwidth():
    """Bytes read plus bytes written per second by a numpy copy of 1 GiB, best of 3."""
    size = 1 << 30
    source = numpy.ones(size // 8, dtype=numpy.float64)
    target = numpy.empty_like(source)
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        numpy.copyto(target, source)
        best = min(best, time.perf_counter() - started)
    return 2 * size / best


def decode_weight_bytes(model_config, weights_mode):
    """The bytes of the weights one decode step reads: every MatMul weight and norm, and one row
    of the embedding; MatMul weights as MXFP6 when they are stored so."""
    p = model_config["parameters"]
    itemsize = 2 if p["dtype"] == "float16" else 4
    total = 0.0
    for tensor in model_config["tensors"]:
        elements = tensor["length"] / itemsize
        if tensor["kind"] == "matmul":
            total += elements * (MXFP6_BYTES_PER_ELEMENT if weights_mode == "mxfp6" else itemsize)
        elif tensor["kind"] == "norm":
            total += tensor["length"]
        elif tensor["kind"] == "embedding":
            total += p["hidden"] * itemsize
    return total


def python_tools_environment():
    """The environment of the pure-Python steps (the export, the PyTorch reference): a caller that
    preloads AddressSanitizer for a sanitized build's qaicrt (its tests do) must not preload it
    into torch, which it does not need and which does not run under it."""
    return {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}


def export(args):
    model = args.dir / "model"
    sizes = [f"--{name.replace('_', '-')}={getattr(args, name)}" for name in SIZE_OPTIONS]
    subprocess.run(["/usr/bin/python3", str(HERE / "export_llama.py"), str(model), *sizes], check=True,
                   env=python_tools_environment())
    return model


def reference(args, model):
    out = args.dir / f"reference-{args.reference_weights}"
    wanted = {"prompt_len": args.prompt_len, "generate": args.generate, "weights": args.reference_weights,
              "prompt_seed": args.prompt_seed, "sources": reference_digest()}
    model_config = json.loads((model / "config.json").read_text())
    try:
        done = json.loads((out / "config.json").read_text())
        same_model = done["parameters"] == model_config["parameters"]
        if same_model and all(done[key] == value for key, value in wanted.items()):
            print(f"{out}: the reference is there")
            return out, done
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        pass
    command = ["/usr/bin/python3", str(HERE / "llama_reference.py"), str(model), str(out),
               f"--prompt-len={args.prompt_len}", f"--generate={args.generate}", f"--prompt-seed={args.prompt_seed}",
               f"--weights={args.reference_weights}", f"--mxfp6-format={args.mxfp6_format}"]
    subprocess.run(command, check=True, env=python_tools_environment())
    return out, json.loads((out / "config.json").read_text())


def compile_command(args, model, qpc):
    """efficient-transformers' compile helper's qaic-exec command, in its order."""
    command = [args.build / "bin/qaic-exec", f"-m={model / 'llama.onnx'}", "-aic-hw", "-aic-hw-version=2.0",
               f"-network-specialization-config={model / 'specializations.json'}", "-convert-to-fp16",
               "-retained-state", f"-aic-num-cores={args.cores}", f"-custom-IO-list-file={model / 'custom_io.yaml'}",
               "-compile-only", f"-aic-binary-dir={qpc}"]
    if args.mxfp6_matmul:
        command.append("-mxfp6-matmul")
    return command


def check_logits(name, got, want, bound):
    """Every call's logits within `bound` of the reference's, relative to its largest magnitude;
    returns the largest relative error."""
    if got.shape != want.shape:
        sys.exit(f"run_llama: {name} gave logits of shape {got.shape}, the reference {want.shape}")
    errors = numpy.max(numpy.abs(got - want), axis=1) / numpy.max(numpy.abs(want), axis=1)
    worst = int(numpy.argmax(errors))
    if errors[worst] > bound:
        sys.exit(f"run_llama: {name}: the logits of call {worst} are {errors[worst]:.3g} (relative) from the "
                 f"reference's, beyond the bound {bound}")
    return float(errors.max())


def run_on_card(args, qpc, ref_dir, ref_config, work):
    calls = ref_config["prefill_chunks"] + ref_config["generate"] - 1
    want_logits = numpy.load(ref_dir / "logits.npy")
    want_tokens = ref_config["tokens"]
    results = {}
    with EmulatedCard(args.build) as card:
        runner_out = work / "runner-out"
        shutil.rmtree(runner_out, ignore_errors=True)
        _, runner_seconds, runner_memory = run_measured(
            [args.build / "bin/qaic-runner", "-t", qpc, "--aic-batch-json-input", ref_dir / "generation.json",
             "-n", calls, "-S", "1", "-T", "1", "-a", "1", "--write-output-dir", runner_out,
             "--write-output-num-samples", calls, "--submit-timeout", args.call_timeout_ms], env=card.env())
        runner_logits = numpy.stack([numpy.fromfile(runner_out / f"logits-inf-{k}.bin", dtype=numpy.float32)
                                     for k in range(calls)])
        # qaic-runner feeds the reference's tokens: each call must predict the next one.
        chunks = ref_config["prefill_chunks"]
        runner_tokens = [int(row.argmax()) for row in runner_logits[chunks - 1:]]
        if runner_tokens != want_tokens:
            sys.exit(f"run_llama: qaic-runner's tokens {runner_tokens} differ from the reference's {want_tokens}")
        results["runner"] = {"seconds": runner_seconds, "memory": runner_memory, "tokens": runner_tokens,
                             "logit_error": check_logits("qaic-runner", runner_logits[chunks - 1:],
                                                         want_logits, args.bound)}
        session_out = work / "session-logits.npy"
        stdout, session_seconds, session_memory = run_measured(
            ["/usr/bin/python3", "-c", SESSION_LOOP, qpc, ref_dir / "config.json", session_out, args.call_timeout_ms],
            env=card.env(PYTHONPATH=args.build / "python"))
        session = json.loads(stdout.strip().splitlines()[-1])
        if session["tokens"] != want_tokens:
            sys.exit(f"run_llama: qaic.Session's tokens {session['tokens']} differ from the reference's {want_tokens}")
        session_logits = numpy.load(session_out)
        results["session"] = {"seconds": session_seconds, "memory": session_memory, "tokens": session["tokens"],
                              "prefill_ms": session["prefill_ms"],
                              "decode_step_ms": statistics.median(session["step_ms"]),
                              "logit_error": check_logits("qaic.Session", session_logits[chunks - 1:],
                                                          want_logits, args.bound)}
    results["emulator"] = {"memory": card.memory}
    return results


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=pathlib.Path, default=pathlib.Path("build"),
                        help="the build tree (default build)")
    parser.add_argument("--dir", type=pathlib.Path, default=pathlib.Path("build/llm-7b"),
                        help="where the model, the reference and the program go (default build/llm-7b)")
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--intermediate", type=int, default=11008)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--ctx-len", type=int, default=1024)
    parser.add_argument("--prefill-len", type=int, default=32)
    parser.add_argument("--dtype", choices=["float16", "float32"], default="float16")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights (default 0)")
    parser.add_argument("--prompt-len", type=int, default=128, help="prompt tokens (default 128)")
    parser.add_argument("--prompt-seed", type=int, default=0, help="seed of the prompt (default 0)")
    parser.add_argument("--generate", type=int, default=32, help="tokens to generate (default 32)")
    parser.add_argument("--cores", type=int, default=16, help="-aic-num-cores (default 16)")
    parser.add_argument("--no-mxfp6-matmul", dest="mxfp6_matmul", action="store_false",
                        help="compile without -mxfp6-matmul")
    parser.add_argument("--reference-weights", choices=["plain", "mxfp6"],
                        help="what the card is checked against: the weights as stored (plain) or rounded "
                             "through MXFP6 (mxfp6: what -mxfp6-matmul stores); default mxfp6, plain with "
                             "--no-mxfp6-matmul")
    parser.add_argument("--mxfp6-format", choices=["e2m3", "e3m2"], default="e2m3",
                        help="MXFP6 element encoding of the reference (default e2m3)")
    parser.add_argument("--call-timeout-ms", type=int, default=600_000,
                        help="how long one call (a prefill chunk, a decode step) may take on the card before "
                             "it counts as lost (default 600000: a 7B prefill chunk on a 2-core host takes "
                             "tens of seconds, far beyond the runtime's 5 s default)")
    parser.add_argument("--bound", type=float, default=0.02,
                        help="largest |device - reference| logit, relative to the reference's largest "
                             "magnitude (default 0.02)")
    args = parser.parse_args(argv)
    if args.reference_weights is None:
        args.reference_weights = "mxfp6" if args.mxfp6_matmul else "plain"
    args.build, args.dir = args.build.resolve(), args.dir.resolve()
    return args


def main(argv):
    args = parse_arguments(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    model = export(args)
    model_config = json.loads((model / "config.json").read_text())
    ref_dir, ref_config = reference(args, model)
    qpc = args.dir / "qpc"
    shutil.rmtree(qpc, ignore_errors=True)
    command = compile_command(args, model, qpc)
    print(" ".join(str(c) for c in command), flush=True)
    _, compile_seconds, compile_memory = run_measured(command)
    results = run_on_card(args, qpc, ref_dir, ref_config, args.dir)
    bandwidth = memory_bandwidth()
    weight_bytes = decode_weight_bytes(model_config, args.reference_weights)
    read_ms = weight_bytes / bandwidth * 1e3
    step_ms = results["session"]["decode_step_ms"]
    summary = {"model": model_config["parameters"], "weights": args.reference_weights,
               "compile_command": [str(c) for c in command], "reference_tokens": ref_config["tokens"],
               "mxfp6_matmul": args.mxfp6_matmul, "prompt_len": args.prompt_len, "generate": args.generate,
               "compile": {"seconds": compile_seconds, "memory": compile_memory}, **results,
               "bandwidth_gb_s": bandwidth / 1e9, "decode_weight_bytes": weight_bytes,
               "decode_weight_read_ms": read_ms, "decode_step_vs_weight_read": step_ms / read_ms}
    (args.dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    mib = "MiB"
    rows = [("compile time", f"{compile_seconds:.1f} s"),
            ("compile peak RSS (VmHWM)", f"{compile_memory['vm_hwm_mib']:.0f} {mib}"),
            ("compile peak RssAnon", f"{compile_memory['peak_rss_anon_mib']:.0f} {mib}"),
            ("emulator peak RSS (VmHWM)", f"{results['emulator']['memory']['vm_hwm_mib']:.0f} {mib}"),
            ("emulator peak RssAnon", f"{results['emulator']['memory']['peak_rss_anon_mib']:.0f} {mib}"),
            ("qaic-runner peak RSS (VmHWM)", f"{results['runner']['memory']['vm_hwm_mib']:.0f} {mib}"),
            ("qaic-runner peak RssAnon", f"{results['runner']['memory']['peak_rss_anon_mib']:.0f} {mib}"),
            ("qaic.Session client peak RSS (VmHWM)", f"{results['session']['memory']['vm_hwm_mib']:.0f} {mib}"),
            ("qaic.Session client peak RssAnon", f"{results['session']['memory']['peak_rss_anon_mib']:.0f} {mib}"),
            (f"prefill ({args.prompt_len} tokens, {ref_config['prefill_chunks']} calls)",
             f"{results['session']['prefill_ms']:.1f} ms"),
            ("decode step (median)", f"{step_ms:.1f} ms"),
            ("memory bandwidth (numpy copy)", f"{bandwidth / 1e9:.2f} GB/s"),
            ("decode step's weights", f"{weight_bytes / 2**20:.0f} {mib}, {read_ms:.1f} ms to read once"),
            ("decode step / weight read", f"{step_ms / read_ms:.2f}x"),
            ("largest logit error (relative)",
             f"{max(results['runner']['logit_error'], results['session']['logit_error']):.3g} "
             f"(bound {args.bound})"),
            ("tokens", f"{args.generate} equal the reference's ({args.reference_weights} weights)")]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
