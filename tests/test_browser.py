"""The lab widgets draw, respond and finish in a real JupyterLab, in a real
browser. nbval cannot see what a widget renders; these tests can."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jupyter_browser import (
    ARTIFACTS,
    BROWSER_TESTS,
    FIRST_CONTROL,
    ThemeRetry,
    assert_every_lab_finished,
    chart_text_problems,
    clipped_text,
    open_and_run_all,
    open_page,
    press,
    run_and_find,
    set_number,
    tab_to,
)

pytestmark = BROWSER_TESTS


# The width of `chars` characters ("0") in an element's own font, in pixels.
CHAR_WIDTH_JS = """(el) => {
    const canvas = document.createElement('canvas').getContext('2d');
    const style = getComputedStyle(el);
    canvas.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    return {width: el.getBoundingClientRect().width, char: canvas.measureText('0').width};
}"""


def assert_guess_fields_are_wide(page) -> int:
    """Every prediction field can show at least 8 characters and has a real <label> tied to
    it (whose text names it to a screen reader); returns how many were checked."""
    fields = page.locator(".pgq-guess input")
    count = fields.count()
    for i in range(count):
        field = fields.nth(i)
        field.scroll_into_view_if_needed()
        label = field.evaluate("el => el.labels.length ? el.labels[0].textContent : ''")
        assert label.strip(), f"guess field {i} has no <label> tied to it"
        size = field.evaluate(CHAR_WIDTH_JS)
        assert size["width"] >= 8 * size["char"], f"guess field {i}: {size['width']:.0f} px, under 8 chars"
    return count


def assert_cells_are_padded(table) -> None:
    """Table cells have visible padding, so columns do not run together."""
    for cell in (table.locator("td").first, table.locator("th").first):
        left = float(cell.evaluate("el => parseFloat(getComputedStyle(el).paddingLeft)"))
        right = float(cell.evaluate("el => parseFloat(getComputedStyle(el).paddingRight)"))
        assert left >= 4 and right >= 4, (left, right)


@pytest.mark.runs_lesson("00-start-here.ipynb")
def test_start_here_connects_and_prints_the_server_version(page, jupyterlab):
    open_and_run_all(page, jupyterlab, "00-start-here.ipynb")
    line = page.locator(".jp-OutputArea-output", has_text="backend").first
    assert "PostgreSQL 1" in line.inner_text()  # 15, 16, 17, 18 ...
    assert assert_guess_fields_are_wide(page) == 1
    summary = page.locator(".jp-OutputArea-output", has_text="Notifications heard in all").first
    summary.scroll_into_view_if_needed()
    assert "no guess" in summary.inner_text()
    summary.screenshot(path=str(ARTIFACTS / "00-enqueue-summary.png"))
    page.screenshot(path=str(ARTIFACTS / "00-start-here.png"), full_page=False)


@pytest.mark.runs_lesson("01-double-send.ipynb")
def test_race_lab_runs_from_its_run_button(page, jupyterlab):
    panel = run_and_find(page, jupyterlab, "01-double-send.ipynb", ".pgq-race-lab")
    set_number(panel, "workers (1 to 16)", 8)
    status = panel.locator(".pgq-status")
    panel.locator("button", has_text="Run").click()
    status.filter(has_text="running").wait_for()
    status.filter(has_text="done").wait_for(timeout=60_000)
    run_the_race_lab_by_keyboard(page, panel)
    twice = int(panel.locator(".pgq-run-twice").inner_text().replace(",", ""))
    assert twice > 0
    # a job run twice, in red: polled, since Vega draws the chart after the status line says done
    expect(panel.locator(".vega-embed g.mark-rect.role-mark path[fill='#d62728']").first).to_be_attached()
    assert chart_text_problems(panel, shots="01-race-lab") == []
    assert "8 workers" in panel.locator(".pgq-result").inner_text()
    assert_cells_are_padded(panel.locator(".pgq-compare"))
    panel.screenshot(path=str(ARTIFACTS / "01-double-send.png"))
    assert assert_guess_fields_are_wide(page) >= 4  # three race labs and the sweep

    # A new run clears the old result before anything else: no old count under "running…".
    set_number(panel, "jobs (10 to 2,000)", 2000)
    panel.locator("button", has_text="Run").click()
    status.filter(has_text="running").wait_for()
    assert panel.locator(".pgq-result").inner_text().strip() == ""
    panel.locator("button", has_text="Stop").click()
    status.filter(has_text="stopped early").wait_for(timeout=60_000)
    sweep = page.locator(".pgq-sweep-lab").first
    chart = sweep.locator(".vega-embed svg").first
    chart.scroll_into_view_if_needed()
    expect(sweep.locator(".vega-embed g.mark-line.role-mark path")).to_have_count(2)
    assert chart_text_problems(sweep, shots="01-sweep") == []
    chart.screenshot(path=str(ARTIFACTS / "01-sweep.png"))
    assert assert_every_lab_finished(page, "01") >= 5  # three race labs, the sweep, Your turn


def run_the_race_lab_by_keyboard(page, panel) -> None:
    """The race lab by keyboard alone: Tab into the guess, type it, Tab to Run, Space; it
    finishes, and the guess reached the result. The focus ring shows where the keys go."""
    panel.evaluate(FIRST_CONTROL)
    guess = panel.locator(".pgq-guess input")
    tab_to(page, guess)
    ring = guess.evaluate("el => getComputedStyle(el).outlineWidth + ' ' + getComputedStyle(el).outlineStyle")
    assert ring == "3px solid", f"the focused guess shows {ring!r}, not the course's focus ring"
    page.keyboard.type("7")
    run = panel.locator("button", has_text="Run")
    tab_to(page, run)
    page.keyboard.press("Space")
    panel.locator(".pgq-status").filter(has_text="running").wait_for()  # not the last run's "done"
    panel.locator(".pgq-status").filter(has_text="done").wait_for(timeout=60_000)
    guessed = panel.locator(".pgq-compare td").filter(has_text=re.compile(r"^\s*7\s*$"))
    assert guessed.count() >= 1, "the guess typed by keyboard is not in the result's table"
    assert panel.evaluate("el => el.classList.contains('pgq-done')")
    press(page, panel, run, "Enter")  # Enter works as well as Space
    panel.locator(".pgq-status").filter(has_text="running").wait_for()
    panel.locator(".pgq-status").filter(has_text="done").wait_for(timeout=60_000)


@pytest.mark.runs_lesson("02-row-locks.ipynb")
def test_lock_lab_shows_waiting_then_served_and_skip_locked_at_once(page, jupyterlab):
    lock_lab = run_and_find(page, jupyterlab, "02-row-locks.ipynb", ".pgq-lock-lab")
    a, b = lock_lab.locator(".pgq-session-a"), lock_lab.locator(".pgq-session-b")
    assert assert_guess_fields_are_wide(page) >= 1
    label = lock_lab.locator("label", has_text="B claims with").first
    assert label.evaluate("el => el.scrollWidth <= el.clientWidth"), "the label 'B claims with' is cut"
    assert clipped_text(lock_lab) == []
    reset(lock_lab)
    columns = [column_x(a, b)]

    # FOR UPDATE: B queues behind A's row lock, and the activity panel says why.
    a.locator(".pgq-begin").click()
    a.locator(".pgq-claim-for-update").click()
    a.locator(".pgq-status").filter(has_text="job 1").wait_for()
    b.locator(".pgq-claim-for-update").click()
    b.locator(".pgq-status").filter(has_text="waiting").wait_for()
    waiting_row = lock_lab.locator(".pgq-activity tr[data-session='B'].pgq-lock-wait")
    waiting_row.wait_for()
    row_text = waiting_row.inner_text()
    assert "Lock" in row_text and "transactionid" in row_text
    assert_cells_are_padded(lock_lab.locator(".pgq-activity table"))
    columns.append(column_x(a, b))
    lock_lab.screenshot(path=str(ARTIFACTS / "02-row-locks-waiting.png"))
    a.locator(".pgq-commit").click()
    b.locator(".pgq-status").filter(has_text="job 2").wait_for()
    columns.append(column_x(a, b))
    lock_lab.screenshot(path=str(ARTIFACTS / "02-row-locks-served.png"))
    b.locator(".pgq-commit").click()

    # SKIP LOCKED: B passes over A's locked row and is served without waiting.
    reset(lock_lab)
    columns.append(column_x(a, b))
    # the session columns hold still through a wait, a commit and a reset
    assert all(abs(x[0] - columns[0][0]) <= 1 and abs(x[1] - columns[0][1]) <= 1 for x in columns), columns
    a.locator(".pgq-begin").click()
    a.locator(".pgq-claim-for-update").click()
    a.locator(".pgq-status").filter(has_text="job 1").wait_for()
    b.locator(".pgq-claim-skip-locked").click()
    b.locator(".pgq-status").filter(has_text="job 2").wait_for(timeout=5_000)
    assert "waiting" not in b.locator(".pgq-status").inner_text()
    lock_lab.screenshot(path=str(ARTIFACTS / "02-row-locks.png"))
    a.locator(".pgq-rollback").click()


@pytest.mark.runs_lesson("02b-lock-waits.ipynb")
def test_lock_waits_lesson_runs_readable_and_accessible(page, jupyterlab):
    """Run All alone checks what every lesson's must: no lab or output wider than its output
    area, no menu cut, no axe-core violation in the course's own DOM (open_and_run_all)."""
    open_and_run_all(page, jupyterlab, "02b-lock-waits.ipynb")
    lab = page.locator(".pgq-lock-lab").first
    lab.scroll_into_view_if_needed()
    assert clipped_text(lab) == []


def column_x(a, b) -> tuple[float, float]:
    """The left edge of each session's column, in pixels."""
    return a.bounding_box()["x"], b.bounding_box()["x"]


def reset(lock_lab) -> None:
    """Roll both sessions back and seed jobs 1 and 2 again; wait until done."""
    lock_lab.locator(".pgq-reset").click()
    lock_lab.locator(".pgq-session-a .pgq-begin:not([disabled])").wait_for()
    lock_lab.locator(".pgq-session-b .pgq-begin:not([disabled])").wait_for()


def test_a_theme_that_fails_to_load_once_is_loaded_again_and_a_second_failure_fails(fresh_page, jupyterlab):
    page = fresh_page  # it loads JupyterLab itself, and routes its theme
    url = f"{jupyterlab.base}/lab/workspaces/theme?reset&token={jupyterlab.token}"
    stylesheet = "**/lab/api/themes/@jupyterlab/theme-light-extension/index.css"
    aborted: list[str] = []

    def fail_once(route) -> None:
        if aborted:
            route.continue_()
        else:
            aborted.append(route.request.url)
            route.abort()

    page.route(stylesheet, fail_once)
    with pytest.warns(ThemeRetry, match="Stylesheet failed to load"):
        open_page(page, jupyterlab, url, label="deliberate")
    assert len(aborted) == 1
    assert page.evaluate("document.body.dataset.jpThemeName") == "JupyterLab Light"

    page.unroute(stylesheet)
    page.route(stylesheet, lambda route: route.abort())
    with pytest.raises(AssertionError, match="again after loading the page once more"):
        with pytest.warns(ThemeRetry):
            open_page(page, jupyterlab, url, label="deliberate")
