# SPDX-License-Identifier: Apache-2.0
"""examples/llm/export_decoder.py's output, cached in the build tree for the tests that run it."""
import fcntl
import hashlib
import pathlib
import shutil

from qaic_processes import run

# Small enough to export, compile and run in seconds; two layers exercise the cache per layer.
SMALL_DECODER = ["--layers", "2", "--hidden", "64", "--heads", "4", "--ctx-len", "32", "--vocab", "96",
                 "--prefill-len", "6", "--generate", "10", "--seed", "7"]
# The same decoder in efficient-transformers' convention: a 6-token prompt in prefill chunks of 4,
# the second padded with two rows at position -1.
EFFICIENT_TRANSFORMERS_DECODER = ["--layers", "2", "--hidden", "64", "--heads", "4", "--ctx-len", "32", "--vocab",
                                  "96", "--prefill-len", "4", "--prompt-len", "6", "--generate", "10", "--seed", "7",
                                  "--convention", "efficient-transformers"]


def exported_decoder(build, source, args):
    """The export script's output directory for `args`, generated once per version of the script
    (and of the module it shares with export_llama.py) under a lock (parallel ctest processes share it, in build/generated/llm); config.json is
    written last, so its presence means a complete export."""
    script = pathlib.Path(source) / "examples/llm/export_decoder.py"
    shared = pathlib.Path(source) / "examples/llm/llm_convention.py"
    key = hashlib.sha256(script.read_bytes() + shared.read_bytes() + " ".join(args).encode()).hexdigest()[:16]
    out = pathlib.Path(build) / "generated" / "llm" / key
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(str(out) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "config.json").exists():
            shutil.rmtree(out, ignore_errors=True)
            run(["/usr/bin/python3", script, out, *args], timeout=300)
    return out
