# SPDX-License-Identifier: Apache-2.0
"""systemd units (systemd-analyze verify, offline), qaicd socket activation through sd_listen_fds,
and readiness through sd_notify; qaicd and qaic-emu still run without systemd."""
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import BUILD, run


def verify(*units, manpath):
    env = dict(os.environ, MANPATH=f"{manpath}:", SYSTEMD_LOG_LEVEL="notice")
    return run(["systemd-analyze", "verify", *units], check=False, env=env)


def test_units_verify_clean(prefix):
    units = prefix / "lib/systemd/system"
    result = verify(units / "qaicd.socket", units / "qaicd.service", units / "qaic-emu@.service",
                    manpath=prefix / "share/man")
    assert result.returncode == 0 and result.stderr.strip() == "", result.stderr
    # An instance, as systemctl start qaic-emu@ci would make it.
    work = pathlib.Path(tempfile.mkdtemp())
    try:
        shutil.copy(units / "qaic-emu@.service", work / "qaic-emu@ci.service")
        result = verify(work / "qaic-emu@ci.service", manpath=prefix / "share/man")
        assert result.returncode == 0 and result.stderr.strip() == "", result.stderr
    finally:
        shutil.rmtree(work)


def test_verify_would_catch_a_broken_unit(prefix):
    """The check above can fail: a unit whose program is missing does not verify."""
    work = pathlib.Path(tempfile.mkdtemp())
    try:
        text = (prefix / "lib/systemd/system/qaicd.service").read_text()
        (work / "qaicd.service").write_text(text.replace(f"{prefix}/sbin/qaicd", f"{prefix}/sbin/no-such-qaicd"))
        shutil.copy(prefix / "lib/systemd/system/qaicd.socket", work / "qaicd.socket")
        result = verify(work / "qaicd.service", manpath=prefix / "share/man")
        assert result.returncode != 0 and "no-such-qaicd" in result.stderr
    finally:
        shutil.rmtree(work)


def test_hardening_keeps_the_emulator_mount_visible(prefix):
    """Options that give a service its own mount namespace would hide qaic-emu's FUSE mount."""
    emu = (prefix / "lib/systemd/system/qaic-emu@.service").read_text()
    settings = [l.split("=")[0] for l in emu.splitlines() if "=" in l and not l.startswith("#")]
    for hiding in ["ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices", "ReadWritePaths",
                   "ProtectKernelTunables", "PrivateMounts", "TemporaryFileSystem"]:
        assert hiding not in settings
    assert "NoNewPrivileges" in settings and "Type" in settings
    qaicd = (prefix / "lib/systemd/system/qaicd.service").read_text()
    assert "NoNewPrivileges=yes" in qaicd and "ProtectSystem=full" in qaicd and "Type=notify" in qaicd


class NotifySocket:
    """What systemd listens on for sd_notify: a datagram socket; NOTIFY_SOCKET names it."""

    def __init__(self, directory):
        self.path = str(directory / "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(30)

    def receive(self):
        return self.sock.recv(4096).decode()


def connect_when_listening(path, timeout):
    """systemd-socket-activate binds before it listens: the file appears while a connect is still
    refused, so a connection is tried until one is accepted."""
    deadline = time.monotonic() + timeout
    while True:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.settimeout(timeout)
        try:
            client.connect(str(path))
            return client
        except (FileNotFoundError, ConnectionRefusedError):
            client.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_qaicd_takes_the_socket_systemd_passes_and_reports_ready(emulator):
    emu = emulator()
    work = pathlib.Path(tempfile.mkdtemp())
    notify = NotifySocket(work)
    listen = work / "activated.sock"
    # systemd-socket-activate binds the socket and passes it as fd 3 with LISTEN_FDS, as
    # qaicd.socket does; qaicd is told another path, which it must not bind.
    env = emu.env(NOTIFY_SOCKET=notify.path)
    daemon = subprocess.Popen(["systemd-socket-activate", "-E", "NOTIFY_SOCKET", "-l", str(listen), str(BUILD / "bin/qaicd"),
                               "--root", str(emu.root), "--socket", str(work / "unused.sock")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The first client starts qaicd, as the first client of qaicd.socket does.
        with connect_when_listening(listen, timeout=30) as client:
            client.sendall(b'{"id":1,"op":"devices"}\n')
            answer = client.makefile().readline()
        assert json.loads(answer)["id"] == 1, answer
        assert "READY=1" in notify.receive()
        assert not (work / "unused.sock").exists()
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.communicate(timeout=30)
        shutil.rmtree(work)


def test_emulator_reports_ready_through_sd_notify():
    work = pathlib.Path(tempfile.mkdtemp())
    notify = NotifySocket(work)
    root = work / "root"
    root.mkdir()
    emu = subprocess.Popen([str(BUILD / "bin/qaic-emu"), "--root", str(root), "--foreground"],
                           env=dict(os.environ, NOTIFY_SOCKET=notify.path), stderr=subprocess.PIPE, text=True)
    try:
        assert "READY=1" in notify.receive()
        assert (root / "dev/accel/accel0").exists()  # ready means the tree answers
    finally:
        emu.send_signal(signal.SIGTERM)
        emu.communicate(timeout=30)
        if subprocess.run(["mountpoint", "-q", str(root)]).returncode == 0:
            subprocess.run(["fusermount3", "-u", "-z", str(root)])
        shutil.rmtree(work)
    assert emu.returncode == 0


def test_qaicd_runs_without_systemd(emulator):
    emu = emulator()
    work = pathlib.Path(tempfile.mkdtemp())
    env = emu.env()
    env.pop("NOTIFY_SOCKET", None)
    env.pop("LISTEN_FDS", None)
    try:
        pid = int(run([BUILD / "bin/qaicd", "--root", emu.root, "--socket", work / "q.sock", "--daemon"], env=env).stdout)
        assert (work / "q.sock").exists()
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while (work / "q.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not (work / "q.sock").exists()  # its own socket file goes with it
    finally:
        shutil.rmtree(work)
