# SPDX-License-Identifier: Apache-2.0
"""Real processes for the pytest suites (tests/install, tests/python): commands with their output
on failure, qaic-emu on a temporary root and qaicd on a temporary socket, each stopped (and the
root unmounted and removed) by stop()."""
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time


def run(cmd, check=True, **kwargs):
    """Runs a command, returning the CompletedProcess; a failure shows its output."""
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    kwargs.setdefault("timeout", 300)
    result = subprocess.run([str(c) for c in cmd], **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"{cmd} exited {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def compile_program(qaic_exec, model, out, *flags, **kwargs):
    """The one way the pytest suites compile a program: qaic-exec (the build's or an installed
    one) -m=<model> -aic-binary-dir=<out> <flags>, with run()'s keyword arguments (check=False
    for a test that expects a refusal)."""
    return run([qaic_exec, f"-m={model}", f"-aic-binary-dir={out}", *flags], **kwargs)


def python_environment(build, env=None):
    """The environment for /usr/bin/python3 to import a build tree's qaicrt (or one installed from
    it): an AddressSanitizer build needs ASan's runtime, and libstdc++ with it, preloaded into the
    uninstrumented interpreter (as tests/python/CMakeLists.txt does for its tests)."""
    env = dict(os.environ if env is None else env)
    cache = pathlib.Path(build) / "CMakeCache.txt"
    values = {}  # NAME:TYPE=value lines
    for line in cache.read_text().splitlines() if cache.exists() else []:
        key, equals, value = line.partition("=")
        if equals and ":" in key:
            values[key.split(":", 1)[0]] = value
    if "address" in values.get("QAIC_SANITIZE", ""):
        compiler = values["CMAKE_CXX_COMPILER"]
        libraries = [run([compiler, f"-print-file-name={name}"]).stdout.strip() for name in ("libasan.so", "libstdc++.so")]
        env["LD_PRELOAD"] = " ".join(libraries)
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


def stop_process(pid, seconds=10):
    """SIGTERM, then SIGKILL when `pid` has not exited within `seconds`."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


class EmulatorDied(AssertionError):
    pass


class Emulator:
    """qaic-emu --daemon on a temporary root, its messages in a log beside it; stop() unmounts
    and removes both, and raises EmulatorDied with the log when the emulator was no longer
    running (a crash, or a sanitizer's report, that the tests saw only as a lost device)."""

    def __init__(self, binary, devices=None, config=None, env=None):
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="qaic-emu-root."))
        self.log = self.root.with_name(self.root.name + ".log")
        cmd = [binary, "--root", self.root, "--daemon", "--log", self.log]
        if devices:
            cmd += ["--devices", str(devices)]
        if config:
            cmd += ["--config", config]
        try:
            self.pid = int(run(cmd, env=env).stdout.strip())
        except BaseException:  # nothing started: the root and the log are the caller's no more
            shutil.rmtree(self.root, ignore_errors=True)
            self.log.unlink(missing_ok=True)
            raise

    def env(self, **extra):
        env = dict(os.environ)
        env["QAIC_ROOT"] = str(self.root)
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def alive(self):
        """Running: not gone and not a zombie (the daemon's parent is init, which may reap late)."""
        try:
            stat = pathlib.Path(f"/proc/{self.pid}/stat").read_text()
        except FileNotFoundError:
            return False
        return stat.rpartition(")")[2].split()[0] != "Z"

    def mounted(self):
        """Whether the root is still mounted, live or dead: the mount of an emulator that died
        answers every stat with ENOTCONN, so only the mount table can tell."""
        with open("/proc/self/mountinfo") as table:
            return any(line.split()[4] == str(self.root) for line in table)

    def stop(self):
        died = not self.alive()
        stop_process(self.pid)
        if self.mounted():
            subprocess.run(["fusermount3", "-u", "-z", str(self.root)])
        shutil.rmtree(self.root, ignore_errors=True)
        log = self.log.read_text(errors="replace") if self.log.exists() else ""
        self.log.unlink(missing_ok=True)
        if died:
            raise EmulatorDied(f"qaic-emu (pid {self.pid}) had stopped before the tests stopped it; its log:\n{log}")


class Qaicd:
    """qaicd --daemon for an emulator's root, on a socket in a temporary directory."""

    def __init__(self, binary, emulator):
        self.directory = pathlib.Path(tempfile.mkdtemp(prefix="qaicd."))
        self.socket = self.directory / "qaicd.sock"
        self.pid = int(run([binary, "--root", emulator.root, "--socket", self.socket, "--daemon"],
                           env=emulator.env()).stdout.strip())

    def stop(self):
        stop_process(self.pid)
        shutil.rmtree(self.directory, ignore_errors=True)
