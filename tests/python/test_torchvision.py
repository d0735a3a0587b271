# SPDX-License-Identifier: Apache-2.0
"""A torchvision model (random weights, exported by scripts/gen-models.py, sharing the cache of
tests/conformance/EmulatorMemoryTest.cpp in the build tree) compiled through qaic.Session from its
.onnx and run on the emulated device: the output matches PyTorch's within 1e-4 x max|PyTorch|."""
import fcntl
import json
import os
import pathlib
import subprocess
import time

import numpy as np
import pytest

import qaic
from conftest import BUILD, SOURCE

# Shared with tests/conformance/EmulatorMemoryTest.cpp (GeneratedData.cpp takes the same lock).
MODELS = BUILD / "tests/conformance/memory-models"
INDEX = "index.txt"


def generated_models(names=("resnet18_full",)):
    """Runs gen-models.py under the same lock as the conformance tests, unless already done."""
    if (MODELS / INDEX).exists():
        return MODELS
    MODELS.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{MODELS}.lock", "w") as lock:
        deadline = time.monotonic() + 600
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{MODELS}.lock held for 600 s")
                time.sleep(0.1)
        if not (MODELS / INDEX).exists():
            # PyTorch is not ours to run under a sanitizer (an ASan build preloads its runtime).
            env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
            subprocess.run(["/usr/bin/python3", SOURCE / "scripts/gen-models.py", MODELS, "--index", INDEX,
                            "--models", *names], check=True, timeout=600, env=env)
    return MODELS


@pytest.mark.parametrize("name", ["resnet18_full"])
def test_a_torchvision_model_through_session_matches_pytorch(emulator, tmp_path, name):
    models = generated_models()
    description = json.loads((models / f"{name}.json").read_text())
    (given,), (wanted,) = description["inputs"], description["outputs"]
    session = qaic.Session(models / f"{name}.onnx", cache_dir=tmp_path / "cache", set_size=1)
    assert session.model_input_shape_dict() == {"input": ((1, 3, 224, 224), np.dtype(np.float32))}
    assert session.model_output_shape_dict() == {"output": ((1, 1000), np.dtype(np.float32))}
    assert (given["name"], given["dims"], wanted["name"], wanted["dims"]) == ("input", [1, 3, 224, 224],
                                                                             "output", [1, 1000])
    x = np.fromfile(models / given["file"], np.float32).reshape(1, 3, 224, 224)
    expected = np.fromfile(models / wanted["file"], np.float32).reshape(1, 1000)
    y = session.run({"input": x})["output"]
    tolerance = 1e-4 * np.abs(expected).max()
    worst = np.abs(y - expected).max()
    assert worst <= tolerance, f"{name}: max |difference| {worst} > {tolerance}"
    assert y.argmax() == expected.argmax()
