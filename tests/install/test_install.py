# SPDX-License-Identifier: Apache-2.0
"""make install: what lands in the prefix, the library's SONAME, DESTDIR, and make uninstall."""
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import pytest

from conftest import BUILD, SOURCE, TOOLS, install, multiarch, python_environment, run


def files_under(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink())


def test_prefix_holds_the_public_parts_and_nothing_internal(prefix):
    lib = f"lib/{multiarch()}"
    files = set(files_under(prefix))
    expected = {
        "bin/qaic-runner", "bin/qaic-util", "bin/qaic-exec", "bin/qaic-compile", "bin/lightnet", "bin/qaic-emu",
        "sbin/qaicd",
        f"{lib}/libqaic.so", f"{lib}/libqaic.so.1", f"{lib}/libqaic.so.1.1.0",
        f"{lib}/pkgconfig/qaic.pc", f"{lib}/cmake/qaic/qaicConfig.cmake", f"{lib}/cmake/qaic/qaicConfigVersion.cmake",
        "include/qaic/qaic.hpp", "include/qaic/uapi/qaic_accel.h",
        "lib/udev/rules.d/70-qaic.rules",
        "lib/systemd/system/qaicd.service", "lib/systemd/system/qaicd.socket", "lib/systemd/system/qaic-emu@.service",
        "etc/qaic-emu/default.json",
        "share/man/man1/qaic-runner.1", "share/man/man1/qaic-util.1", "share/man/man1/qaic-exec.1",
        "share/man/man1/qaic-compile.1", "share/man/man1/lightnet.1", "share/man/man1/qaic-emu.1",
        "share/man/man8/qaicd.8",
        "share/doc/qaic-stack/README.md", "share/doc/qaic-stack/ARCHITECTURE.md",
        "share/doc/qaic-stack/examples/consumer/consumer.cpp",
    }
    assert expected <= files, sorted(expected - files)
    # Every public header, and no internal one.
    public = {f"include/qaic/{p.relative_to(SOURCE / 'libqaic/include/qaic')}"
              for p in (SOURCE / "libqaic/include/qaic").rglob("*.h*")}
    assert {f for f in files if f.startswith("include/")} == public
    # No static library, benchmark or test program.
    assert not [f for f in files if f.endswith(".a")]
    assert not [f for f in files if "test" in pathlib.Path(f).name or "bench" in pathlib.Path(f).name]
    assert {pathlib.Path(f).name for f in files if f.startswith(("bin/", "sbin/"))} == set(TOOLS) | {"qaic-compile"}


def test_library_has_a_soname_and_tools_find_it_in_the_prefix(prefix):
    lib = prefix / "lib" / multiarch()
    dynamic = run(["readelf", "-d", lib / "libqaic.so.1.1.0"]).stdout
    assert "Library soname: [libqaic.so.1]" in dynamic
    assert (lib / "libqaic.so").resolve() == (lib / "libqaic.so.1.1.0").resolve()
    assert "Shared library: [libqaic.so.1]" in run(["readelf", "-d", prefix / "bin/qaic-runner"]).stdout
    # Resolved from the prefix itself, not the build tree.
    ldd = run(["ldd", prefix / "bin/qaic-runner"]).stdout
    resolved = next(l for l in ldd.splitlines() if "libqaic.so.1" in l).split("=>")[1].split("(")[0].strip()
    assert pathlib.Path(resolved).resolve() == (lib / "libqaic.so.1.1.0").resolve(), ldd
    for tool in TOOLS:
        binary = prefix / ("sbin" if tool == "qaicd" else "bin") / tool
        assert run([binary, "--version"]).stdout.startswith(f"{tool} (qaic-stack) ")
    assert run([prefix / "bin/qaic-compile", "--version"]).stdout.startswith("qaic-compile (qaic-stack) ")


def test_python_lands_on_debians_path_for_the_prefix_and_uses_the_prefix(prefix):
    version = "%d.%d" % sys.version_info[:2]
    site = prefix / f"lib/python{version}/dist-packages"  # /usr/local's is on Debian's python3 path
    module = site / ("qaicrt" + sysconfig.get_config_var("EXT_SUFFIX"))
    assert module.is_file() and (site / "qaicrt.pyi").is_file() and (site / "qaic/__init__.py").is_file()
    assert (site / "QAicApi_pb2.py").is_file()  # the vendor IO descriptor's messages, beside qaicrt
    ldd = run(["ldd", module]).stdout
    resolved = next(l for l in ldd.splitlines() if "libqaic.so.1" in l).split("=>")[1].split("(")[0].strip()
    assert pathlib.Path(resolved).resolve() == (prefix / "lib" / multiarch() / "libqaic.so.1.1.0").resolve(), ldd
    found = run([sys.executable, "-c", "import qaic, qaicrt, QAicApi_pb2; print(qaic.find_qaic_exec()); print(qaicrt.__version__)"],
                env=python_environment(BUILD, {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})).stdout.split()
    assert found[0] == str((prefix / "bin/qaic-exec").resolve()) and found[1] == run([prefix / "bin/qaic-exec", "--version"]).stdout.split()[-1]
    # Under /usr, the package's path.
    stage = pathlib.Path(tempfile.mkdtemp(prefix="qaic-destdir."))
    try:
        install("/usr", destdir=stage, component="python")
        assert (stage / "usr/lib/python3/dist-packages" / module.name).is_file()
    finally:
        shutil.rmtree(stage)


def test_units_name_the_prefix_they_were_installed_into(prefix):
    service = (prefix / "lib/systemd/system/qaic-emu@.service").read_text()
    assert f"ExecStart={prefix}/bin/qaic-emu --root /run/qaic-emu/%i --config {prefix}/etc/qaic-emu/%i.json" in service
    assert f"ExecStart={prefix}/sbin/qaicd " in (prefix / "lib/systemd/system/qaicd.service").read_text()


def test_destdir_stages_files_that_name_the_final_prefix():
    stage = pathlib.Path(tempfile.mkdtemp(prefix="qaic-destdir."))
    try:
        install("/usr", destdir=stage, component="daemon")
        unit = stage / "usr/lib/systemd/system/qaicd.service"
        assert "ExecStart=/usr/sbin/qaicd " in unit.read_text()
        assert (stage / "usr/sbin/qaicd").is_file()
        assert not (stage / "usr/bin/qaic-runner").exists()  # another component
        install("/usr", destdir=stage, component="emulator")
        assert (stage / "etc/qaic-emu/default.json").is_file()  # /usr's configuration lives in /etc
    finally:
        shutil.rmtree(stage)


def test_uninstall_removes_every_file_it_installed():
    root = pathlib.Path(tempfile.mkdtemp(prefix="qaic-uninstall."))
    try:
        (root / "bin").mkdir()
        (root / "bin/someone-elses-tool").write_text("kept\n")
        install(root)
        manifest = (BUILD / "install_manifest.txt").read_text().split()
        assert len(manifest) > 40 and all(m.startswith(str(root)) for m in manifest)
        # What make uninstall runs, without asking the build system (which could regenerate
        # itself under the other tests' feet).
        run(["cmake", f"-DMANIFEST={BUILD / 'install_manifest.txt'}", "-P", SOURCE / "cmake/Uninstall.cmake"])
        assert files_under(root) == ["bin/someone-elses-tool"]
        for own in ["include/qaic", f"lib/{multiarch()}/cmake/qaic", "share/doc/qaic-stack", "etc/qaic-emu"]:
            assert not (root / own).exists(), own
    finally:
        shutil.rmtree(root)


@pytest.mark.parametrize("compiler", ["g++", "clang++"])
@pytest.mark.parametrize("standard", ["c++17", "c++20"])
def test_each_public_header_compiles_alone(prefix, compiler, standard):
    """Every installed header is self-contained and clean under -Wall -Wextra -pedantic -Werror."""
    headers = sorted((prefix / "include").rglob("*.h*"))
    assert len(headers) >= 12
    source = "".join(f'#include <{h.relative_to(prefix / "include")}>\n' for h in headers)
    for header in headers:
        line = f'#include <{header.relative_to(prefix / "include")}>\n'
        run([compiler, f"-std={standard}", "-Wall", "-Wextra", "-pedantic", "-Werror", "-fsyntax-only",
             f"-I{prefix / 'include'}", "-x", "c++", "-"], input=line)
    run([compiler, f"-std={standard}", "-Wall", "-Wextra", "-pedantic", "-Werror", "-fsyntax-only",
         f"-I{prefix / 'include'}", "-x", "c++", "-"], input=source)
