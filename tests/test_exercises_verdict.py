"""The parts every Your turn check shares: `Verdict.from_evidence` words a
verdict from its evidence, and `sandbox.sessions` / `sandbox.stage` set up the
scratch database the same way for each check."""

import pytest

from pgq_teach import databases
from pgq_teach.exercises.learner_sql import Refused, read
from pgq_teach.exercises.sandbox import open_scratch, sessions, stage
from pgq_teach.exercises.verdict import Evidence, Verdict
from pgq_teach.guide import figure
from pgq_teach.statements import run, statement

PASSED = {"passed_headline": "all good", "passed_hint": "well done"}


def test_a_pass_takes_the_passed_wording_and_reported_facts_never_fail_it():
    evidence = [Evidence("judged", "yes", True), Evidence("only reported", "12 ms")]
    verdict = Verdict.from_evidence(
        "05/complete", evidence, "fix it", **PASSED, server_version="18.6", guide=figure(10), numbers={"n": 1}
    )
    assert verdict.passed and not verdict.refused and not verdict.stopped
    assert (verdict.headline, verdict.hint) == ("all good", "well done")
    assert verdict.evidence == evidence and verdict.numbers == {"n": 1}
    assert verdict.server_version == "18.6" and verdict.guide == figure(10)


def test_a_failure_names_each_failed_fact_in_order_and_takes_the_failure_hint():
    evidence = [
        Evidence("first", "bad", False),
        Evidence("fine", "ok", True),
        Evidence("reported", "3"),
        Evidence("second", "worse", False),
    ]
    verdict = Verdict.from_evidence("05/complete", evidence, "fix it", **PASSED)
    assert not verdict.passed and not verdict.refused
    assert verdict.headline == "first: bad; second: worse"
    assert verdict.hint == "fix it"
    assert [e.what for e in verdict.failures] == ["first", "second"]
    assert "NOT YET" in verdict.summary() and "hint: fix it" in verdict.summary()


def test_without_a_passed_hint_a_pass_keeps_the_hint_given():
    verdict = Verdict.from_evidence(
        "03/claim", [Evidence("a", "b", True)], "", passed_headline="ok", stopped=True
    )
    assert verdict.passed and verdict.hint == "" and verdict.stopped
    assert verdict.numbers == {} and verdict.server_version == "" and verdict.guide is None


def test_verdicts_do_not_share_their_numbers():
    one = Verdict.from_evidence("x", [], "", passed_headline="ok")
    one.numbers["seen"] = 1
    assert Verdict.from_evidence("x", [], "", passed_headline="ok").numbers == {}


@pytest.fixture
def scratch(pg):
    yield open_scratch("test_shared_parts")
    databases.drop_database("scratch_test_shared_parts")


def rows(owner) -> dict[int, dict]:
    cur = run(owner, "lab/all_jobs")
    names = [c.name for c in cur.description]
    return {row[0]: dict(zip(names, row, strict=True)) for row in cur.fetchall()}


def test_sessions_refuse_a_statement_the_server_cannot_read_before_seeding_anything(scratch):
    with pytest.raises(Refused, match="could not read it"):
        with sessions(scratch, read("UPDATE jobz", ()), "send_receipt", 5):
            pass
    with scratch.db.connection() as owner:
        assert rows(owner) == {}


def test_sessions_seed_the_jobs_and_stage_puts_them_in_the_story(scratch):
    learner = read(statement("complete").text, ("id", "fence_token"))
    with sessions(scratch, learner, "send_receipt", 4) as (owner, conn):
        assert conn.info.user == "pgq_learner" and owner.info.user != "pgq_learner"
        stage(owner, [1, 2], "running", 2, 3)
        stage(owner, [3], "ready", 1, 1, None, max_attempts=9)
        jobs = rows(owner)
    assert sorted(jobs) == [1, 2, 3, 4]
    for job_id in (1, 2):
        job = jobs[job_id]
        state = (job["status"], job["attempts"], job["fence_token"], job["max_attempts"])
        assert state == ("running", 2, 3, 5)
        assert job["leased_until"] is not None
    assert (jobs[3]["status"], jobs[3]["max_attempts"], jobs[3]["leased_until"]) == ("ready", 9, None)
    assert jobs[4]["status"] == "ready" and jobs[4]["attempts"] == 0
