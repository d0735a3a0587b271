# SPDX-License-Identifier: Apache-2.0
"""examples/consumer against an installed prefix: built with pkg-config and with find_package(qaic),
as C++17 and C++20, by GCC and Clang with -Wall -Wextra -pedantic -Werror, and run on qaic-emu."""
import json
import os
import pathlib
import shutil
import tempfile

import pytest

from conftest import SOURCE, compile_program, multiarch, run, sanitizers

CONSUMER = SOURCE / "examples/consumer"
# A sanitized libqaic (make sanitize) needs a consumer built with the same sanitizers and the
# same compiler's runtime: GCC's there, both compilers otherwise.
SANITIZE = [f"-fsanitize={sanitizers()}"] if sanitizers() else []
BUILDS = [(compiler, standard) for compiler in (("g++",) if SANITIZE else ("g++", "clang++")) for standard in ("17", "20")]


@pytest.fixture(scope="module")
def program(prefix):
    """smallcnn compiled by the installed compiler, under its newer name."""
    directory = pathlib.Path(tempfile.mkdtemp(prefix="qaic-consumer-qpc."))
    try:
        run([prefix / "bin/qaic-compile", f"-m={SOURCE / 'examples/smallcnn/smallcnn.json'}", f"-aic-binary-dir={directory}"])
        yield directory
    finally:
        shutil.rmtree(directory)


def build_with_pkg_config(prefix, work, compiler, standard):
    out = work / f"pkg-{compiler}-{standard}"
    shutil.copytree(CONSUMER, out)
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / multiarch() / "pkgconfig"))
    run(["make", "-C", out, f"CXX={compiler}", f"STD=c++{standard}", f"CXXFLAGS=-O2 {' '.join(SANITIZE)}"], env=env)
    return out / "consumer"


def build_with_cmake(prefix, work, compiler, standard):
    out = work / f"cmake-{compiler}-{standard}"
    run(["cmake", "-S", CONSUMER, "-B", out, f"-DCMAKE_PREFIX_PATH={prefix}", f"-DCMAKE_CXX_COMPILER={compiler}",
         f"-DCMAKE_CXX_STANDARD={standard}", f"-DCMAKE_CXX_FLAGS={' '.join(SANITIZE)}"])
    run(["cmake", "--build", out])
    return out / "consumer"


def test_consumer_builds_every_way_and_runs_on_the_emulator(prefix, program, emulator):
    work = pathlib.Path(tempfile.mkdtemp(prefix="qaic-consumer."))
    try:
        binaries = []
        for compiler, standard in BUILDS:
            binaries.append(build_with_pkg_config(prefix, work, compiler, standard))
            binaries.append(build_with_cmake(prefix, work, compiler, standard))
        assert len(binaries) == 2 * len(BUILDS)
        # The installed emulator, the installed library: nothing from the build tree.
        emu = emulator(binary=prefix / "bin/qaic-emu")
        outputs = set()
        for binary in binaries:
            libs = run(["ldd", binary]).stdout
            assert str(prefix) in next(l for l in libs.splitlines() if "libqaic.so.1" in l), libs
            result = run([binary, program, "63"], env=emu.env())  # inputs 0x3f3f3f3f = 0.747f
            assert result.stdout.startswith("probs:"), result.stdout
            outputs.add(result.stdout)
        assert len(outputs) == 1  # every build computes the same result
        # A different input gives a different output: the result is computed, not fixed.
        assert run([binaries[0], program, "0"], env=emu.env()).stdout not in outputs
    finally:
        shutil.rmtree(work)


def test_find_package_refuses_an_incompatible_version(prefix):
    work = pathlib.Path(tempfile.mkdtemp(prefix="qaic-consumer-version."))
    try:
        (work / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.16)\nproject(v LANGUAGES CXX)\n"
                                             "find_package(qaic 9.0 REQUIRED)\n")
        result = run(["cmake", "-S", work, "-B", work / "b", f"-DCMAKE_PREFIX_PATH={prefix}"], check=False)
        assert result.returncode != 0 and "qaic" in result.stderr
    finally:
        shutil.rmtree(work)


def test_installed_llm_example_builds_and_generates_pytorchs_tokens(prefix, emulator):
    """examples/llm as installed (share/doc/.../examples/llm): llm-generate built alone with
    find_package(qaic) as C++17, its decoder exported by the installed export_decoder.py and
    compiled by the installed qaic-exec, generating PyTorch's tokens on the installed emulator."""
    example = prefix / "share/doc/qaic-stack/examples/llm"
    work = pathlib.Path(tempfile.mkdtemp(prefix="qaic-llm-example."))
    try:
        run(["cmake", "-S", example, "-B", work / "build", f"-DCMAKE_PREFIX_PATH={prefix}",
             "-DCMAKE_CXX_STANDARD=17", f"-DCMAKE_CXX_FLAGS={' '.join(SANITIZE)}"])
        run(["cmake", "--build", work / "build"])
        run(["/usr/bin/python3", example / "export_decoder.py", work / "model", "--layers", "1", "--prefill-len", "4",
             "--generate", "5"])
        config = json.loads((work / "model/config.json").read_text())
        for seq_len in (4, 1):
            compile_program(prefix / "bin/qaic-exec", work / "model/decoder.onnx", work / str(seq_len),
                            "-onnx-define-symbol=batch_size,1", f"-onnx-define-symbol=seq_len,{seq_len}",
                            f"-onnx-define-symbol=ctx_len,{config['ctx_len']}")
        emu = emulator(binary=prefix / "bin/qaic-emu")
        result = run([work / "build/llm-generate", "--prompt", ",".join(map(str, config["prompt"])), "--tokens", "5",
                      work / "4", work / "1"], env=emu.env())
        assert [int(t) for t in result.stdout.splitlines()[0].split()] == config["tokens"], result.stdout
    finally:
        shutil.rmtree(work)
