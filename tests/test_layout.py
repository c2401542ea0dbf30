"""The package's layout: no module in `pgq_teach` is longer than a reader can hold,
so a module that grows past it becomes a package, one module a part (as
`experiments/switching/` and `worker/` did)."""

from __future__ import annotations

from pathlib import Path

import pgq_teach

PACKAGE = Path(pgq_teach.__file__).resolve().parent
MOST_LINES = 700


def module_lengths() -> dict[str, int]:
    """Each module of the package, by its path inside it, and its number of lines."""
    return {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def test_no_module_is_over_700_lines():
    over = {name: lines for name, lines in module_lengths().items() if lines > MOST_LINES}
    assert not over, f"over {MOST_LINES} lines (split each into a package): {over}"
