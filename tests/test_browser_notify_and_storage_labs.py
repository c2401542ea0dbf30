"""Lessons 07 and 09's labs in a real JupyterLab, in a real browser: the
NOTIFY rules lab and the idle-transaction lab, clicked as a learner would."""

from __future__ import annotations

import pytest

from jupyter_browser import (
    ARTIFACTS,
    BROWSER_TESTS,
    assert_every_lab_finished,
    chart_text_problems,
    run_and_find,
)

pytestmark = BROWSER_TESTS

DRAIN_MS = 120_000  # a 100,000-job drain with the idle transaction open, on a busy machine


@pytest.mark.runs_lesson("07-wake-ups.ipynb")
def test_notify_rules_lab_runs_one_rule_then_all(page, jupyterlab):
    rules = run_and_find(page, jupyterlab, "07-wake-ups.ipynb", ".pgq-notify-lab")
    result, status = rules.locator(".pgq-result"), rules.locator(".pgq-status")

    rules.locator(".pgq-rule-busy-listener").click()
    rows = result.locator("tr.pgq-rule")
    rows.first.filter(has_text="busy listener").wait_for()
    assert rows.count() == 1
    assert rows.first.get_attribute("data-holds") == "yes"
    assert "1 after it ended" in rows.first.inner_text()
    verdict = result.locator(".pgq-verdict").inner_text()
    assert verdict.startswith("the rule busy listener held; not run this time:"), verdict  # not "every rule"
    # Run All ran every rule before this click: the status says so, and asks for no guess or setting
    status.filter(has_text="Every rule has run; press a rule's button to run it again.").wait_for()
    assert "guess" not in status.inner_text() and "setting" not in status.inner_text()

    rules.locator(".pgq-run-all").click()
    result.locator("tr.pgq-rule[data-rule='nobody listening']").wait_for()
    assert rows.count() == 4
    assert [rows.nth(i).get_attribute("data-holds") for i in range(4)] == ["yes"] * 4
    result.locator(".pgq-verdict").filter(has_text="every rule held").wait_for()
    status.filter(has_text="done").wait_for()
    rules.screenshot(path=str(ARTIFACTS / "07-notify-rules.png"))
    # pickup latency and NOTIFY's cost, in their panels and the lesson's cells, drawn by Run All
    assert chart_text_problems(page.locator(".jp-Notebook"), at_least=2, shots="07-lesson") == []
    assert assert_every_lab_finished(page, "07") >= 4  # rules, latency, cost, Your turn


@pytest.mark.runs_lesson("08-indexes.ipynb")
def test_index_labs_finish_and_show_their_done_state(page, jupyterlab):
    run_and_find(page, jupyterlab, "08-indexes.ipynb", ".pgq-lab")
    # the index sizes and the drained index, in the panel and the cells
    assert chart_text_problems(page.locator(".jp-Notebook"), at_least=2, shots="08-lesson") == []
    assert assert_every_lab_finished(page, "08") >= 2  # the drained index, Your turn


@pytest.mark.runs_lesson("09-bloat-and-vacuum.ipynb")
def test_idle_transaction_lab_holds_back_vacuum_until_ended(page, jupyterlab):
    idle = run_and_find(page, jupyterlab, "09-bloat-and-vacuum.ipynb", ".pgq-idle-lab")
    steps = idle.locator(".pgq-result tr.pgq-step")
    before = steps.count()  # the notebook's own run left its steps

    idle.locator(".pgq-open").click()
    idle.locator(".pgq-transaction [data-open='yes']").wait_for()
    # The holders table is a second widget, refreshed by its own query after
    # the open: wait for it to show the session rather than read it at once.
    idle.locator(".pgq-holders").filter(has_text="idle in transaction").wait_for()

    idle.locator(".pgq-drain").click()
    idle.locator(".pgq-status").filter(has_text="after drain, transaction open").wait_for(timeout=DRAIN_MS)
    idle.locator(".pgq-vacuum").click()
    steps.nth(before + 1).wait_for(timeout=DRAIN_MS)
    held = steps.nth(before + 1).locator("td")
    assert "transaction open" in held.nth(0).inner_text()
    assert held.nth(4).inner_text() == "0"  # removed
    assert held.nth(5).inner_text() == "200,000"  # dead but not yet removable
    assert int(held.nth(1).inner_text().replace(",", "")) >= 1_000  # the guide: 1,609 buffers

    idle.locator(".pgq-close").click()
    idle.locator(".pgq-transaction [data-open='no']").wait_for()
    idle.locator(".pgq-vacuum").click()
    steps.nth(before + 2).wait_for(timeout=DRAIN_MS)
    freed = steps.nth(before + 2).locator("td")
    assert "no transaction" in freed.nth(0).inner_text()
    assert freed.nth(5).inner_text() == "0"
    assert int(freed.nth(1).inner_text().replace(",", "")) <= 2  # the guide: 1 buffer
    idle.screenshot(path=str(ARTIFACTS / "09-idle-transaction.png"))
    idle.locator(".pgq-status").filter(has_text="done: after vacuum, no transaction").wait_for()
    assert chart_text_problems(idle, shots="09-idle-lab") == []
    # the drain's size and dead-row charts, in the panel and the cells, and the idle lab's
    assert chart_text_problems(page.locator(".jp-Notebook"), at_least=4, shots="09-lesson") == []
    assert assert_every_lab_finished(page, "09") >= 3  # the drain and idle labs, Your turn
