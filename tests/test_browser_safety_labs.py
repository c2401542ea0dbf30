"""Lesson 10c's labs (unique jobs, timeouts and the alerts they need) in a real JupyterLab
and a real browser: Run All presses every panel's Run with no guess, and each lab and the
Your turn end done, with nothing cut."""

from __future__ import annotations

import pytest

from jupyter_browser import BROWSER_TESTS, assert_every_lab_finished, clipped_text, run_and_find

pytestmark = BROWSER_TESTS

NOTEBOOK = "10c-unique-jobs-and-timeouts.ipynb"


@pytest.mark.runs_lesson(NOTEBOOK)
def test_the_double_click_hung_handler_and_late_invoice_labs_run_to_their_end(page, jupyterlab):
    first = run_and_find(page, jupyterlab, NOTEBOOK, ".pgq-panel")
    assert clipped_text(first) == []
    # Run All pressed Run on each panel with its guess box empty: each table says so, never 0
    panels = page.locator(".pgq-panel")
    assert panels.count() == 3
    for n in range(3):
        panels.nth(n).locator(".pgq-compare td", has_text="no guess").first.wait_for()
    assert assert_every_lab_finished(page, "10c") >= 4  # three labs and the Your turn
