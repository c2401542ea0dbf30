"""The crash, fencing and retry labs (lessons 04 to 06) draw, respond to
clicks and finish in a real JupyterLab, in a real browser."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jupyter_browser import (
    ARTIFACTS,
    BROWSER_TESTS,
    assert_every_lab_finished,
    chart_text_problems,
    press,
    run_and_find,
    set_number,
)

pytestmark = BROWSER_TESTS


@pytest.mark.runs_lesson("04-crashed-workers.ipynb")
def test_crash_lab_held_job_free_at_once_leased_job_back_after_its_lease(page, jupyterlab):
    crash = run_and_find(page, jupyterlab, "04-crashed-workers.ipynb", ".pgq-crash-lab")
    hold, lease = crash.locator(".pgq-hold-worker"), crash.locator(".pgq-lease-worker")
    # By hand the lease starts long enough for a person (20 s); the learner may shorten it,
    # as this test does, so it need not wait 20 s. Moving the slider starts again from two jobs.
    assert "20 s lease" in lease.inner_text()
    set_number(crash, "lease, s (by hand)", 3)
    lease.filter(has_text="3 s lease").wait_for()
    crash.locator(".pgq-reset").click()
    hold.locator(".pgq-start:not([disabled])").wait_for()
    crash.locator(".pgq-third-status").filter(has_text="Start the hold-style worker").wait_for()

    hold.locator(".pgq-start").click()
    hold.locator(".pgq-status").filter(has_text="working on job 1").wait_for()
    lease.locator(".pgq-start").click()
    lease.locator(".pgq-status").filter(has_text="working on job 2").wait_for()
    board = crash.locator(".pgq-crash-board")
    board.locator("tr[data-job='2'][data-status='running']").wait_for()
    expect(board).to_contain_text("RowShareLock")  # the board is redrawn as it refreshes: poll it
    crash.screenshot(path=str(ARTIFACTS / "04-crash-lab-working.png"))

    # End the hold worker's session: a third worker takes job 1 at once.
    hold.locator(".pgq-end").click()
    hold.locator(".pgq-status").filter(has_text="session ended").wait_for()
    crash.locator(".pgq-third-claim").click()
    crash.locator(".pgq-third-status").filter(has_text="claimed job 1").wait_for()

    # End the lease worker's session: job 2 stays running, its lease passes, and it is still
    # running (nobody reaped it) until the reaper runs. (The browser may be slower than the
    # 3 s lease, so the test does not race it to show "0 handed back" first.)
    lease.locator(".pgq-end").click()
    lease.locator(".pgq-status").filter(has_text="session ended").wait_for()
    board.locator("tr[data-job='2'][data-status='running']", has_text="passed").wait_for(timeout=10_000)
    crash.screenshot(path=str(ARTIFACTS / "04-crash-lab-lease-passed.png"))
    crash.locator(".pgq-reap").click()
    crash.locator(".pgq-third-status").filter(has_text=re.compile(r"handed back [12] job")).wait_for()
    board.locator("tr[data-job='2'][data-status='ready']").wait_for()
    expect(board).to_contain_text("lease expired")
    crash.screenshot(path=str(ARTIFACTS / "04-crash-lab.png"))
    assert assert_every_lab_finished(page, "04") >= 3  # the crash and cleanup labs, Your turn
    work_the_crash_lab_by_keyboard(page, crash)
    work_the_crash_lab_in_another_order(crash)


def work_the_crash_lab_in_another_order(crash) -> None:
    """Another order of clicks (issue 45): each status line follows the lab's state, not the
    scripted story ("Both workers are working" after one was ended)."""
    hold, lease, board = (
        crash.locator(".pgq-hold-worker"),
        crash.locator(".pgq-lease-worker"),
        crash.locator(".pgq-crash-board"),
    )
    status = crash.locator(".pgq-third-status")
    crash.locator(".pgq-reset").click()
    status.filter(has_text="Start the hold-style worker").wait_for()
    crash.locator(".pgq-third-claim").click()  # before any worker: refused with a sentence
    status.filter(has_text="Start both workers first").wait_for()
    lease.locator(".pgq-start").click()
    status.filter(has_text="Now Start the hold-style worker").wait_for()
    hold.locator(".pgq-start").click()
    hold.locator(".pgq-status").filter(has_text="working on").wait_for()
    lease.locator(".pgq-end").click()  # the lease-style worker first
    status.filter(has_text="press Run the reaper").wait_for()
    assert "Both workers" not in status.inner_text()
    board.locator("tr[data-status='running']", has_text="passed").wait_for(timeout=10_000)
    crash.locator(".pgq-reap").click()
    status.filter(has_text="Now End the hold-style worker's session").wait_for()
    hold.locator(".pgq-end").click()
    status.filter(has_text="Press Third worker claims").wait_for()
    crash.locator(".pgq-third-claim").click()
    status.filter(has_text="done: third worker claimed job").wait_for()
    assert crash.evaluate("el => el.classList.contains('pgq-done')")


def work_the_crash_lab_by_keyboard(page, crash) -> None:
    """The same story by keyboard alone (Tab, then Space or Enter on each button), from Reset
    to the done state; the lease is still the 3 s the mouse run set."""
    hold, lease, board = (
        crash.locator(".pgq-hold-worker"),
        crash.locator(".pgq-lease-worker"),
        crash.locator(".pgq-crash-board"),
    )
    press(page, crash, crash.locator(".pgq-reset"), "Enter")
    crash.locator(".pgq-third-status").filter(has_text="Start the hold-style worker").wait_for()
    assert not crash.evaluate("el => el.classList.contains('pgq-done')")
    press(page, crash, hold.locator(".pgq-start"), "Space")
    hold.locator(".pgq-status").filter(has_text="working on job 1").wait_for()
    press(page, crash, lease.locator(".pgq-start"), "Enter")
    lease.locator(".pgq-status").filter(has_text="working on job 2").wait_for()
    press(page, crash, hold.locator(".pgq-end"), "Space")
    hold.locator(".pgq-status").filter(has_text="session ended").wait_for()
    press(page, crash, crash.locator(".pgq-third-claim"), "Enter")
    crash.locator(".pgq-third-status").filter(has_text="claimed job 1").wait_for()
    press(page, crash, lease.locator(".pgq-end"), "Enter")
    lease.locator(".pgq-status").filter(has_text="session ended").wait_for()
    board.locator("tr[data-job='2'][data-status='running']", has_text="passed").wait_for(timeout=10_000)
    press(page, crash, crash.locator(".pgq-reap"), "Space")
    board.locator("tr[data-job='2'][data-status='ready']").wait_for()
    page.wait_for_function("el => el.classList.contains('pgq-done')", arg=crash.element_handle())


@pytest.mark.runs_lesson("05-stalled-workers-and-fencing.ipynb")
def test_fencing_lab_runs_then_steps_and_plays_the_timeline(page, jupyterlab):
    fencing = run_and_find(page, jupyterlab, "05-stalled-workers-and-fencing.ipynb", ".pgq-fencing-lab")
    fencing.locator("button", has_text="plain").click()
    fencing.locator(".pgq-run").click()
    fencing.locator(".pgq-status").filter(has_text="Press Step").wait_for()
    fencing.locator(".pgq-step-button").click()
    # Polled, not read once: a table or chart may be redrawn (Vega replaces its SVG) after the
    # line a test waited for, so a count read straight after can catch it between two drawings.
    expect(fencing.locator(".pgq-steps-table tr.pgq-step-row")).to_have_count(1)
    fencing.locator(".pgq-play").click()
    fencing.locator(".pgq-result", has_text="guide #10").wait_for()
    expect(fencing.locator(".pgq-steps-table tr.pgq-step-row")).to_have_count(7)
    expect(fencing.locator(".pgq-timeline .vega-embed g.mark-symbol.role-mark path")).to_have_count(7)
    assert chart_text_problems(fencing.locator(".pgq-timeline"), shots="05-fencing-lab") == []
    # the long-job panels' charts and the lesson's own, drawn by Run All
    assert chart_text_problems(page.locator(".jp-Notebook"), at_least=3, shots="05-lesson") == []

    def measured(measure: str) -> str:  # this server's column of the lab's table
        return fencing.locator(".pgq-result tr", has_text=measure).locator("td").nth(2).inner_text()

    assert measured("A's completion, rows updated") == "0" and measured("B's completion, rows updated") == "1"
    assert measured("receipts in the inbox") == "2"
    fencing.screenshot(path=str(ARTIFACTS / "05-fencing-lab.png"))
    fencing.locator(".pgq-status").filter(has_text="done: all 7 steps shown").wait_for()
    expect(fencing.locator(".pgq-step-button")).to_be_disabled()
    expect(fencing.locator(".pgq-play")).to_be_disabled()
    assert assert_every_lab_finished(page, "05") >= 4  # fencing, two long-job labs, Your turn

    # Stop a long job mid-run (issue 45: a 3 s job was recorded done after 0.15 s)
    long_job = page.locator(".pgq-long-job-lab").first
    long_job.locator("button", has_text="Run").click()
    long_job.locator(".pgq-status").filter(has_text="running").wait_for()
    page.wait_for_timeout(500)  # the job claimed and its handler at work
    long_job.locator("button", has_text="Stop").click()
    long_job.locator(".pgq-status").filter(has_text="stopped early").wait_for()
    result = long_job.locator(".pgq-result")
    expect(result).to_contain_text("runs cut short by Stop (not done)")
    expect(result.locator("tr", has_text="the job ended")).not_to_contain_text("done")


@pytest.mark.runs_lesson("06-retries-and-dead-jobs.ipynb")
def test_retry_lab_fails_a_job_five_times_to_dead(page, jupyterlab):
    retry = run_and_find(page, jupyterlab, "06-retries-and-dead-jobs.ipynb", ".pgq-retry-lab")
    retry.locator(".pgq-reset").click()
    rows = retry.locator(".pgq-failures-table tr.pgq-failure")
    rows.first.wait_for(state="detached")
    for n, wait in enumerate(["20 s", "40 s", "80 s", "160 s"], start=1):
        retry.locator(".pgq-fail").click()
        retry.locator(".pgq-status").filter(has_text=f"failure {n}: fail.sql set a wait of {wait}").wait_for()
    # Each failure clears the chart box and Vega draws the chart anew, after the status line: wait
    # for the drawing with the fourth failure's bar (the one before may still be on the page, or
    # none between the two), then poll the count.
    chart = retry.locator(".pgq-chart-box .vega-embed svg")
    bars = retry.locator(".pgq-chart-box .vega-embed g.mark-rect.role-mark path")
    expect(bars).to_have_count(4)
    expect(chart).to_have_count(1)
    assert chart_text_problems(retry.locator(".pgq-chart-box"), shots="06-retry-lab") == []
    retry.locator(".pgq-fail").click()
    retry.locator(".pgq-status").filter(has_text="dead").wait_for()
    expect(rows).to_have_count(5)  # the table and the button change after the status line
    expect(retry.locator(".pgq-failures-table tr.pgq-failure[data-status='dead']")).to_have_count(1)
    expect(retry.locator(".pgq-fail")).to_be_disabled()
    # the chart is drawn once more, with the result after it: wait for both before measuring
    retry.locator(".pgq-result", has_text="guide").wait_for()
    expect(bars).to_have_count(4)
    expect(chart).to_have_count(1)
    retry.screenshot(path=str(ARTIFACTS / "06-retry-lab.png"))
    # the schedule (with the cap), the herds and the jitter lab's chart, drawn by Run All
    assert chart_text_problems(page.locator(".jp-Notebook"), at_least=3, shots="06-lesson") == []
    assert assert_every_lab_finished(page, "06") >= 3  # the retry and herd labs, Your turn
