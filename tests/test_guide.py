"""The guide's figures are written once, in pgq_teach/guide.py: their words are
filled in from their values, and no other module of the package spells out a
figure's distinctive numbers (reproduce reads them from there)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pgq_teach.guide import FIGURES, GuideFigure

PACKAGE = Path(__file__).resolve().parent.parent / "pgq_teach"

# Files that still spell a figure's numbers, and why (none now): each reads guide.figure(n).
STILL_COPIED: dict[str, str] = {}


def distinctive(value: object) -> list[str]:
    """How a number of a figure would be spelled, if it is one that would not turn up
    by chance: an integer of 100 or more that is not a multiple of ten (212, 3,104),
    or a number with two decimals and three digits (2.01). Sizes such as 100,000 or
    400, and round numbers like 260 or 160, appear in code for their own reasons."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int) and value >= 100 and value % 10:
        return [str(value), f"{value:,}", f"{value:_}"]
    if isinstance(value, float) and len(f"{value:.2f}".replace(".", "").strip("0")) >= 3:
        return [f"{value:.2f}"]
    return []


def numbers(values: dict) -> list[str]:
    flat = [x for v in values.values() for x in (v if isinstance(v, (tuple, list)) else [v])]
    return sorted({spelling for x in flat for spelling in distinctive(x)})


def test_the_scan_knows_the_figures_numbers():
    assert numbers(FIGURES[1].values) == ["212", "238", "244", "251"]
    assert "3,104" in numbers(FIGURES[14].values) and "2.01" in numbers(FIGURES[2].values)


def test_no_other_module_spells_a_figures_numbers():
    found: dict[str, list[str]] = {}
    for figure in FIGURES.values():
        for spelling in numbers(figure.values):
            pattern = re.compile(rf"(?<![\w.,]){re.escape(spelling)}(?![\w]|[.,]\d)")
            for path in sorted(PACKAGE.rglob("*.py")):
                name = path.relative_to(PACKAGE).as_posix()
                if name == "guide.py" or name in STILL_COPIED:
                    continue
                for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                    if pattern.search(line):
                        found.setdefault(f"{name}:{n}", []).append(f"guide #{figure.number}: {spelling}")
    assert found == {}, "read these from pgq_teach.guide.figure(n).values instead: " + repr(found)


def test_a_figures_words_are_filled_in_from_its_values():
    naive = FIGURES[1]
    assert "212 to 238 on 18" in naive.figure and "8 workers, 400 jobs" in naive.experiment
    assert naive.by_major == {16: "244, 251, 260 of 400 twice", 18: "212 to 238 of 400 twice"}
    assert "under 10 ms" in FIGURES[4].figure  # a value in seconds, said in milliseconds
    assert "{" not in "".join(
        f.figure + f.experiment + "".join(f.by_major.values()) for f in FIGURES.values()
    )
    changed = GuideFigure(1, naive.experiment, "{pg18[0]} to {pg18[1]}", {"pg18": (200, 250)})
    assert changed.figure == "200 to 250" and changed.by_major == {16: "200 to 250", 18: "200 to 250"}


def test_a_blank_with_no_value_fails_when_the_module_loads():
    with pytest.raises(KeyError):
        GuideFigure(99, "a run", "{missing} jobs")
