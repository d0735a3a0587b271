# SPDX-License-Identifier: Apache-2.0
"""make install-compat / uninstall-compat (cmake/Compat.cmake): the vendor's /opt/qti-aic paths as
links into an installed prefix, staged with DESTDIR or under another root; the modules imported
from there as efficient-transformers imports them; uninstall leaves nothing of its own."""
import os
import pathlib
import platform
import shutil
import sys
import sysconfig
import tempfile

import pytest

from conftest import BUILD, SOURCE, install, multiarch, python_environment, run

MODULE = "qaicrt" + sysconfig.get_config_var("EXT_SUFFIX")


def compat(mode, env=None, check=True, **defines):
    args = [f"-D{name}={value}" for name, value in defines.items()]
    return run(["cmake", f"-DMODE={mode}", f"-DBUILD={BUILD}", *args, "-P", SOURCE / "cmake/Compat.cmake"],
               env=env, check=check)


def message(result):
    """cmake's error message on one line (it wraps them)."""
    return " ".join(result.stderr.split())


def tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def scratch():
    directory = pathlib.Path(tempfile.mkdtemp(prefix="qaic-compat."))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def expected_links(machine):
    return {"exec/qaic-exec": "bin/qaic-exec", "exec/qaic-runner": "bin/qaic-runner", "tools/qaic-util": "bin/qaic-util",
            f"dev/lib/{machine}/{MODULE}": f"@site/{MODULE}",
            f"dev/lib/{machine}/libqaic.so.1": f"lib/{multiarch()}/libqaic.so.1",
            "dev/python/QAicApi_pb2.py": "@site/QAicApi_pb2.py"}


def test_links_into_a_prefix_work_as_the_vendors_paths(scratch):
    prefix, root = scratch / "prefix", scratch / "opt/qti-aic"
    install(prefix)
    manifest = scratch / "compat-manifest.txt"
    compat("install", PREFIX=prefix, COMPAT_ROOT=root, MANIFEST=manifest)
    version = "%d.%d" % sys.version_info[:2]
    site = prefix / f"lib/python{version}/dist-packages"
    for link, target in expected_links(platform.machine()).items():
        path = root / link
        assert path.is_symlink(), link
        target = str(site) + target[5:] if target.startswith("@site") else str(prefix / target)
        assert os.readlink(path) == target, link
        if not link.endswith("QAicApi_pb2.py"):  # made by the protobuf part of the build
            assert path.resolve() == pathlib.Path(target).resolve() and path.resolve().is_file(), link
    assert run([root / "exec/qaic-exec", "--version"]).stdout.startswith("qaic-exec (qaic-stack) ")
    assert run([root / "exec/qaic-runner", "--version"]).stdout.startswith("qaic-runner (qaic-stack) ")
    assert run([root / "tools/qaic-util", "--version"]).stdout.startswith("qaic-util (qaic-stack) ")
    # efficient-transformers' fallback import, with nothing of ours on the path otherwise: the
    # module loads the prefix's libqaic.so.1 through the link beside it.
    script = ("import platform, sys\n"
              f"root = {str(root)!r}\n"
              "sys.path.append(f'{root}/dev/lib/{platform.machine()}')\n"
              "import qaicrt\n"
              "print(qaicrt.__file__)\n"
              "print(qaicrt.Context is not None, qaicrt.QStatus.QS_SUCCESS == 0)\n")
    env = python_environment(BUILD, {"PYTHONPATH": "", "PATH": "/usr/bin:/bin"})
    env.pop("PYTHONPATH", None)
    env.pop("LD_LIBRARY_PATH", None)
    printed = run(["/usr/bin/python3", "-c", script], env=env).stdout.splitlines()
    assert printed == [str(root / "dev/lib" / platform.machine() / MODULE), "True True"]
    ldd = run(["ldd", root / "dev/lib" / platform.machine() / MODULE]).stdout
    resolved = next(l for l in ldd.splitlines() if "libqaic.so.1" in l).split("=>")[1].split("(")[0].strip()
    assert pathlib.Path(resolved).resolve() == (prefix / "lib" / multiarch() / "libqaic.so.1.1.0").resolve(), ldd
    # A second install over the first is the same; uninstall removes the links and the
    # directories it made, and nothing of the prefix.
    before = tree(prefix)
    compat("install", PREFIX=prefix, COMPAT_ROOT=root, MANIFEST=manifest)
    (scratch / "opt/someone-else").mkdir()
    compat("uninstall", MANIFEST=manifest)
    assert tree(scratch / "opt") == ["someone-else"] and not manifest.exists()
    assert tree(prefix) == before


def test_destdir_stages_links_that_name_the_final_prefix(scratch):
    stage = scratch / "stage"
    manifest = scratch / "compat-manifest.txt"
    (stage / "opt/qti-aic/exec").mkdir(parents=True)  # not made by the install: it stays
    env = dict(os.environ, DESTDIR=str(stage))
    compat("install", env=env, PREFIX="/usr", MANIFEST=manifest)
    machine = platform.machine()
    for link, target in expected_links(machine).items():
        final = target.replace("@site", "lib/python3/dist-packages")
        assert os.readlink(stage / "opt/qti-aic" / link) == f"/usr/{final}", link
    compat("uninstall", MANIFEST=manifest)
    assert tree(stage) == ["opt", "opt/qti-aic", "opt/qti-aic/exec"]
    # Without a manifest: an error, unless OPTIONAL (what make uninstall runs).
    failed = compat("uninstall", check=False, MANIFEST=manifest)
    assert failed.returncode != 0 and "install-compat was not run" in message(failed)
    compat("uninstall", MANIFEST=manifest, OPTIONAL="ON")


def test_a_file_in_the_way_is_not_replaced(scratch):
    root = scratch / "opt/qti-aic"
    (root / "exec").mkdir(parents=True)
    (root / "exec/qaic-exec").write_text("the vendor's\n")
    failed = compat("install", check=False, PREFIX="/usr", COMPAT_ROOT=root, MANIFEST=scratch / "manifest.txt")
    assert failed.returncode != 0 and "exists and is not a link" in message(failed)
    assert (root / "exec/qaic-exec").read_text() == "the vendor's\n"
    # In the way of the last link: nothing is made first, which no manifest would then list.
    (root / "exec/qaic-exec").unlink()
    (root / "dev/python").mkdir(parents=True)
    (root / "dev/python/QAicApi_pb2.py").write_text("the vendor's\n")
    failed = compat("install", check=False, PREFIX="/usr", COMPAT_ROOT=root, MANIFEST=scratch / "manifest.txt")
    assert failed.returncode != 0 and "exists and is not a link" in message(failed)
    assert tree(root) == ["dev", "dev/python", "dev/python/QAicApi_pb2.py", "exec"]
