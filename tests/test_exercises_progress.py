"""Verdicts are kept per learner, `pgq-teach progress` lists them, and the
Your turn widget checks headlessly and shows its verdict as visible text."""

import os
import subprocess
import sys

import pytest

from helpers import assert_fits
from pgq_teach import exercises
from pgq_teach.errors import PgqError
from pgq_teach.infra import learner
from pgq_teach.widgets.your_turn import YourTurn


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    return tmp_path


def run_progress(home, columns: int = 80):
    """`pgq-teach progress` with its learner files in `home`, in a terminal `columns`
    wide: it must succeed, never with a traceback, and keep to the width."""
    out = subprocess.run(
        [sys.executable, "-m", "pgq_teach.cli", "progress"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PGQ_HOME": str(home), "COLUMNS": str(columns)},
        timeout=60,
    )
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert_fits(out.stdout, columns)
    return out


def passed_mark(out: str, key: str) -> str:
    """The 'passed' cell ("yes" or "no") on the exercise's row of the progress table."""
    line = next(line for line in out.splitlines() if f" {key} " in f" {line} ")
    return line.split(key, 1)[1].split()[0]


def progress_cli(home):
    return run_progress(home).stdout


def test_progress_starts_empty_and_lists_every_exercise(home):
    out = progress_cli(home)
    assert f"0 of {len(exercises.EXERCISES)} exercises passed" in out
    for key in exercises.EXERCISES:
        assert passed_mark(out, key) == "no"


def test_the_widget_checks_headlessly_and_saves_the_verdict(pg, home):
    turn = YourTurn("05/complete")
    assert turn.editor.value == exercises.exercise("05/complete").attempt_text()
    assert turn.status.value == "Edit the SQL, then press Check." and not turn.done
    turn.check_button.click()
    verdict = turn.wait(120)
    assert verdict is turn.result and not verdict.passed
    # the check has ended: the bar is full, the status says so, the lab is done
    assert turn.progress.value == turn.progress.max and turn.status.value == "checked" and turn.done
    assert "Not yet" in turn.verdict.value and "Hint:" in turn.verdict.value
    turn.editor.value = exercises.exercise("05/complete").answer_text()
    turn.check_button.click()
    assert turn.wait(120).passed and "Pass:" in turn.verdict.value
    assert learner.load("progress")["05/complete"]["passed"] is True
    out = progress_cli(home)
    assert passed_mark(out, "05/complete") == "yes" and "05: done" in out
    assert passed_mark(out, "01/claim") == "no" and "01: 0 of 2" in out


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


# A progress file pgq-teach did not write, as text, or a folder where the file should be.
HOSTILE = {
    "an entry that is a string": '{"05/complete": "passed"}',
    "a latest try that is a string": '{"05/complete": {"latest": "x"}}',
    "passed as the text no": '{"05/complete": {"passed": "no", "passed_sql": "x"}}',
    "passed as the text no, at the top": '{"passed": "no"}',
    "a pass with no SQL": '{"05/complete": {"passed": 1}}',
    "a list": "[1, 2, 3]",
    "nested 5,000 deep": "[" * 5000 + "]" * 5000,
    "a folder": None,
}


def plant(home, case):
    path = home / "progress.json"
    if HOSTILE[case] is None:
        path.mkdir()
        (path / "inside.txt").write_text("kept")
    else:
        path.write_text(HOSTILE[case])
    return path


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_progress_file_is_set_aside_with_one_line(home, case):
    plant(home, case)
    out = run_progress(home)
    assert f"0 of {len(exercises.EXERCISES)} exercises passed" in out.stdout
    warning = out.stderr.strip().splitlines()
    assert len(warning) == 1 and "moved it to progress.unreadable-" in warning[0], out.stderr
    [aside] = home.glob("progress.unreadable-*.json")  # nothing the learner had is lost
    if HOSTILE[case] is None:
        assert (aside / "inside.txt").read_text() == "kept"
    else:
        assert aside.read_text() == HOSTILE[case]


@pytest.mark.parametrize("case", list(HOSTILE))
def test_the_widget_and_check_read_a_hostile_file_without_a_traceback(home, case):
    plant(home, case)
    turn = YourTurn("05/complete")
    assert turn.editor.value == exercises.exercise("05/complete").attempt_text()
    assert not exercises.done()["05/complete"]
    from pgq_teach.exercises import envelope

    verdict = exercises.check("12/envelope", envelope.ANSWER)  # a form: no server needed
    assert verdict.passed and exercises.done()["12/envelope"] and not exercises.done()["05/complete"]


def test_a_home_that_is_a_file_reads_empty_and_check_still_gives_its_verdict(tmp_path, monkeypatch, capsys):
    not_a_folder = tmp_path / "home-file"
    not_a_folder.write_text("not a folder")
    monkeypatch.setenv("PGQ_HOME", str(not_a_folder))
    out = run_progress(not_a_folder)
    assert "is not a folder" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert YourTurn("05/complete").editor.value == exercises.exercise("05/complete").attempt_text()
    from pgq_teach.exercises import envelope

    assert exercises.check("12/envelope", envelope.ANSWER).passed  # shown, though it cannot be saved
    assert not_a_folder.read_text() == "not a folder"
    with pytest.raises(PgqError, match="is not a folder"):
        learner.save("progress", {})


def test_only_a_passing_verdict_writes_passed(home):
    from pgq_teach.exercises import envelope

    assert not exercises.check("12/envelope", "").passed
    entry = learner.load("progress")["12/envelope"]
    assert entry["passed"] is False and "passed_sql" not in entry and "passed_verdict" not in entry
    assert exercises.check("12/envelope", envelope.ANSWER).passed
    entry = learner.load("progress")["12/envelope"]
    assert entry["passed"] is True and entry["passed_verdict"]["passed"] is True
    assert entry["passed_sql"] == entry["passed_verdict"]["sql"] == envelope.ANSWER


def test_a_huge_try_and_a_try_of_none_keep_every_earlier_verdict(home, capsys):
    """A 21 MB try once made progress.json bigger than learner.load reads, and a try of
    None stored a null: either way the next read set the whole file aside ("0 of 14
    passed"). The SQL is kept cut to exercises.MAX_STORED_SQL, and a try of None as no
    text; the reader refuses both before any server is reached."""
    key, other = "05/complete", "06/fail"
    exercises.record(exercises.Verdict(key, True, "passed"), exercises.exercise(key).answer_text())
    exercises.record(exercises.Verdict(other, False, "not yet"), exercises.exercise(other).attempt_text())
    huge = exercises.check(key, "x" * 21_000_000)
    nothing = exercises.check(other, None)
    assert huge.refused and "21,000,000 characters" in huge.headline, huge.headline
    assert nothing.refused and nothing.headline.count("\n") == 0, nothing.headline
    assert "empty" in nothing.headline, nothing.headline
    found = exercises.entries()
    assert found[key].done and found[key].passed_sql == exercises.exercise(key).answer_text()
    assert len(found[key].latest.sql) == exercises.MAX_STORED_SQL and found[key].latest.sql.endswith("…")
    assert found[other].latest.sql == "" and found[other].latest.refused
    assert not list(home.glob("progress.unreadable-*")) and "moved it" not in capsys.readouterr().err
    assert passed_mark(progress_cli(home), key) == "yes"
