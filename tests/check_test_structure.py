#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that tests/ mirrors the product (ctest: structure.test_includes).

1. Every folder under tests/unit and tests/integration is named after one product part.
2. A test file includes product headers only of its own part, tests/support and the public API
   (libqaic/include, <qaic/...>); no helper of another part's test folder either. What a test
   needs of another part (opening the emulated device, reading sysfs, building a graph, editing
   a container) it gets from a named service in tests/support, which may include any part.
   Each include is resolved as the compiler resolves it: the including file's folder for quoted
   includes, then the include directories of the build's compile_commands.json for that file
   (for a header: those of the compiled files in its folder). So a bare "Config.hpp" is the
   emulator's or qaicd's by the include path of the target that compiles it.
3. No two test files anywhere under tests/ share a file name (conftest.py aside: pytest requires
   that name in every folder it configures).

Usage: check_test_structure.py SOURCE_DIR BUILD_DIR
"""

import json
import re
import shlex
import sys
from pathlib import Path

# Product folder -> part, longest prefix first. libqaic/include is the public API, allowed to all.
PRODUCT_PARTS = [
    ("libqaic/include", None),
    ("libqaic/base", "base"),
    ("libqaic/container", "container"),
    ("libqaic/driver", "driver"),
    ("libqaic/ir", "ir"),
    ("libqaic/kernels", "kernels"),  # with kernels/format
    ("libqaic/onnx", "onnx"),
    ("libqaic/qaicd", "qaicd-client"),  # qaicd's wire protocol and client library
    ("libqaic/runtime", "runtime"),
    ("kmod-emu", "kmod-emu"),
    ("qaicd", "qaicd"),  # the daemon (qaicd/src)
    ("utils/qaic-exec", "qaic-exec"),
    ("utils/qaic-util", "qaic-util"),
    ("utils/qaic-runner", "qaic-runner"),
    ("utils/lightnet", "lightnet"),
    ("python", "python"),
    ("examples", "examples"),
]
TEST_PARTS = {part for _, part in PRODUCT_PARTS if part and part != "examples"}
TEST_KINDS = ("unit", "integration")
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cc", ".c"}
TEST_FILE_SUFFIXES = SOURCE_SUFFIXES | {".py", ".sh"}
NAMES_PYTEST_REQUIRES = {"conftest.py", "__init__.py"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)


def part_of(path, source):
    """The product part a file under `source` belongs to; None for the public API; raises
    KeyError for anything else."""
    relative = path.relative_to(source).as_posix()
    for prefix, part in PRODUCT_PARTS:
        if relative == prefix or relative.startswith(prefix + "/"):
            return part
    raise KeyError(relative)


def include_dirs_by_file(build):
    """compile_commands.json: each compiled file -> its include directories in search order
    (-iquote, then -I, then -isystem, as the compiler searches them)."""
    commands = json.loads((build / "compile_commands.json").read_text())
    result = {}
    for entry in commands:
        args = entry.get("arguments") or shlex.split(entry["command"])
        directory = Path(entry["directory"])
        found = {"-iquote": [], "-I": [], "-isystem": []}
        arguments = iter(args)
        for arg in arguments:
            for flag, dirs in found.items():
                if arg == flag:
                    dirs.append(next(arguments, ""))
                    break
                if arg.startswith(flag):  # no flag is a prefix of another ("-I" is upper case)
                    dirs.append(arg[len(flag):])
                    break
        ordered = found["-iquote"] + found["-I"] + found["-isystem"]
        dirs = [(directory / d).resolve() for d in ordered]
        result[(directory / entry["file"]).resolve()] = dirs
    return result


def search_path(path, compiled):
    """The include directories `path` is compiled with: its own compile command, or for a file
    that has none (a header) the union of those of the compiled files in its folder."""
    if path in compiled:
        return compiled[path]
    dirs = []
    for other, other_dirs in compiled.items():
        if other.parent == path.parent:
            dirs += [d for d in other_dirs if d not in dirs]
    return dirs


def resolve(path, quoted, name, dirs):
    candidates = ([path.parent] if quoted else []) + dirs
    for directory in candidates:
        target = directory / name
        if target.is_file():
            return target.resolve()
    return None


def includes(path):
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return [(kind == '"', name) for kind, name in INCLUDE.findall(text)]


def check_folders(tests):
    problems = []
    for kind in TEST_KINDS:
        for folder in sorted((tests / kind).iterdir()):
            if folder.is_dir() and folder.name not in TEST_PARTS:
                problems.append(f"tests/{kind}/{folder.name}: not a product part "
                                f"({', '.join(sorted(TEST_PARTS))})")
    return problems


def check_includes(source, build, tests, compiled):
    problems = []
    for kind in TEST_KINDS:
        for path in sorted((tests / kind).rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            path = path.resolve()
            own = path.relative_to(tests / kind).parts[0]
            dirs = search_path(path, compiled)
            shown = path.relative_to(source)
            for quoted, name in includes(path):
                target = resolve(path, quoted, name, dirs)
                outside = target is None or not target.is_relative_to(source)
                if outside or target.is_relative_to(build):
                    continue  # system and third-party headers, generated files in the build
                if target.is_relative_to(tests):
                    where = target.relative_to(tests).parts
                    if where[0] == "support" or (where[0] in TEST_KINDS and where[1] == own):
                        continue
                    problems.append(f"{shown}: includes {name} ({target.relative_to(source)}), a "
                                    f"test helper of another part: move it to tests/support")
                    continue
                try:
                    part = part_of(target, source)
                except KeyError:
                    continue  # not product code (e.g. a build tree inside the checkout)
                if part is None or part == own:
                    continue
                problems.append(f"{shown}: includes {name} ({target.relative_to(source)}) of part "
                                f"{part}; a {own} test may include only {own}, tests/support and "
                                f"<qaic/...>")
    return problems


def check_unique_names(tests):
    seen = {}
    for path in sorted(tests.rglob("*")):
        if (path.is_file() and path.suffix in TEST_FILE_SUFFIXES
                and path.name not in NAMES_PYTEST_REQUIRES and "corpus" not in path.parts):
            seen.setdefault(path.name, []).append(path.relative_to(tests).as_posix())
    return [f"test file name {name} is used {len(paths)} times: {', '.join(paths)}"
            for name, paths in sorted(seen.items()) if len(paths) > 1]


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    source, build = Path(argv[1]).resolve(), Path(argv[2]).resolve()
    tests = source / "tests"
    if not (build / "compile_commands.json").is_file():
        print(f"{build}/compile_commands.json is missing (configure the build first)",
              file=sys.stderr)
        return 2
    compiled = include_dirs_by_file(build)
    problems = (check_folders(tests) + check_includes(source, build, tests, compiled)
                + check_unique_names(tests))
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) in the structure of tests/", file=sys.stderr)
        return 1
    print("tests/ mirrors the product: folders, includes and file names")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
