"""The package's layout: no module in `pgq_teach` is longer than a reader can hold,
so a module that grows past it becomes a package, one module a part (as
`experiments/switching/` and `worker/` did); and the test files follow one
naming scheme (CONTRIBUTING.md, Tests)."""

from __future__ import annotations

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
