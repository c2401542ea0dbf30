"""Your turn for lessons 07 and 09: the wake-up graded by a real listener,
and the VACUUM holder graded against real open transactions. Beyond the
model answer and the seeded attempt (tests/test_exercises.py), the other
ways a learner goes wrong each fail for their own reason."""

import pytest

from pgq_teach import exercises

pytestmark = pytest.mark.usefixtures("pg")


@pytest.fixture(autouse=True)
def learner_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))


def model(key: str) -> str:
    return exercises.exercise(key).answer_text()


def test_the_wake_up_carries_the_id_and_is_heard_only_after_commit():
    verdict = exercises.check("07/notify", model("07/notify"), save=False)
    assert verdict.passed
    assert verdict.numbers["payloads"] == [verdict.numbers["job_id"]]
    assert verdict.numbers["heard"] == verdict.numbers["job_ids"] and len(verdict.numbers["job_ids"]) == 2
    assert verdict.numbers["rolled_back_heard"] == 0
    # What the learner reads counts in the singular for one, the plural otherwise.
    found = {e.what: e.found for e in verdict.evidence}
    assert found["rolled back: no job, nothing heard"] == "0 jobs, 0 notifications"
    assert found["nothing heard before COMMIT"] == "0 notifications"
    assert found["each commit enqueues exactly one job"] == "1 job, 1 job"


def test_a_notify_on_another_channel_wakes_nobody():
    text = model("07/notify").replace("'jobs_ready'", "'jobs'")
    verdict = exercises.check("07/notify", text, save=False)
    assert not verdict.passed and verdict.numbers["payloads"] == []
    assert any(e.what.startswith("exactly one notification on jobs_ready") for e in verdict.failures)
    assert "LISTEN on jobs_ready" in verdict.hint


def test_two_notifications_in_one_commit_are_both_heard_and_fail():
    # the grader stops waiting once the first arrives, then listens QUIET_S more: the second,
    # sent by the same commit, must still be counted (a different payload, or the server folds it)
    text = model("07/notify").replace(
        "pg_notify('jobs_ready', id::text)", "pg_notify('jobs_ready', id::text), pg_notify('jobs_ready', 'x')"
    )
    verdict = exercises.check("07/notify", text, save=False)
    assert not verdict.passed
    found = {e.what: e.found for e in verdict.evidence}
    assert found["exactly one notification on jobs_ready after each COMMIT"] == "2 heard, 2 heard"
    assert "notify once" in verdict.hint


def test_a_notify_without_an_enqueue_is_refused_for_the_missing_insert():
    """pg_notify runs only over the rows an INSERT returned (issue 44, M2): a notify on its
    own enqueues nothing, and the refusal says where the call goes."""
    verdict = exercises.check("07/notify", "SELECT pg_notify('jobs_ready', :'kind')", save=False)
    assert not verdict.passed and verdict.refused
    assert "the rows your INSERT returns" in verdict.headline, verdict.headline


def test_the_wake_up_exercise_refuses_ddl():
    verdict = exercises.check("07/notify", "CREATE TABLE x (id int)", save=False)
    assert verdict.refused and not verdict.passed


def test_the_guides_query_without_leaving_itself_out_names_its_own_session():
    text = model("09/holder").replace("AND pid <> pg_backend_pid()", "")
    verdict = exercises.check("09/holder", text, save=False)
    # A verdict with no numbers judged nothing (a refusal or an error): say which, not KeyError.
    assert "culprit" in verdict.numbers, verdict.summary()
    assert not verdict.passed and verdict.numbers["culprit"] in verdict.numbers["found"]
    assert any("your query's own session" in e.found for e in verdict.failures)
    assert "pg_backend_pid()" in verdict.hint


def test_a_query_that_finds_nothing_fails_and_vacuum_stays_held_back():
    text = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle'"
    verdict = exercises.check("09/holder", text, save=False)
    # A verdict with no numbers judged nothing (a refusal or an error): say which, not KeyError.
    assert "culprit" in verdict.numbers, verdict.summary()
    assert not verdict.passed and verdict.numbers["culprit"] not in verdict.numbers["found"]
    assert verdict.numbers["held_before"] == verdict.numbers["held_after"] > 0  # the snapshot still held
    assert all(sc["held_after"] == sc["held_before"] > 0 for sc in verdict.numbers["scenes"])  # and the xid
    assert "backend_xmin" in verdict.hint


def test_the_holder_exercise_runs_only_a_query():
    verdict = exercises.check("09/holder", "UPDATE jobs SET attempts = 0", save=False)
    assert verdict.refused and not verdict.passed
    two = exercises.check("09/holder", "SELECT pid FROM pg_stat_activity; SELECT 1", save=False)
    assert two.refused and "exactly one statement" in two.headline
