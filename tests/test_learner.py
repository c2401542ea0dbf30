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
