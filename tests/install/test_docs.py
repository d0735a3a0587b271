# SPDX-License-Identifier: Apache-2.0
"""--help, the README and the man page cannot disagree: the README's block for each program is its
--help verbatim, and the man page (help2man's, from the same --help) names the same options."""
import importlib.util
import re
import subprocess

import pytest

from conftest import BUILD, SOURCE, run

spec = importlib.util.spec_from_file_location("readme_help", SOURCE / "scripts/readme_help.py")
readme_help = importlib.util.module_from_spec(spec)
spec.loader.exec_module(readme_help)

SECTIONS = {"qaicd": 8}
OPTION = re.compile(r"(?<![\w/<=-])(--?[A-Za-z][A-Za-z0-9-]*)")


def options(text):
    return set(OPTION.findall(text))


def man_text(program):
    page = BUILD / "man" / f"man{SECTIONS.get(program, 1)}" / f"{program}.{SECTIONS.get(program, 1)}"
    # No hyphenation and long lines, so option names come out whole.
    rendered = run(["groff", "-man", "-Tascii", "-rHY=0", "-rLL=250n", "-P-c", "-P-b", "-P-u", page]).stdout
    return rendered


@pytest.mark.parametrize("program", readme_help.PROGRAMS)
def test_readme_block_is_the_programs_help(program):
    blocks = readme_help.blocks((SOURCE / "README.md").read_text())
    assert program in blocks, f"README.md has no --help block for {program}"
    assert blocks[program] == readme_help.help_text(BUILD, program), \
        f"README.md's {program} --help differs from the program's; run scripts/readme_help.py {BUILD}"


@pytest.mark.parametrize("program", readme_help.PROGRAMS)
def test_man_page_names_exactly_the_options_of_help(program):
    help_options = options(readme_help.help_text(BUILD, program))
    man_options = options(man_text(program))
    assert len(help_options) >= 5
    assert help_options == man_options, (sorted(help_options - man_options), sorted(man_options - help_options))


def test_qaic_compile_page_is_qaic_exec_page():
    link = BUILD / "man/man1/qaic-compile.1"
    assert link.is_symlink() and link.resolve() == (BUILD / "man/man1/qaic-exec.1").resolve()


def test_every_option_the_parsers_accept_is_in_help():
    """A spot check the other way round: options the parsers take, found in --help."""
    for program, accepted in {
        "qaic-runner": ["-D", "--dev-list", "--test-data", "--device-id", "--input-file", "--aic-profiling-out-dir",
                        "--aic-profiling-start-iter", "--dump-input-buffers", "--unbound-random", "--version"],
        "qaic-util": ["--query", "--table", "-f", "--filter", "-j", "--json", "--version"],
        "qaic-exec": ["-aic-hw-version", "-operators-supported", "-stats-batchsize", "-mos", "--version"],
    }.items():
        text = readme_help.help_text(BUILD, program)
        for option in accepted:
            assert option in options(text), (program, option)
