"""Lesson 10b's labs in a real JupyterLab, in a real browser: the flood, the urgent job,
starvation and the partner's quota, each run from its Run button, each result shown once,
and a seeded random sequence of clicks, Stop included, that leaves every lab in a state its
status line tells truly."""

from __future__ import annotations

import random
import time

import pytest

from jupyter_browser import (
    ARTIFACTS,
    BROWSER_TESTS,
    assert_every_lab_finished,
    chart_text_problems,
    run_and_find,
    set_number,
)

pytestmark = BROWSER_TESTS

LESSON = "10b-priorities-and-fairness.ipynb"
LABS = (".pgq-flood-lab", ".pgq-urgent-lab", ".pgq-starvation-lab", ".pgq-quota-lab")
# The first line of each lab's summary: found once on the page, in its lab, and nowhere else.
SUMMARIES = {
    ".pgq-flood-lab": "jobs of tenant 'big', then",
    ".pgq-urgent-lab": "one urgent job behind",
    ".pgq-starvation-lab": "urgent jobs enqueued and claimed per round",
    ".pgq-quota-lab": "calling the partner for",
}
# Small knobs for the clicked runs: a run ends in seconds, and Stop still lands mid-run.
SMALL = {
    ".pgq-flood-lab": ("flood tenant's jobs", 2_000),
    ".pgq-urgent-lab": ("backlog", 1_000),
    ".pgq-starvation-lab": ("rounds", 200),
    ".pgq-quota-lab": ("seconds per run", 1),
}
RUN_MS = 120_000  # one lab's run, or its end after Stop, on a loaded machine: a wide bound
SEED = 1046  # the random clicks are the same on every run


@pytest.mark.runs_lesson(LESSON)
def test_labs_show_each_result_once_run_from_their_buttons_and_survive_random_clicks_and_stop(
    page, jupyterlab
):
    run_and_find(page, jupyterlab, LESSON, ".pgq-flood-lab")
    assert_each_result_shown_once(page)
    labs = {css: page.locator(css).first for css in LABS}
    for css, lab in labs.items():
        set_number(lab, *SMALL[css])
        run_once(lab)
        lab.screenshot(path=str(ARTIFACTS / f"10b-{css.removeprefix('.pgq-')}.png"))
    flood = labs[".pgq-flood-lab"].locator(".pgq-result").inner_text()
    assert "2,000 jobs of tenant 'big'" in flood
    priority_row = labs[".pgq-urgent-lab"].locator("tr", has_text="before the urgent one, priority claim")
    assert priority_row.locator("td").nth(2).inner_text() == "0"  # this server's column
    assert chart_text_problems(labs[".pgq-quota-lab"], shots="10b-quota-lab") == []

    chooser = random.Random(SEED)
    stops = []
    for _ in range(12):
        css = chooser.choice(LABS)
        lab = labs[css]
        lab.scroll_into_view_if_needed()
        if chooser.random() < 0.25:  # a knob changed between runs: small, as the lab allows
            label, small = SMALL[css]
            set_number(lab, label, chooser.choice([small, max(1, small // 2)]))
        assert press_run(lab), f"{css}: Run is disabled though the lab is not running"
        time.sleep(chooser.uniform(0.0, 1.5))
        stops.append((css, press_stop(lab)))
    # reported, never failed on: how long each Stop took to end its lab
    print("Stop to the lab's end, s:", ", ".join(f"{css} {s:.1f}" for css, s in stops))
    assert assert_every_lab_finished(page, "10b") >= 5  # four labs and Your turn


def assert_each_result_shown_once(page) -> None:
    """After Run All: each lab's result in its lab and nowhere else on the page (issue 45)."""
    outputs = page.locator(".jp-OutputArea-output")
    for css, first_line in SUMMARIES.items():
        assert page.locator(css).count() == 1, f"{css}: {page.locator(css).count()} on the page"
        assert page.locator(css).locator(".pgq-result").filter(has_text=first_line).count() == 1, css
        assert outputs.filter(has_text=first_line).count() == 1, f"{first_line!r} shown more than once"
    # Two charts, each in its lab (the flood's and the quota's): no cell draws one again
    assert page.locator(".jp-Notebook .vega-embed").count() == 2
    assert page.locator(".pgq-flood-lab .vega-embed, .pgq-quota-lab .vega-embed").count() == 2
    assert chart_text_problems(page.locator(".jp-Notebook"), at_least=2, shots="10b-lesson") == []
    # The Your turn verdict is in its widget only: no cell prints it again
    assert outputs.filter(has_text="checks failed").count() == 1


def press_run(lab) -> bool:
    """Press Run if it can be pressed; then the lab must say it is running, with no old
    result under it. False when Run was disabled."""
    run, stop = lab.locator("button", has_text="Run"), lab.locator("button", has_text="Stop")
    if run.is_disabled():
        return False
    assert stop.is_disabled(), "Stop is usable while nothing runs"
    run.click()
    status = lab.locator(".pgq-status")
    status.filter(has_text="running").wait_for()  # a run takes a second or more: long enough to see
    assert lab.locator(".pgq-result").inner_text().strip() == "", "an old result under 'running'"
    return True


def press_stop(lab) -> float:
    """Press Stop (if the run has not ended already) and wait for the lab's end; check that what
    it shows agrees with how it ended. Returns the seconds from the press to the end."""
    stop, status, result = (
        lab.locator("button", has_text="Stop"),
        lab.locator(".pgq-status"),
        lab.locator(".pgq-result"),
    )
    began = time.monotonic()
    if not stop.is_disabled():
        # force: the run may end between the look and the click, and a click on a Stop that
        # has just been disabled would wait 30 s for it to be enabled again (seen in CI).
        # Forced, a click on a disabled button does nothing, which is what a learner's does.
        stop.click(force=True)
    status.filter(has_text="stopped early").or_(status.filter(has_text="done")).wait_for(timeout=RUN_MS)
    ended = time.monotonic() - began
    said, shown = status.inner_text(), result.inner_text()
    assert lab.locator(".pgq-error").count() == 0, said
    assert lab.evaluate("el => el.classList.contains('pgq-done')"), said
    assert not lab.locator("button", has_text="Run").is_disabled(), "Run stays disabled after the end"
    assert stop.is_disabled(), "Stop stays usable after the end"
    # the status line and the result agree on how the run ended
    assert ("stopped early" in said) == ("(stopped early)" in shown), (said, shown)
    return ended


def run_once(lab) -> None:
    """Press Run and wait until the lab is done, with a result that did not stop early."""
    assert press_run(lab)
    lab.locator(".pgq-status").filter(has_text="done").wait_for(timeout=RUN_MS)
    assert "(stopped early)" not in lab.locator(".pgq-result").inner_text()
    assert lab.evaluate("el => el.classList.contains('pgq-done')")
