"""Lesson 12's rehearsal in a real JupyterLab and a real browser: the answer,
a follow-up answer, a red-flag tick and a self-score survive a kernel restart,
the rubric shows only once the step ends, and the follow-up answer appears in
the summary."""

from __future__ import annotations

import json

from jupyter_browser import (
    ARTIFACTS,
    BROWSER_TESTS,
    assert_every_lab_finished,
    clipped_text,
    restart_and_run,
    run_and_find,
)

pytestmark = BROWSER_TESTS

NOTEBOOK = "12-the-interview.ipynb"
ANSWER = "How many orders at peak, and which jobs wait for the payment check?"
FOLLOW_UP = "One shared token bucket per partner, not a cap per worker."


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
