"""The learner's files survive: atomic writes, unreadable files set aside."""

from __future__ import annotations

import pytest

from pgq_teach import learner
from pgq_teach.errors import BadInput


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
