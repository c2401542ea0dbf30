"""Your turn in a real JupyterLab and browser: the learner edits the claim
exercise, presses Check, and reads the verdict (nbval cannot see a widget's
rendering; this can). The notebook is made here, in the lab's throwaway copy
of the course's folder, so this test does not depend on where a lesson puts
its Your turn cell."""

from __future__ import annotations

import nbformat
import pytest

from jupyter_browser import ARTIFACTS, BROWSER_TESTS, run_and_find
from pgq_teach import exercises

pytestmark = BROWSER_TESTS

NOTEBOOK = "your-turn-check.ipynb"
CHECK_MS = 90_000


@pytest.fixture(scope="module")
def your_turn_notebook(jupyterlab) -> str:
    """A one-cell notebook with the claim exercise, in the lab's copy of the folder."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell('from pgq_teach.widgets.your_turn import YourTurn\nYourTurn("01/claim")')
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, jupyterlab.workdir / "notebooks" / NOTEBOOK)
    return NOTEBOOK


def check(turn) -> str:
    """Press Check and return the verdict's visible text once it is there."""
    turn.locator("button", has_text="Check").click()
    turn.locator(".pgq-verdict").wait_for(timeout=CHECK_MS)
    return turn.locator(".pgq-verdict").inner_text()


def test_the_learner_edits_the_claim_checks_it_and_reads_the_verdict(page, jupyterlab, your_turn_notebook):
    turn = run_and_find(page, jupyterlab, your_turn_notebook, ".pgq-your-turn")
    editor = turn.locator("textarea")
    assert editor.input_value() == exercises.exercise("01/claim").attempt_text()

    verdict = check(turn)  # the seeded attempt, as the page shows it
    assert verdict.startswith("Not yet:")
    assert "two workers got job" in verdict and "lock the row it picks" in verdict

    editor.fill(exercises.exercise("01/claim").answer_text())  # typed over, as a learner would
    editor.press("End")  # a keystroke, so the widget syncs the new text before Check
    turn.locator("button", has_text="Check").click()
    turn.locator(".pgq-verdict[data-passed='true']").wait_for(timeout=CHECK_MS)
    text = turn.locator(".pgq-verdict").inner_text()
    assert text.startswith("Pass:")
    assert "no job ran twice, none was lost" in text and "jobs run more than once" in text
    turn.screenshot(path=str(ARTIFACTS / "your-turn-claim.png"))
