# SPDX-License-Identifier: Apache-2.0
"""docs/ci.md, as another project's CI would follow it: the packages of this build installed by
apt into a fresh Debian 12 root made from Debian's archive alone (mmdebstrap), no file of this
tree in it but the network, and deploy/ci/qaic-ci-job.sh run there: qaic-emu started as a
daemon, qaic-util -q, qaic-exec, qaic-runner, and a Python qaic.Session."""
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import BUILD, SOURCE, run

JOB = SOURCE / "deploy/ci/qaic-ci-job.sh"
NETWORK = SOURCE / "examples/smallcnn"


def debian_sources():
    """The Debian archive this machine installs from (deb822 or one-line form)."""
    for path in ["/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"]:
        if pathlib.Path(path).is_file():
            return path
    pytest.fail("no Debian archive configured in /etc/apt (debian.sources or sources.list)")


def timed(label, times, cmd, **kwargs):
    started = time.monotonic()
    result = run(cmd, **kwargs)
    times[label] = time.monotonic() - started
    return result


@pytest.fixture(scope="module")
def work():
    directory = pathlib.Path(tempfile.mkdtemp(prefix="qaic-ci-recipe."))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_the_documented_job_runs_in_a_fresh_debian_root_from_the_packages(work):
    assert shutil.which("mmdebstrap"), "mmdebstrap missing: scripts/install-deps.sh installs it"
    times = {}
    packages = work / "packages"
    timed("make package (no lintian)", times,
          [SOURCE / "deploy/debian/build-packages.sh", BUILD, packages, "--no-lintian"], timeout=900)
    debs = sorted(packages.glob("*.deb"))
    assert len(debs) == 7, debs

    # (a) of docs/ci.md: a root that starts as Debian's essential set and apt, then the packages
    # installed in it by its own apt, which fetches what they depend on from Debian's archive.
    root = work / "root"
    inside = "/tmp/qaic-packages"
    timed("fresh Debian 12 root, then apt-get install of the packages", times,
          ["mmdebstrap", "--variant=apt", "--mode=root", "--quiet",
           f"--customize-hook=mkdir -p \"$1{inside}\"",
           "--customize-hook=copy-in " + " ".join(str(d) for d in debs) + f" {inside}",
           "--customize-hook=chroot \"$1\" apt-get install --yes --no-install-recommends "
           + " ".join(f"{inside}/{d.name}" for d in debs),
           "bookworm", root, debian_sources()],
          timeout=900, stdin=subprocess.DEVNULL)
    assert not (root / "usr/src/qaic-stack").exists()
    for program in ["usr/bin/qaic-emu", "usr/bin/qaic-runner", "usr/bin/qaic-exec", "usr/sbin/qaicd"]:
        assert (root / program).is_file(), program
    # Only the network and the job script come from outside the packages.
    shutil.copy(JOB, root / "qaic-ci-job.sh")
    shutil.copytree(NETWORK, root / "smallcnn")

    # (b) and (c): the job, in its own mount and PID namespaces (the emulator's mount and any
    # process it leaves go with them), with the host's /dev for /dev/fuse.
    script = (f"mount --rbind /dev {root}/dev && mount -t proc proc {root}/proc && "
              f"exec chroot {root} /qaic-ci-job.sh /smallcnn/smallcnn.json image 1,3,16,16")
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}
    job = timed("the job: start qaic-emu, qaic-util -q, compile, 100 inferences, qaic.Session", times,
                ["unshare", "--mount", "--pid", "--fork", "--kill-child", "sh", "-c", script],
                env=env, timeout=300)
    out = job.stdout
    assert "Status:Ready" in out, out
    assert re.search(r"InferenceCnt 100 ", out), out
    assert "qaic.Session: probs (1, 10) float32" in out, out
    # The emulator's tree went with the namespace: nothing is left mounted under the root.
    mounts = pathlib.Path("/proc/self/mountinfo").read_text()
    assert str(root) not in mounts, mounts

    for label, seconds in times.items():
        print(f"ci recipe: {label}: {seconds:.1f} s")


def test_docs_ci_quotes_the_job_script_as_it_is():
    doc = (SOURCE / "docs/ci.md").read_text()
    # The quote leaves out the script's license line (the repository's business, not the reader's).
    job = "".join(line for line in JOB.read_text().splitlines(keepends=True)
                  if not line.startswith("# SPDX-License-Identifier:"))
    assert job.rstrip("\n") in doc, "docs/ci.md must quote deploy/ci/qaic-ci-job.sh verbatim"
    dockerfile = (SOURCE / "deploy/ci/Dockerfile").read_text()
    assert "bookworm" in dockerfile and "*.deb" in dockerfile
