"""The learner's own practice in a real JupyterLab and a real browser.

- Lesson 12's rehearsal: the answer, a follow-up answer, a red-flag tick and a
  self-score survive a kernel restart, the rubric shows only once the step ends,
  and the follow-up answer appears in the summary.
- Your turn: the learner edits the claim exercise, presses Check, and reads the
  verdict (nbval cannot see a widget's rendering; this can). Its notebook is made
  here, in the lab's throwaway copy of the course's folder, so the test does not
  depend on where a lesson puts its Your turn cell.

One module, so one JupyterLab, one PostgreSQL and one Chromium serve both tests:
starting them and loading JupyterLab costs about 10 CPU-seconds a module."""

from __future__ import annotations

import json
import re

import nbformat
import pytest

from jupyter_browser import (
    ARTIFACTS,
    BROWSER_TESTS,
    assert_every_lab_finished,
    clipped_text,
    restart_and_run,
    run_and_find,
)
from pgq_teach import exercises

pytestmark = BROWSER_TESTS

NOTEBOOK = "12-the-interview.ipynb"
ANSWER = "How many orders at peak, and which jobs wait for the payment check?"
FOLLOW_UP = "One shared token bucket per partner, not a cap per worker."
YOUR_TURN = "your-turn-check.ipynb"
CHECK_MS = 90_000


def test_follow_up_answers_and_ticks_survive_a_kernel_restart_and_reach_the_summary(
    page, jupyterlab, kernel_home
):
    widget = run_and_find(page, jupyterlab, NOTEBOOK, ".pgq-rehearsal")
    box = widget.locator(".pgq-answer textarea")
    box.click()
    box.type(ANSWER)
    assert widget.locator(".pgq-rubric").inner_text().strip() == ""  # hidden while answering
    widget.locator("button", has_text="End step").click()
    widget.locator(".pgq-rubric").filter(has_text="strong hire").wait_for()
    widget.locator(".pgq-flags input[type=checkbox]").first.check()
    follow_up = widget.locator(".pgq-follow-up textarea").first
    follow_up.click()
    follow_up.type(FOLLOW_UP)
    widget.locator(".pgq-summary-board").filter(has_text=FOLLOW_UP).wait_for()
    saved = json.loads((kernel_home / "rehearsal.json").read_text())["current"]
    assert saved["answers"]["requirements"] == ANSWER and saved["flags"]["requirements"] == [0]
    assert FOLLOW_UP in saved["follow_up_answers"].values()
    page.screenshot(path=str(ARTIFACTS / "12-the-interview.png"), full_page=False)
    assert clipped_text(widget) == []  # "Show model answer", "Ask the interviewer", ... whole
    assert assert_every_lab_finished(page, "12") >= 1  # Your turn, checked

    # the lesson's first cell and the rehearsal's, in a fresh kernel
    widget = restart_and_run(page, NOTEBOOK, ["0ccf17ab", "684a0d9b"], ".pgq-rehearsal")
    assert widget.locator(".pgq-answer textarea").input_value() == ANSWER
    assert widget.locator(".pgq-flags input[type=checkbox]").first.is_checked()
    assert widget.locator(".pgq-follow-up textarea").first.input_value() == FOLLOW_UP
    assert FOLLOW_UP in widget.locator(".pgq-summary-board").inner_text()
    assert "strong hire" in widget.locator(".pgq-rubric").inner_text()  # the step stays ended


@pytest.fixture(scope="module")
def your_turn_notebook(jupyterlab) -> str:
    """A one-cell notebook with the claim exercise, in the lab's copy of the folder."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell('from pgq_teach.widgets.your_turn import YourTurn\nYourTurn("01/claim")')
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, jupyterlab.workdir / "notebooks" / YOUR_TURN)
    return YOUR_TURN


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
    headline = turn.locator(".pgq-verdict-headline").inner_text()
    assert re.fullmatch(r"Not yet: \d+ of \d+ checks? failed", headline), headline  # the rows say which

    editor.fill(exercises.exercise("01/claim").answer_text())  # typed over, as a learner would
    editor.press("End")  # a keystroke, so the widget syncs the new text before Check
    turn.locator("button", has_text="Check").click()
    turn.locator(".pgq-verdict[data-passed='true']").wait_for(timeout=CHECK_MS)
    text = turn.locator(".pgq-verdict").inner_text()
    assert text.startswith("Pass:")
    assert "no job ran twice, none was lost" in text and "jobs run more than once" in text
    turn.screenshot(path=str(ARTIFACTS / "your-turn-claim.png"))
