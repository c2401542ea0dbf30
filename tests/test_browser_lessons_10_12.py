"""Lessons 10 to 12's widgets in a real JupyterLab and a real browser: the
rehearsal keeps what the learner typed and ticked across a kernel restart."""

from __future__ import annotations

import json
import re

from jupyter_browser import ARTIFACTS, BROWSER_TESTS, KERNEL_IDLE, run_and_find

pytestmark = BROWSER_TESTS

ANSWER = "Jobs commit in the order's transaction; delivery is at least once."


RESTART = """async () => {
  const ctx = window.jupyterapp.shell.currentWidget.sessionContext;
  await ctx.session.kernel.restart();
}"""


def test_rehearsal_keeps_the_answer_and_ticks_across_a_kernel_restart(page, jupyterlab, kernel_home):
    notebook = "12-the-interview.ipynb"
    widget = run_and_find(page, jupyterlab, notebook, ".pgq-rehearsal")
    box = widget.locator(".pgq-answer textarea")
    box.click()
    box.type(ANSWER)
    widget.locator("button", has_text="Show model answer").click()
    widget.locator(".pgq-model").filter(has_text="A model answer").wait_for()
    assert "at least once" in widget.locator(".pgq-model").inner_text()
    widget.locator(".pgq-rubric input[type=checkbox]").first.check()
    widget.locator(".pgq-score").filter(has_text="1/4").wait_for()
    saved = json.loads((kernel_home / "rehearsal.json").read_text())["current"]
    assert saved["answers"]["need"] == ANSWER and saved["ticks"]["need"] == ["why"]
    page.screenshot(path=str(ARTIFACTS / "12-the-interview.png"), full_page=False)

    page.evaluate(RESTART)
    page.wait_for_function(KERNEL_IDLE, arg=notebook, timeout=60_000)
    widget = run_and_find(page, jupyterlab, notebook, ".pgq-rehearsal")
    assert widget.locator(".pgq-answer textarea").input_value() == ANSWER
    assert widget.locator(".pgq-rubric input[type=checkbox]").first.is_checked()
    assert "A model answer" in widget.locator(".pgq-model").inner_text()


def test_dashboard_refreshes_under_load_and_shows_the_forgotten_transaction(page, jupyterlab):
    dash = run_and_find(page, jupyterlab, "10-operations.ipynb", ".pgq-dashboard", timeout_ms=240_000)
    # Run All pressed Run on the autovacuum panel with its guess box empty: the table says so, not 0
    page.locator(".pgq-panel .pgq-compare td", has_text="no guess").first.wait_for()
    dash.locator("button", has_text="Start").click()
    status = dash.locator(".pgq-status")
    status.filter(has_text="running").wait_for()
    # the forgotten REPEATABLE READ transaction, two seconds old or more
    dash.locator(".pgq-session td", has_text=re.compile(r"^(?:[2-9]|\d\d+)\.\d s$")).first.wait_for(
        timeout=15_000
    )
    assert int(dash.locator(".pgq-dead").inner_text().replace(",", "")) > 0
    dash.screenshot(path=str(ARTIFACTS / "10-operations.png"))
    dash.locator("button", has_text="Stop").click()
    status.filter(has_text="stopped").wait_for(timeout=20_000)


def test_checklist_recommends_and_keeps_its_ticks_across_a_kernel_restart(page, jupyterlab):
    notebook = "11-when-to-switch.ipynb"
    checklist = run_and_find(page, jupyterlab, notebook, ".pgq-switch-checklist")
    assert checklist.locator(".pgq-recommendation").get_attribute("data-verdict") == "stay"
    checklist.locator(".pgq-signal-fan-out input[type=checkbox]").check()
    checklist.locator(".pgq-recommendation[data-verdict='move']").wait_for()
    checklist.screenshot(path=str(ARTIFACTS / "11-when-to-switch.png"))
    page.evaluate(RESTART)
    page.wait_for_function(KERNEL_IDLE, arg=notebook, timeout=60_000)
    checklist = run_and_find(page, jupyterlab, notebook, ".pgq-switch-checklist")
    assert checklist.locator(".pgq-signal-fan-out input[type=checkbox]").is_checked()
    assert checklist.locator(".pgq-recommendation").get_attribute("data-verdict") == "move"
