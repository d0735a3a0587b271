# SPDX-License-Identifier: Apache-2.0
"""What users read: the README's Python example runs as written (taken from README.md here, so the
two cannot drift), the type stubs name everything the module has, and help() explains."""
import ast
import inspect
import os
import pydoc
import re
import subprocess
import sys

import pytest

import qaic
import qaicrt
from conftest import BIN, BUILD, SOURCE, compile_program, run


def readme_python_example():
    text = (SOURCE / "README.md").read_text()
    section = text[text.index("## Using Python"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_runs_as_written(emulator, tmp_path):
    example = readme_python_example()
    assert len(example.strip().splitlines()) <= 10
    # The example's paths are relative to the source tree after `make` (build/smallcnn).
    compile_program(BIN / "qaic-exec", SOURCE / "examples/smallcnn/smallcnn.json", tmp_path / "build/smallcnn")
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"), QAIC_ROOT=str(emulator.root))
    result = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    session = qaic.Session(tmp_path / "build/smallcnn", set_size=1)
    assert lines[0] == str({name: shape for name, (shape, _) in session.model_output_shape_dict().items()})
    assert " ---- Stats ----" in lines and any(l.startswith("InferenceCnt 200 ") for l in lines)
    assert " ---- Latency (mean per inference) ----" in lines and any(l.startswith("execToComplete") for l in lines)


def stub_names(tree):
    names = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)} | {
                n.target.id for n in node.body if isinstance(n, ast.AnnAssign)} | {
                n.name for n in node.body if isinstance(n, ast.ClassDef)}
        elif isinstance(node, ast.FunctionDef):
            names[node.name] = None
        elif isinstance(node, ast.AnnAssign):
            names[node.target.id] = None
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names[target.id] = None
    return names


def test_the_stubs_cover_the_module_and_ship_beside_it():
    stub = BUILD / "python/qaicrt.pyi"
    assert stub.read_text() == (SOURCE / "python/qaicrt.pyi").read_text()
    assert (BUILD / "python/qaic/py.typed").exists()
    names = stub_names(ast.parse(stub.read_text()))
    public = {n for n in dir(qaicrt) if not n.startswith("_")}
    assert public - set(names) == set(), "in the module, not in qaicrt.pyi"
    assert {n for n in names if n[0].isupper() and n not in ("Buffer", "LogCallback", "ErrorHandler", "NotifyFn")} <= public
    for name, members in names.items():
        value = getattr(qaicrt, name, None)
        if members is None or not inspect.isclass(value) or issubclass(value, Exception) or hasattr(value, "__members__"):
            continue
        methods = {m for m in vars(value) if not m.startswith("_")}
        assert methods - members == set(), f"qaicrt.{name}: methods missing from the stub"
        assert members - methods - {"__init__", "__eq__", "__hash__"} - set(dir(value)) == set(), f"qaicrt.{name}"


@pytest.mark.parametrize("subject", [qaicrt, qaicrt.InferenceSet, qaicrt.InferenceHandle, qaicrt.QBuffer,
                                     qaicrt.DmaBuffer, qaicrt.Context, qaicrt.Qpc, qaicrt.Util, qaic, qaic.Session])
def test_help_explains(subject):
    text = pydoc.render_doc(subject, renderer=pydoc.plaintext)
    assert len(inspect.getdoc(subject) or "") > 100
    if inspect.isclass(subject):
        for name, member in vars(subject).items():
            if callable(member) and not name.startswith("_"):
                assert inspect.getdoc(getattr(subject, name)), f"{subject.__name__}.{name} has no docstring"
    assert "getAvailable" in pydoc.render_doc(qaicrt.InferenceSet, renderer=pydoc.plaintext)
    assert text
