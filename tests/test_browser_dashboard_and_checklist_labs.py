"""Lessons 10 and 11's widgets in a real JupyterLab and a real browser (lesson
12's rehearsal is tested with Your turn, in tests/test_browser_practice.py)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jupyter_browser import (
    ARTIFACTS,
    BROWSER_TESTS,
    assert_every_lab_finished,
    chart_text_problems,
    clipped_text,
    restart_and_run,
    run_and_find,
)

pytestmark = BROWSER_TESTS


@pytest.mark.runs_lesson("10-operations.ipynb")
def test_dashboard_refreshes_under_load_and_shows_the_forgotten_transaction(page, jupyterlab):
    # Run All takes 75 to 95 s on a quiet machine; a loaded one (a parallel pass on 4 workers
    # with other work beside it) took over 240 s once: a wide bound, as for any time
    dash = run_and_find(page, jupyterlab, "10-operations.ipynb", ".pgq-dashboard")
    # Run All pressed Run on the autovacuum panel with its guess box empty: the table says so, not 0
    page.locator(".pgq-panel .pgq-compare td", has_text="no guess").first.wait_for()
    # n_dead_tup under both settings: the lab's run, its cell, and the stored run
    assert chart_text_problems(page.locator(".jp-Notebook"), at_least=3, shots="10-lesson") == []
    dash.locator("button", has_text="Start").click()
    status = dash.locator(".pgq-status")
    status.filter(has_text="running").wait_for()
    # the forgotten REPEATABLE READ transaction, two seconds old or more
    dash.locator(".pgq-session td", has_text=re.compile(r"^(?:[2-9]|\d\d+)\.\d s$")).first.wait_for(
        timeout=15_000
    )
    # dead rows from the workers' finished jobs: the statistics reach the view a moment after
    # each commit, later on a loaded machine, and the dashboard reads them every second. The
    # count can fall again as dead rows are cleared (a run read 0 just after it had
    # shown more), so the check is that a count above 0 is shown, not read back later.
    expect(dash.locator(".pgq-dead")).to_have_text(re.compile(r"^[1-9][\d,]*$"), timeout=15_000)
    dash.screenshot(path=str(ARTIFACTS / "10-operations.png"))
    dash.locator("button", has_text="Stop").click()
    status.filter(has_text="stopped").wait_for(timeout=20_000)
    assert assert_every_lab_finished(page, "10") >= 3  # the dashboard, autovacuum, Your turn


@pytest.mark.runs_lesson("11-when-to-switch.ipynb")
def test_checklist_recommends_and_keeps_its_ticks_across_a_kernel_restart(page, jupyterlab):
    notebook = "11-when-to-switch.ipynb"
    checklist = run_and_find(page, jupyterlab, notebook, ".pgq-switch-checklist")
    assert assert_every_lab_finished(page, "11") >= 5  # drain, outage, side by side, two Your turns
    assert clipped_text(checklist) == []
    assert checklist.locator(".pgq-recommendation").get_attribute("data-verdict") == "stay"
    # the outage lab's outbox lag, drawn by Run All
    assert chart_text_problems(page.locator(".jp-Notebook"), shots="11-lesson") == []
    checklist.locator(".pgq-signal-fan-out input[type=checkbox]").check()
    checklist.locator(".pgq-recommendation[data-verdict='move']").wait_for()
    checklist.screenshot(path=str(ARTIFACTS / "11-when-to-switch.png"))
    # the lesson's first cell and the checklist's, in a fresh kernel
    checklist = restart_and_run(page, notebook, ["e09aab66", "c3b4bbc3"], ".pgq-switch-checklist")
    assert checklist.locator(".pgq-signal-fan-out input[type=checkbox]").is_checked()
    assert checklist.locator(".pgq-recommendation").get_attribute("data-verdict") == "move"
