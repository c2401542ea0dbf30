"""The package's layout: no module in `pgq_teach` is longer than a reader can hold,
so a module that grows past it becomes a package, one module a part (as
`experiments/switching/` and `worker/` did); and the test files follow one
naming scheme (CONTRIBUTING.md, Tests)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pgq_teach

PACKAGE = Path(pgq_teach.__file__).resolve().parent
MOST_LINES = 700
TESTS = Path(__file__).resolve().parent
# test_<what they cover>, in lowercase words: no lesson number, which changes as lessons do.
TEST_FILE_NAME = re.compile(r"test_[a-z]+(?:_[a-z]+)*\.py")


def module_lengths() -> dict[str, int]:
    """Each module of the package, by its path inside it, and its number of lines."""
    return {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def test_no_module_is_over_700_lines():
    over = {name: lines for name, lines in module_lengths().items() if lines > MOST_LINES}
    assert not over, f"over {MOST_LINES} lines (split each into a package): {over}"


def test_test_files_are_named_for_what_they_cover_not_for_lesson_numbers():
    names = sorted(path.name for path in TESTS.glob("test_*.py"))
    odd = [name for name in names if not TEST_FILE_NAME.fullmatch(name)]
    assert len(names) > 50 and not odd, f"not test_<what they cover>.py (CONTRIBUTING.md, Tests): {odd}"


# The one module that starts, stops, finds and cleans the course's servers, and the wheel's
# driver behind it (CONTRIBUTING.md, Where things go): nothing else may reach the driver or
# run pg_ctl, or a server could be started or stopped where `infra/server.py` cannot see it.
SERVER_MODULES = {"infra/server.py", "infra/embedded.py"}
SOURCES = {"pgq_teach": PACKAGE, "tools": PACKAGE.parent / "tools"}


def reaches_the_driver(source: str) -> list[str]:
    """What in `source` imports embedded.py or runs pg_ctl, by line: an import of the module
    (relative or absolute), a `pg_ctl` attribute or program name, or code in a string that
    imports it (a command a tool hands to `python -c`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")  # `from . import embedded` has no module
            if parts[-1] == "embedded" or (
                "embedded" in {a.name for a in node.names} and parts[-1] in ("", "infra")
            ):
                found.append(f"line {line}: imports embedded")
        elif isinstance(node, ast.Import):
            if any(alias.name.endswith("infra.embedded") for alias in node.names):
                found.append(f"line {line}: imports embedded")
        elif isinstance(node, ast.Attribute) and node.attr == "pg_ctl":
            found.append(f"line {line}: calls pg_ctl")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text.split(" ")[0].rsplit("/", 1)[-1] == "pg_ctl" or re.search(
                r"infra(\.| import )embedded", text
            ):
                found.append(f"line {line}: names pg_ctl or embedded in code it runs")
    return found


def test_only_the_server_module_reaches_the_embedded_driver():
    offenders = {}
    for top, folder in SOURCES.items():
        for path in sorted(folder.rglob("*.py")):
            name = path.relative_to(folder).as_posix()
            if top == "pgq_teach" and name in SERVER_MODULES:
                continue
            found = reaches_the_driver(path.read_text(encoding="utf-8"))
            if found:
                offenders[f"{top}/{name}"] = found
    assert not offenders, f"reach servers through pgq_teach/infra/server.py, not embedded.py: {offenders}"


def test_the_driver_check_finds_each_way_in():
    """Each way in that the check above looks for, found, and a docstring that only names the
    program not counted: the check can fail."""
    for code in (
        "from . import embedded",
        "from ..infra import broker, embedded",
        "from pgq_teach.infra.embedded import stop",
        "import pgq_teach.infra.embedded",
        "ep.pg_ctl(['stop'])",
        "wheel_command('pg_ctl', ['stop'], folder)",
        "STOP = 'from pgq_teach.infra import embedded; embedded.stop()'",
    ):
        assert reaches_the_driver(code), code
    assert not reaches_the_driver('"""started with pg_ctl, through infra.server"""\nfrom . import server')
