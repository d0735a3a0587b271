# SPDX-License-Identifier: Apache-2.0
"""The fixtures both LLM suites share: one qaic-emu per test module (a generation's compiled
programs and its emulator outlive single tests) and a work directory per module."""
import os
import pathlib
import sys

import pytest

BUILD = pathlib.Path(os.environ.get("QAIC_BUILD_DIR", "build")).resolve()
SOURCE = pathlib.Path(os.environ.get("QAIC_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[3])).resolve()
sys.path.insert(0, str(SOURCE / "tests/support"))
from qaic_processes import Emulator  # noqa: E402


@pytest.fixture(scope="module")
def emulator():
    emu = Emulator(BUILD / "bin" / "qaic-emu")
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture(scope="module")
def workdir(request, tmp_path_factory):
    return tmp_path_factory.mktemp(request.module.__name__.removeprefix("test_"))
