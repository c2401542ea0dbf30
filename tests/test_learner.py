"""The learner's files survive: atomic writes, unreadable files set aside."""

from __future__ import annotations

import pytest

from pgq_teach.errors import BadInput
from pgq_teach.infra import learner


@pytest.fixture(autouse=True)
def own_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    return tmp_path


def test_round_trip_and_update_keeps_other_keys():
    learner.save("progress", {"01": {"claim": "pass"}})
    learner.update("progress", "03", {"batch": "fail"})
    assert learner.load("progress") == {"01": {"claim": "pass"}, "03": {"batch": "fail"}}


def test_missing_file_is_empty():
    assert learner.load("rehearsal") == {}


def test_unreadable_file_is_set_aside_not_lost(own_home):
    (own_home / "rehearsal.json").write_text("{not json")
    assert learner.load("rehearsal") == {}
    aside = list(own_home.glob("rehearsal.unreadable-*.json"))
    assert len(aside) == 1 and aside[0].read_text() == "{not json"


def test_measurements_are_kept_per_lesson():
    learner.record_measurement("09-bloat-and-vacuum", "empty_claim_buffers", 275, "buffers")
    learner.record_measurement("03-claim-with-a-lease", "drain_s", 2.1, "s")
    assert learner.measurement("09-bloat-and-vacuum", "empty_claim_buffers")["value"] == 275
    assert learner.measurement("03-claim-with-a-lease", "drain_s")["unit"] == "s"
    assert learner.measurement("10-operations", "anything") is None


@pytest.mark.parametrize("name", ["", "../etc", "Progress", "a/b", None])
def test_bad_names_are_refused(name):
    with pytest.raises(BadInput):
        learner.path_of(name)


def _no_strings(data):
    if any(isinstance(v, str) for v in data.values()):
        raise ValueError("a value is a string")


def test_a_file_that_fails_its_schema_is_set_aside_with_one_line(own_home, capsys):
    (own_home / "progress.json").write_text('{"a": "x"}')
    assert learner.load("progress", _no_strings) == {}
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not hold what pgq-teach writes (a value is a string)" in err[0]
    [aside] = own_home.glob("progress.unreadable-*.json")
    assert aside.read_text() == '{"a": "x"}'


def test_change_reads_checks_edits_and_writes_in_one_step(own_home):
    (own_home / "progress.json").write_text('{"a": "x"}')
    learner.change("progress", lambda data: data.update(b=1), _no_strings)
    assert learner.load("progress") == {"b": 1}  # the bad file was set aside, not edited
    assert len(list(own_home.glob("progress.unreadable-*.json"))) == 1


def test_a_folder_in_the_files_place_is_set_aside(own_home):
    (own_home / "rehearsal.json").mkdir()
    assert learner.load("rehearsal") == {}
    learner.save("rehearsal", {"kept": True})
    assert learner.load("rehearsal") == {"kept": True}


def test_a_home_that_is_a_file_reads_empty_and_refuses_to_save(tmp_path, monkeypatch, capsys):
    from pgq_teach.errors import SetupError

    home_file = tmp_path / "not-a-folder"
    home_file.write_text("x")
    monkeypatch.setenv("PGQ_HOME", str(home_file))
    assert learner.load("progress") == {}
    assert "is not a folder" in capsys.readouterr().err
    with pytest.raises(SetupError, match="set PGQ_HOME to a folder"):
        learner.save("progress", {})
    assert home_file.read_text() == "x"


# Attacks on the files themselves: each once gave a hang, a traceback or a lost update.


def _record_many(home, lesson, count):
    import os

    os.environ["PGQ_HOME"] = str(home)
    for i in range(count):
        learner.record_measurement(lesson, f"k{i}", i)


def test_two_processes_writing_at_once_lose_no_update(own_home):
    """Four processes each record 40 measurements into one file at the same
    time; without the lock between processes, most were lost (60 of 200 kept)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_record_many, args=(own_home, f"l{n}", 40)) for n in range(4)]
    for w in writers:
        w.start()
    for w in writers:
        w.join(timeout=120)
        assert w.exitcode == 0
    kept = learner.load("measurements")
    assert sorted(kept) == ["l0", "l1", "l2", "l3"] and all(len(v) == 40 for v in kept.values())


def test_a_fifo_in_the_files_place_is_set_aside_without_hanging(own_home):
    import os

    os.mkfifo(own_home / "progress.json")  # reading it used to block forever
    assert learner.load("progress") == {}
    [aside] = own_home.glob("progress.unreadable-*.json")
    assert aside.is_fifo()


def test_a_file_bigger_than_pgq_teach_writes_is_set_aside_unread(own_home, monkeypatch):
    monkeypatch.setattr(learner, "MAX_FILE_BYTES", 1_000)
    big = '{"a": "' + "x" * 2_000 + '"}'
    (own_home / "progress.json").write_text(big)
    assert learner.load("progress") == {}
    [aside] = own_home.glob("progress.unreadable-*.json")
    assert aside.read_text() == big


@pytest.mark.parametrize("text", ["[1, 2]", '"text"', "42", "null"])
def test_json_that_is_not_an_object_is_set_aside_not_written_over(own_home, text):
    (own_home / "rehearsal.json").write_text(text)
    learner.update("rehearsal", "current", {})  # used to wrap it as {"value": ...} and write over it
    [aside] = own_home.glob("rehearsal.unreadable-*.json")
    assert aside.read_text() == text and learner.load("rehearsal") == {"current": {}}


@pytest.mark.parametrize(
    "text",
    [
        '{"09": "x"}',
        '{"09": {"k": 5}}',
        '{"09": {"k": {"unit": "s"}}}',
        '{"09": {"k": {"value": 1, "unit": 3}}}',
    ],
)
def test_measurements_of_the_wrong_shape_are_set_aside_not_crashed_on(own_home, text):
    (own_home / "measurements.json").write_text(text)
    assert learner.measurement("09", "k") is None  # AttributeError before
    learner.record_measurement("09", "k", 1, "s")  # TypeError before
    assert learner.measurement("09", "k")["value"] == 1
    [aside] = own_home.glob("measurements.unreadable-*.json")
    assert aside.read_text() == text


@pytest.mark.parametrize(
    "text",
    [
        '{"past": 5}',
        '{"current": "x"}',
        '{"current": {"answers": 5}}',
        '{"past": [3]}',
        '{"current": {"follow_ups": {}}}',
    ],
)
def test_a_rehearsal_file_of_the_wrong_shape_is_set_aside(own_home, text):
    from pgq_teach.interview import Rehearsal

    (own_home / "rehearsal.json").write_text(text)
    rehearsal = Rehearsal()  # TypeError or AttributeError before
    rehearsal.answer("requirements", "a queue")
    assert rehearsal.answer_of("requirements") == "a queue"
    [aside] = own_home.glob("rehearsal.unreadable-*.json")
    assert aside.read_text() == text


def test_a_rehearsal_file_missing_a_part_keeps_its_answers(own_home):
    from pgq_teach.interview import Rehearsal

    (own_home / "rehearsal.json").write_text('{"current": {"answers": {"requirements": "kept"}}}')
    rehearsal = Rehearsal()
    assert rehearsal.answer_of("requirements") == "kept" and not list(own_home.glob("*.unreadable-*"))


def test_a_file_that_can_be_neither_read_nor_moved_is_never_written_over(own_home, monkeypatch):
    from pgq_teach.errors import SetupError

    (own_home / "progress.json").write_text("{not json")
    monkeypatch.setattr(
        learner.Path, "rename", lambda *a: (_ for _ in ()).throw(PermissionError(13, "Permission denied"))
    )
    with pytest.raises(SetupError, match="will not write over it"):
        learner.update("progress", "05/complete", {})
    assert (own_home / "progress.json").read_text() == "{not json"


def damaged_attempt(case):
    """A rehearsal file as Rehearsal writes it, with one part damaged as `case` says."""
    import json
    import random

    from pgq_teach.interview.rehearsal import fresh_attempt

    attempt = fresh_attempt(1.0, random.Random(1), avoid=None, forced=None, minutes=45)
    attempt["answers"]["requirements"] = "my earlier answer"
    damage = {
        "minutes as text": ("minutes", "45"),
        "minutes 1e308": ("minutes", 1e308),
        "answers an int": ("answers", 3),
        "a lone surrogate": ("questions", "\ud800"),
        "a terminal escape": ("questions", "\x1b[2J\x1b]0;owned\x07hi"),
        "an escape in a key": ("answers", {"\x1b[2J": "x"}),
        "a score of 7": ("scores", {"depth": 7}),
        "spent_s not a number": ("spent_s", {"requirements": "lots"}),
    }
    part, value = damage[case]
    attempt[part] = value
    return json.dumps({"current": attempt, "past": []})


DAMAGE = [
    "minutes as text",
    "minutes 1e308",
    "answers an int",
    "a lone surrogate",
    "a terminal escape",
    "an escape in a key",
    "a score of 7",
    "spent_s not a number",
]


@pytest.mark.parametrize("case", DAMAGE)
def test_pgq_teach_interview_sets_a_damaged_rehearsal_aside_in_one_line(own_home, case):
    """The command stops with one line and exit 2, before printing any of the file, and
    the file is kept byte for byte beside (it crashed with a traceback, or printed the escape)."""
    import os
    import subprocess
    import sys

    text = damaged_attempt(case)
    (own_home / "rehearsal.json").write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "pgq_teach.cli", "interview"],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PGQ_HOME": str(own_home)},
    )
    assert done.returncode == 2 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "does not hold what pgq-teach writes" in done.stderr and "\x1b" not in done.stderr
    [aside] = own_home.glob("rehearsal.unreadable-*.json")
    assert aside.read_text() == text and not (own_home / "rehearsal.json").exists()


def test_a_rehearsal_missing_its_times_goes_on_and_keeps_its_answers(own_home):
    import json

    from pgq_teach.interview import Rehearsal

    data = json.loads(damaged_attempt("minutes as text"))
    del data["current"]["spent_s"], data["current"]["minutes"]
    (own_home / "rehearsal.json").write_text(json.dumps(data))
    times = iter([100.0, 130.0])
    rehearsal = Rehearsal(clock=lambda: next(times, 130.0))
    rehearsal.start("requirements")
    rehearsal.stop()  # KeyError: 'spent_s' before
    assert rehearsal.spent("requirements") == 30.0
    assert rehearsal.answer_of("requirements") == "my earlier answer"
    assert not list(own_home.glob("*.unreadable-*"))


@pytest.mark.parametrize("typed", ["\ud800", "\x1b[2Jgone", "a\x07b"])
def test_what_the_learner_types_is_saved_so_it_reads_back(own_home, typed):
    """A lone surrogate or an escape typed into the notebook is kept as U+FFFD, so the file
    never holds what its own check would set aside (a lone surrogate lost the whole file)."""
    from pgq_teach.interview import Rehearsal
    from pgq_teach.interview.rehearsal import UNPRINTABLE

    rehearsal = Rehearsal()
    rehearsal.answer("requirements", "before")
    rehearsal.answer_follow_up(rehearsal.follow_up_keys[0], typed)
    rehearsal.ask(typed)
    saved = Rehearsal().current
    for text in (saved["questions"], saved["follow_up_answers"][rehearsal.follow_up_keys[0]]):
        assert "\ufffd" in text and not UNPRINTABLE.search(text), repr(text)
    assert Rehearsal().answer_of("requirements") == "before"
    assert not list(own_home.glob("*.unreadable-*"))
