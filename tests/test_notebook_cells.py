"""A lesson's code cells hold the lesson's code, not test plumbing: no
`lambda` wrapping an experiment for a panel, no environment swaps, no
measurement bookkeeping, no seeded-attempt asserts. Labs are one line
(`CleanupLab(db)`), they record their own measurements
(pgq_teach/measurements.py), and what proves a seeded attempt fails lives in
tests/test_exercises.py."""

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PLUMBING = re.compile(r"\blambda\b|os\.environ|PGQ_HOME|record_measurement|attempt_text")

# TEMPORARY: lessons whose cells still carry plumbing while other branches move
# it out (issue 22 and the lesson 11 and 12 issues). The lead empties this set
# as those branches land; a lesson listed here that is already clean fails,
# so the set can only shrink.
NOT_YET_CLEAN = {}


def plumbing_in(path: Path) -> list[str]:
    """Each code cell line that matches the plumbing pattern, with its cell id."""
    nb = nbformat.read(path, as_version=4)
    return [
        f"cell {cell.get('id')}: {line.strip()}"
        for cell in nb.cells
        if cell.cell_type == "code"
        for line in cell.source.splitlines()
        if PLUMBING.search(line)
    ]


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_lesson_code_cells_hold_no_test_plumbing(path):
    found = plumbing_in(path)
    if path.name in NOT_YET_CLEAN:
        assert found, f"{path.name} is clean now: take it off NOT_YET_CLEAN"
    else:
        assert not found, f"{path.name} has test plumbing in its code cells:\n" + "\n".join(found)


def test_the_pattern_catches_each_kind_of_plumbing(tmp_path):
    nb = nbformat.v4.new_notebook()
    lines = [
        "panel = ExperimentPanel(lambda progress, stop, guess: run(db))",
        "thread = threading.Thread(target=lambda: rows.append(run(b, mark)))",
        'os.environ["PGQ_HOME"] = str(tmp)',
        'learner.record_measurement("04", "key", 1, "s")',
        'if turn.editor.value == exercises.exercise("04/reap").attempt_text():',
    ]
    nb.cells = [nbformat.v4.new_code_cell(line) for line in lines] + [
        nbformat.v4.new_markdown_cell("prose may say lambda and os.environ freely")
    ]
    path = tmp_path / "99-plumbing.ipynb"
    nbformat.write(nb, path)
    assert len(plumbing_in(path)) == len(lines)
