# SPDX-License-Identifier: Apache-2.0
"""make package: the .deb packages' names, contents and Depends, lintian without errors, and the
tools working from a scratch root the packages were unpacked into."""
import io
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile

import pytest

from conftest import BUILD, SOURCE, Emulator, multiarch, python_environment, run

PACKAGES = ["libqaic1", "libqaic-dev", "qaic-tools", "qaicd", "qaic-emu", "python3-qaic", "qaic-compat"]
SITE = "/usr/lib/python3/dist-packages"
MODULE = "qaicrt" + sysconfig.get_config_var("EXT_SUFFIX")


@pytest.fixture(scope="module")
def debs():
    out = pathlib.Path(tempfile.mkdtemp(prefix="qaic-debs."))
    try:
        result = run([SOURCE / "deploy/debian/build-packages.sh", BUILD, out], timeout=1100)
        found = {p.name.split("_")[0]: p for p in out.glob("*.deb")}
        yield found, result.stdout, out
    finally:
        shutil.rmtree(out)


def contents(deb):
    listing = run(["dpkg-deb", "-c", deb]).stdout
    return {line.split()[5].lstrip(".") for line in listing.splitlines()}


def field(deb, name):
    return run(["dpkg-deb", "-f", deb, name]).stdout.strip()


def test_every_package_with_its_files(debs):
    found, log, _ = debs
    assert sorted(found) == sorted(PACKAGES)
    arch = multiarch()
    expected = {
        "libqaic1": {f"/usr/lib/{arch}/libqaic.so.1", f"/usr/lib/{arch}/libqaic.so.1.1.0"},
        "libqaic-dev": {f"/usr/lib/{arch}/libqaic.so", f"/usr/lib/{arch}/pkgconfig/qaic.pc",
                        f"/usr/lib/{arch}/cmake/qaic/qaicConfig.cmake", "/usr/include/qaic/qaic.hpp"},
        "qaic-tools": {"/usr/bin/qaic-runner", "/usr/bin/qaic-util", "/usr/bin/qaic-exec", "/usr/bin/qaic-compile",
                       "/usr/bin/lightnet", "/usr/share/man/man1/qaic-runner.1.gz", "/lib/udev/rules.d/70-qaic.rules"},
        "qaicd": {"/usr/sbin/qaicd", "/lib/systemd/system/qaicd.service", "/lib/systemd/system/qaicd.socket",
                  "/usr/share/man/man8/qaicd.8.gz"},
        "qaic-emu": {"/usr/bin/qaic-emu", "/lib/systemd/system/qaic-emu@.service", "/etc/qaic-emu/default.json",
                     "/usr/share/man/man1/qaic-emu.1.gz"},
        "python3-qaic": {f"{SITE}/{MODULE}", f"{SITE}/qaicrt.pyi", f"{SITE}/qaic/__init__.py", f"{SITE}/qaic/py.typed",
                         f"{SITE}/QAicApi_pb2.py"},
        "qaic-compat": {"/opt/qti-aic/exec/qaic-exec", "/opt/qti-aic/exec/qaic-runner", "/opt/qti-aic/tools/qaic-util",
                        f"/opt/qti-aic/dev/lib/{platform.machine()}/{MODULE}", "/opt/qti-aic/dev/python/QAicApi_pb2.py"},
    }
    seen = {}
    for package, files in expected.items():
        listed = contents(found[package])
        assert files <= listed, (package, sorted(files - listed))
        assert f"/usr/share/doc/{package}/copyright" in listed
        for f in listed:
            if not f.endswith("/") and not f.startswith(f"/usr/share/doc/{package}/"):
                assert f not in seen, f"{f} in both {seen[f]} and {package}"
                seen[f] = package
        assert not [f for f in listed if f.endswith(".a")]
    # Sizes are reported for every package.
    for package in PACKAGES:
        assert re.search(rf"^{package}_\S+\.deb\s+\d+ bytes$", log, re.M), log


def test_depends_name_debian_libraries_for_every_library_linked(debs):
    found, _, _ = debs
    assert field(found["libqaic-dev"], "Depends").startswith("libqaic1 (= ")
    ours = {"libqaic.so.1": "libqaic1"}
    cache = run(["ldconfig", "-p"]).stdout
    python = field(found["python3-qaic"], "Depends")
    assert "python3 (>= 3." in python and "python3 (<< 3." in python and "python3-numpy" in python
    assert "python3-protobuf" in python  # QAicApi_pb2
    for package in ["libqaic1", "qaic-tools", "qaicd", "qaic-emu", "python3-qaic"]:
        depends = field(found[package], "Depends")
        names = {d.strip().split()[0] for d in depends.split(",")}
        root = pathlib.Path(tempfile.mkdtemp())
        try:
            run(["dpkg-deb", "-x", found[package], root])
            elves = [p for p in root.rglob("*") if p.is_file() and (p.parent.name in ("bin", "sbin") or ".so." in p.name
                                                                     or p.name == MODULE)]
            assert elves
            for elf in elves:
                for needed in re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", run(["readelf", "-d", elf]).stdout):
                    if needed in ours:
                        assert ours[needed] in names, (package, needed)
                        continue
                    # The Debian package that ships the copy the loader uses on this machine.
                    path = next(l.split("=>")[1].strip() for l in cache.splitlines()
                                if l.strip().startswith(needed + " ") and "x86-64" in l)
                    # Merged /usr: dpkg knows each file under the one name its package shipped.
                    query = run(["dpkg", "-S", path], check=False)
                    if query.returncode != 0:
                        query = run(["dpkg", "-S", "/usr" + path if not path.startswith("/usr/") else path[4:]])
                    owner = query.stdout.split(":")[0]
                    assert owner in names, (package, needed, owner, depends)
        finally:
            shutil.rmtree(root)
    assert "fuse3" in {d.strip().split()[0] for d in field(found["qaic-emu"], "Depends").split(",")}
    # qaic-compat's links point into these packages, at this very version.
    compat = field(found["qaic-compat"], "Depends")
    for package in ("libqaic1", "qaic-tools", "python3-qaic"):
        assert f"{package} (= " in compat, compat


def test_lintian_reports_no_errors(debs):
    _, _, out = debs
    report = (out / "lintian.txt").read_text()
    assert not [l for l in report.splitlines() if l.startswith("E: ")], report
    # The license is named as Debian asks: nothing about copyright files is left to report.
    assert not [l for l in report.splitlines() if "copyright" in l or "license" in l], report


def test_every_package_names_the_license_in_a_machine_readable_copyright_file(debs):
    found, _, _ = debs
    for package in PACKAGES:
        tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", found[package]], capture_output=True,
                             check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
            member = archive.extractfile(f"./usr/share/doc/{package}/copyright")
            copyright = member.read().decode()
        assert copyright.startswith(
            "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"), package
        assert "\nFiles: *\n" in copyright and "\nLicense: Apache-2.0\n" in copyright, package
        assert "/usr/share/common-licenses/Apache-2.0" in copyright, package


def test_tools_work_from_a_scratch_root(debs):
    """Every package unpacked into one root; the tools run from there, on its own libqaic."""
    found, _, _ = debs
    root = pathlib.Path(tempfile.mkdtemp(prefix="qaic-scratch-root."))
    emu = None
    try:
        for package in PACKAGES:
            run(["dpkg-deb", "-x", found[package], root])
        env = dict(os.environ, LD_LIBRARY_PATH=str(root / "usr/lib" / multiarch()))
        libs = run(["ldd", root / "usr/bin/qaic-runner"], env=env).stdout
        assert str(root) in next(l for l in libs.splitlines() if "libqaic.so.1" in l)
        emu = Emulator(root / "usr/bin/qaic-emu", config=root / "etc/qaic-emu/default.json", env=env)
        env["QAIC_ROOT"] = str(emu.root)
        qpc = root / "smallcnn"
        run([root / "usr/bin/qaic-compile", f"-m={SOURCE / 'examples/smallcnn/smallcnn.json'}", f"-aic-binary-dir={qpc}"],
            env=env)
        assert "Status:Ready" in run([root / "usr/bin/qaic-util", "-q"], env=env).stdout
        stats = run([root / "usr/bin/qaic-runner", "-t", qpc, "-n", "20"], env=env).stdout
        assert "InferenceCnt 20 " in stats
        assert run([root / "usr/sbin/qaicd", "--version"], env=env).stdout.startswith("qaicd (qaic-stack)")
        assert "Usage: lightnet" in run([root / "usr/bin/lightnet", "--help"], env=env).stdout
        assert run(["man", "-l", root / "usr/share/man/man1/qaic-compile.1.gz"], env=dict(env, MANWIDTH="80")).stdout
        # python3-qaic: the module loads the root's libqaic and the package finds the root's
        # qaic-exec.
        site = root / SITE.lstrip("/")
        libs = run(["ldd", site / MODULE]).stdout
        assert str(root) in next(l for l in libs.splitlines() if "libqaic.so.1" in l), libs
        script = ("import sys, numpy, qaic, qaicrt\n"
                  "print(qaic.find_qaic_exec())\n"
                  "session = qaic.Session(sys.argv[1], cache_dir=sys.argv[2])\n"
                  "print(session.run({'image': numpy.zeros((1, 3, 16, 16), numpy.float32)})['probs'].shape)\n")
        python = run([sys.executable, "-c", script, SOURCE / "examples/smallcnn/smallcnn.json", root / "cache"],
                     env=python_environment(BUILD, dict(env, PYTHONPATH=str(site)))).stdout.splitlines()
        assert python == [str(root / "usr/bin/qaic-exec"), "(1, 10)"]
        # qaic-compat: every link names a file of the packages, by its path once installed.
        links = [p for p in (root / "opt/qti-aic").rglob("*") if p.is_symlink()]
        assert len(links) == 6
        for link in links:
            target = os.readlink(link)
            assert target.startswith("/usr/"), (link, target)
            if link.name != "QAicApi_pb2.py":  # the protobuf module is another part's
                assert (root / target.lstrip("/")).is_file(), (link, target)
    finally:
        if emu:
            emu.stop()
        shutil.rmtree(root)
