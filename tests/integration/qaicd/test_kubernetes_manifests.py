"""deploy/kubernetes: the DaemonSet mounts what qaicd's command line names, its configuration is one
the real qaicd accepts, and the example pod asks for one qualcomm.com/qaic."""
import json
import os
import pathlib
import subprocess
import tempfile

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


def test_shipped_configuration_is_accepted_by_qaicd():
    _, config_map = daemonset()
    text = config_map["data"]["qaicd.json"]
    json.loads(text)
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        (work / "qaicd.json").write_text(text)
        (work / "root").mkdir()
        run = subprocess.run(
            [str(BUILD / "bin" / "qaicd"), "--root", str(work / "root"), "--socket", str(work / "qaicd.sock"),
             "--config", str(work / "qaicd.json"), "--no-kubelet", "--daemon"],
            capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        pid = int(run.stdout)
        os.kill(pid, 15)
        fd = os.pidfd_open(pid)
        try:
            import select
            assert select.select([fd], [], [], 10)[0], "qaicd did not stop on SIGTERM"
        finally:
            os.close(fd)


def test_example_pod_asks_for_one_card():
    (pod,) = load("qaic-pod.yaml")
    container = pod["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"qualcomm.com/qaic": 1}
    assert "QAIC_VISIBLE_DEVICES" in " ".join(container["args"])
