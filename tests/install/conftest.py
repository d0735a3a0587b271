# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: the build and source trees, an installed prefix, and a real qaic-emu."""
import os
import pathlib
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
from qaic_processes import Emulator, compile_program, python_environment, run  # noqa: E402  (shared with tests/python)

BUILD = pathlib.Path(os.environ.get("QAIC_BUILD_DIR", "build")).resolve()
SOURCE = pathlib.Path(os.environ.get("QAIC_SOURCE_DIR", ".")).resolve()
TOOLS = ["qaic-runner", "qaic-util", "qaic-exec", "lightnet", "qaic-emu", "qaicd"]


def sanitizers():
    """QAIC_SANITIZE of the build tree ("address,undefined", "thread" or "")."""
    cache = BUILD / "CMakeCache.txt"
    for line in cache.read_text().splitlines() if cache.exists() else []:
        if line.startswith("QAIC_SANITIZE:"):
            return line.split("=", 1)[1]
    return ""


def install(prefix, destdir=None, component=None):
    env = dict(os.environ)
    if destdir:
        env["DESTDIR"] = str(destdir)
    cmd = ["cmake", "--install", BUILD, "--prefix", prefix]
    if component:
        cmd += ["--component", component]
    return run(cmd, env=env)


def multiarch():
    return run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).stdout.strip()


@pytest.fixture(scope="module")
def prefix():
    """The whole stack installed into a temporary prefix, removed afterwards."""
    directory = pathlib.Path(tempfile.mkdtemp(prefix="qaic-prefix."))
    try:
        install(directory)
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def emulator():
    started = []

    def start(binary=BUILD / "bin" / "qaic-emu", **kwargs):
        emu = Emulator(binary, **kwargs)
        started.append(emu)
        return emu

    yield start
    for emu in started:
        emu.stop()


@pytest.fixture(scope="module")
def smallcnn():
    """examples/smallcnn compiled by the build tree's qaic-exec."""
    directory = pathlib.Path(tempfile.mkdtemp(prefix="qaic-smallcnn."))
    try:
        compile_program(BUILD / "bin" / "qaic-exec", SOURCE / "examples/smallcnn/smallcnn.json", directory)
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
