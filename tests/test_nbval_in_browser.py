"""A lesson that a browser test runs whole is checked there as nbval checks it, not run again
by nbval (tests/jupyter_browser.py, nbval_problems). These checks can fail: each is run on a
lesson's stored cells, as the browser would hand them over, then on the same cells spoiled the
way a broken run would spoil them."""

from __future__ import annotations

from pathlib import Path

import nbformat
import nbval.plugin as nbval
import pytest

from jupyter_browser import nbval_problems

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "07-wake-ups.ipynb"


@pytest.fixture
def items(request) -> list[nbval.IPyNbCell]:
    """nbval's items for the lesson, collected by nbval itself (no kernel is started)."""
    return list(nbval.IPyNbFile.from_parent(request.session, path=NOTEBOOK).collect())


@pytest.fixture
def ran() -> list[nbformat.NotebookNode]:
    """The lesson's code cells with their stored outputs: a run that gave exactly those."""
    return [c for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]


def first_checked_with_stdout(items) -> int:
    for item in items:
        has_stdout = any(o.get("name") == "stdout" for o in item.cell.outputs)
        if item.options["check"] and not item.options["skip"] and has_stdout:
            return item.cell_num
    raise AssertionError("the lesson has no compared cell that prints")


def first_ignored(items) -> int:
    return next(item.cell_num for item in items if not item.options["check"])


def test_a_run_that_gave_the_stored_outputs_passes(items, ran):
    assert nbval_problems(items, ran) == []


def test_a_compared_output_that_changed_fails_and_names_its_cell(items, ran):
    n = first_checked_with_stdout(items)
    stream = next(o for o in ran[n].outputs if o.get("name") == "stdout")
    stream.text = stream.text.replace("-", "+", 1) if "-" in stream.text else stream.text + "x"
    problems = nbval_problems(items, ran)
    assert len(problems) == 1 and problems[0].startswith(f"Cell {n} ") and "outputs differ" in problems[0]


def test_an_ignored_output_may_change_but_never_holds_stderr(items, ran):
    n = first_ignored(items)
    ran[n].outputs = [nbformat.v4.new_output("stream", name="stdout", text="another run's timings\n")]
    assert nbval_problems(items, ran) == []
    ran[n].outputs.append(nbformat.v4.new_output("stream", name="stderr", text="DeprecationWarning: x\n"))
    problems = nbval_problems(items, ran)
    assert len(problems) == 1 and "stray stderr" in problems[0] and problems[0].startswith(f"Cell {n} ")


def test_a_cell_that_raised_fails(items, ran):
    n = first_ignored(items)
    ran[n].outputs.append(nbformat.v4.new_output("error", ename="ValueError", evalue="boom", traceback=[]))
    assert nbval_problems(items, ran) == [
        f"Cell {n} ({items[n].cell.source.splitlines()[0]}) raised ValueError: boom"
    ]


def test_a_run_of_another_shape_fails(items, ran):
    assert nbval_problems(items, ran[:-1]) == [
        f"the browser ran {len(ran) - 1} code cells; the notebook has {len(ran)}"
    ]


def test_a_chosen_part_of_the_lesson_is_checked_against_the_whole_run(items, ran):
    # -k can leave some of nbval's items out; the browser still ran every cell
    n = first_checked_with_stdout(items)
    chosen = [item for item in items if item.cell_num >= n]
    assert nbval_problems(chosen, ran) == []
    next(o for o in ran[n].outputs if o.get("name") == "stdout").text += "more"
    assert len(nbval_problems(chosen, ran)) == 1


ROOT = NOTEBOOK.parent.parent
# What JupyterLab and nbval treat differently, so the browser's outputs would no longer be the
# ones nbval saw: a cleared or updated output (nbval keeps the first), output captured into an
# Output widget by `with` (nbval counts it as the cell's), a cell Run All runs but nbval skips,
# or one allowed to raise (the page's stderr check stops it first). Charts reach an Output
# through append_display_data, which sends the cell nothing.
APART = ("clear_output(", "update_display(", "display_id", ".capture(")
APART_TAGS = {"nbval-skip", "raises-exception"}


def test_the_lessons_use_nothing_that_jupyterlab_and_nbval_treat_apart():
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            tags = set(cell.metadata.get("tags", [])) & APART_TAGS
            words = [w for w in (*APART, "NBVAL_SKIP", "NBVAL_RAISES_EXCEPTION") if w in cell.source]
            if tags or words:
                found.append(f"{path.name}: {sorted(tags) + words}")
    for path in sorted((ROOT / "pgq_teach").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        found += [f"{path.relative_to(ROOT)}: {w}" for w in APART if w in text]
    assert found == [], "check tests/jupyter_browser.py nbval_problems still holds for these"
