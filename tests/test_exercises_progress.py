"""Verdicts are kept per learner, `pgq-teach progress` lists them, and the
Your turn widget checks headlessly and shows its verdict as visible text."""

import os
import subprocess
import sys

import pytest

from pgq_teach import exercises, learner
from pgq_teach.widgets.your_turn import YourTurn


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    return tmp_path


def progress_cli(home):
    out = subprocess.run(
        [sys.executable, "-m", "pgq_teach.cli", "progress"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PGQ_HOME": str(home)},
        timeout=60,
    )
    assert out.returncode == 0 and "Traceback" not in out.stderr
    return out.stdout


def test_progress_starts_empty_and_lists_every_exercise(home):
    out = progress_cli(home)
    assert f"0 of {len(exercises.EXERCISES)} exercises passed" in out
    for key in exercises.EXERCISES:
        assert f"[ ] {key}" in out


def test_the_widget_checks_headlessly_and_saves_the_verdict(pg, home):
    turn = YourTurn("05/complete")
    assert turn.editor.value == exercises.exercise("05/complete").attempt_text()
    turn.check_button.click()
    verdict = turn.wait(120)
    assert verdict is turn.result and not verdict.passed
    assert "Not yet" in turn.verdict.value and "Hint:" in turn.verdict.value
    turn.editor.value = exercises.exercise("05/complete").answer_text()
    turn.check_button.click()
    assert turn.wait(120).passed and "Pass:" in turn.verdict.value
    assert learner.load("progress")["05/complete"]["passed"] is True
    out = progress_cli(home)
    assert "[x] 05/complete" in out and "lesson 05: done" in out
    assert "[ ] 01/claim" in out and "lesson 01: 0 of 2" in out


def test_the_widget_refuses_hostile_sql_with_a_visible_reason(pg, home):
    turn = YourTurn("01/claim", sql="DROP TABLE jobs", save=False)
    turn.check_button.click()
    verdict = turn.wait(60)
    assert verdict.refused and "Refused" in turn.verdict.value and "DROP is not one" in turn.verdict.value
    assert learner.load("progress") == {}


def test_what_the_learner_typed_comes_back_in_a_new_widget(pg, home):
    ex = exercises.exercise("10/cleanup")
    mine = ex.answer_text() + "\n-- my own version"
    first = YourTurn(ex.key)
    first.editor.value = mine
    first.check_button.click()
    assert first.wait(120).passed
    again = YourTurn(ex.key)  # a new kernel, the next day
    assert again.editor.value == mine
    assert learner.load("progress")[ex.key]["passed_sql"] == mine
    again.reset_button.click()
    assert again.editor.value == ex.attempt_text()
