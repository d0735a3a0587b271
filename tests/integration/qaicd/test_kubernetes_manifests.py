# SPDX-License-Identifier: Apache-2.0
"""deploy/kubernetes: the DaemonSet mounts what qaicd's command line names, its configuration is one
the real qaicd accepts, and the example pod asks for one qualcomm.com/qaic."""
import json
import os
import pathlib
import select
import subprocess
import tempfile
import time

import yaml

SOURCE = pathlib.Path(os.environ.get("QAIC_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[3]))
BUILD = pathlib.Path(os.environ["QAIC_BUILD_DIR"])
DEPLOY = SOURCE / "deploy" / "kubernetes"


def load(name):
    return list(yaml.safe_load_all((DEPLOY / name).read_text()))


def daemonset():
    docs = {d["kind"]: d for d in load("qaicd-daemonset.yaml")}
    return docs["DaemonSet"], docs["ConfigMap"]


def option(command, name):
    values = [a.split("=", 1)[1] for a in command if a.startswith(name + "=")]
    assert len(values) == 1, f"{name} given {len(values)} times in {command}"
    return values[0]


def test_daemonset_mounts_what_qaicd_uses():
    ds, _ = daemonset()
    spec = ds["spec"]["template"]["spec"]
    assert ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
    assert spec["hostNetwork"] is True, "udev events reach the host network namespace only"
    container = spec["containers"][0]
    assert container["securityContext"]["privileged"] is True
    command = container["command"]
    assert command[0] == "/usr/bin/qaicd"
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounted = {m["mountPath"]: volumes[m["name"]] for m in container["volumeMounts"]}
    # The plugin directory, the device nodes and sysfs are the host's own, at the same paths.
    kubelet_dir = option(command, "--kubelet-dir")
    assert kubelet_dir == "/var/lib/kubelet/device-plugins"
    for path in (kubelet_dir, "/dev/accel", "/sys"):
        assert mounted[path]["hostPath"]["path"] == path, path
    assert option(command, "--root") == "/"
    socket = pathlib.PurePosixPath(option(command, "--socket"))
    assert mounted[str(socket.parent)]["hostPath"]["path"] == str(socket.parent)
    config = pathlib.PurePosixPath(option(command, "--config"))
    assert "configMap" in mounted[str(config.parent)]


def test_qaicd_runs_with_the_daemonsets_command_and_configuration():
    ds, config_map = daemonset()
    command = ds["spec"]["template"]["spec"]["containers"][0]["command"]
    text = config_map["data"]["qaicd.json"]
    json.loads(text)
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        (work / "qaicd.json").write_text(text)
        (work / "root").mkdir()
        (work / "plugins").mkdir()
        # The manifest's own arguments, with the node's paths moved under a temporary directory.
        moved = {"--root": work / "root", "--socket": work / "qaicd.sock", "--kubelet-dir": work / "plugins",
                 "--config": work / "qaicd.json"}
        args = [f"{a.split('=', 1)[0]}={moved[a.split('=', 1)[0]]}" if a.split("=", 1)[0] in moved else a
                for a in command[1:]]
        # With -v the daemon keeps writing to its stderr: a file, not a pipe the run would wait on.
        with open(work / "qaicd.log", "w") as log:
            run = subprocess.run([str(BUILD / "bin" / "qaicd"), *args, "--daemon"],
                                 stdout=subprocess.PIPE, stderr=log, text=True, timeout=60)
        assert run.returncode == 0, (work / "qaicd.log").read_text()
        pid = int(run.stdout)
        # The plugin serves (on its own thread) soon after qaicd's socket accepts.
        plugin_socket = work / "plugins" / "qaicd-qaic.sock"
        for _ in range(1000):
            if plugin_socket.exists():
                break
            time.sleep(0.01)
        served = plugin_socket.is_socket()
        fd = os.pidfd_open(pid)
        try:
            os.kill(pid, 15)
            assert select.select([fd], [], [], 10)[0], "qaicd did not stop on SIGTERM"
        finally:
            os.close(fd)
        assert served, (work / "qaicd.log").read_text()
        assert not plugin_socket.exists(), "qaicd left its plugin socket behind"


def test_example_pod_asks_for_one_card():
    (pod,) = load("qaic-pod.yaml")
    container = pod["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"qualcomm.com/qaic": 1}
    assert "QAIC_VISIBLE_DEVICES" in " ".join(container["args"])
