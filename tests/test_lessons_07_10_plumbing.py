"""Lessons 07-10 show the learner the lesson's code only: no test plumbing in a
code cell (no lambda, no environment swap, no measurement bookkeeping, no
seeded-attempt asserts). Labs are one line; what proves a seeded attempt fails
lives in tests/test_exercises.py, and labs record their own measurements."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PLUMBING = re.compile(r"lambda |os\.environ|PGQ_HOME|record_measurement|attempt_text")
LESSONS = ["07-wake-ups", "08-indexes", "09-bloat-and-vacuum", "10-operations"]


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_code_cell_holds_test_plumbing(lesson):
    nb = nbformat.read(NOTEBOOKS / f"{lesson}.ipynb", as_version=4)
    found = [
        (cell.get("id"), match.group(0))
        for cell in nb.cells
        if cell.cell_type == "code"
        for match in PLUMBING.finditer(cell.source)
    ]
    assert not found, f"{lesson}: test plumbing in code cells {found}"
