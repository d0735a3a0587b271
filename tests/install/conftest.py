"""Shared fixtures: the build and source trees, an installed prefix, and a real qaic-emu."""
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

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


def run(cmd, check=True, **kwargs):
    """Runs a command, returning the CompletedProcess; a failure shows its output."""
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    kwargs.setdefault("timeout", 300)
    result = subprocess.run([str(c) for c in cmd], **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"{cmd} exited {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


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


class Emulator:
    """qaic-emu --daemon on a temporary root; stop() unmounts and removes it."""

    def __init__(self, binary, devices=None, config=None, env=None):
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="qaic-emu-root."))
        cmd = [binary, "--root", self.root, "--daemon"]
        if devices:
            cmd += ["--devices", str(devices)]
        if config:
            cmd += ["--config", config]
        self.pid = int(run(cmd, env=env).stdout.strip())

    def env(self, **extra):
        env = dict(os.environ)
        env["QAIC_ROOT"] = str(self.root)
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def stop(self):
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            os.kill(self.pid, signal.SIGKILL)
        if subprocess.run(["mountpoint", "-q", str(self.root)]).returncode == 0:
            subprocess.run(["fusermount3", "-u", "-z", str(self.root)])
        shutil.rmtree(self.root, ignore_errors=True)


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
        run([BUILD / "bin" / "qaic-exec", f"-m={SOURCE / 'examples/smallcnn/smallcnn.json'}", f"-aic-binary-dir={directory}"])
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
