"""The parts every Your turn check shares: `Verdict.from_evidence` words a
verdict from its evidence, and `sandbox.sessions` / `sandbox.stage` set up the
scratch database the same way for each check."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from pgq_teach import databases
from pgq_teach.exercises import claim, exercise
from pgq_teach.exercises.learner_sql import Refused, read
from pgq_teach.exercises.sandbox import open_scratch, sessions, stage
from pgq_teach.exercises.verdict import Evidence, Verdict
from pgq_teach.guide import figure
from pgq_teach.infra import server
from pgq_teach.seeding import reset_and_seed
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


def test_a_failure_counts_its_failed_checks_in_one_line_and_takes_the_failure_hint():
    evidence = [
        Evidence("first", "bad", False),
        Evidence("fine", "ok", True),
        Evidence("reported", "3"),
        Evidence("second", "worse", False),
    ]
    verdict = Verdict.from_evidence("05/complete", evidence, "fix it", **PASSED)
    assert not verdict.passed and not verdict.refused
    assert verdict.headline == "2 of 3 checks failed"  # the reported fact is no check; the rows name them
    assert verdict.hint == "fix it"
    assert [e.what for e in verdict.failures] == ["first", "second"]
    assert "NOT YET: 2 of 3 checks failed" in verdict.summary() and "hint: fix it" in verdict.summary()
    assert "Not yet: 2 of 3 checks failed</p>" in verdict.html()


def test_a_long_hint_is_kept_whole_and_a_headline_is_one_line():
    hint = "cap the exponent; " * 60 + "done."
    verdict = Verdict("12/envelope", False, "first line\nsecond line", hint=hint)
    assert verdict.hint == hint and verdict.headline == "first line second line"


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
    databases.drop_database("scratch_test_shared_parts", server=server.get_checker())


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


def batch_claim(text: str):
    ex = exercise("03/batch_claim")
    return read(text, ex.params, ex.words, exercise=ex.key)


def test_a_later_claim_takes_the_first_ones_jobs_only_when_the_claim_neither_skips_nor_rechecks(scratch):
    ex = exercise("03/batch_claim")
    wrong = claim.two_claims(scratch, batch_claim(ex.attempt_text()), claim.BATCH)
    assert len(wrong.first) == claim.BATCH and wrong.both == sorted(wrong.first) and wrong.waited
    right = claim.two_claims(scratch, batch_claim(ex.answer_text()), claim.BATCH)
    assert len(right.first) == len(right.second) == len(right.after) == claim.BATCH
    assert right.both == [] and not right.waited  # SKIP LOCKED: no wait


def test_the_guarded_update_waits_for_the_first_claim_and_then_takes_nothing(scratch):
    ex = exercise("01/guarded_update")
    guarded = claim.two_claims(scratch, read(ex.answer_text(), ex.params, ex.words, exercise=ex.key), 1)
    assert len(guarded.first) == 1 and guarded.second == [] and guarded.waited
    assert guarded.after and guarded.both == []


def test_a_claim_that_locks_but_marks_nothing_is_taken_again_once_the_first_commits(scratch):
    text = statement("exercise/wrong/claim_locks_only").text
    locks_only = claim.two_claims(scratch, batch_claim(text), claim.BATCH)
    assert not locks_only.waited and set(locks_only.first).isdisjoint(locks_only.second)
    assert locks_only.both == sorted(locks_only.after) == sorted(locks_only.first)


def test_a_flaw_one_worker_never_shows_still_fails_the_claim_check(scratch):
    wrong = batch_claim(exercise("03/batch_claim").attempt_text())
    found = claim.race_claim(scratch, wrong, batch=10, workers=1)
    verdict = claim.claim_verdict("03/batch_claim", found, need_lock_in_with=False)
    assert found.race.run_more_than_once == 0 and verdict.numbers["taken_again"] == 10
    twice = next(e for e in verdict.failures if e.what == "jobs run more than once")
    assert twice.found.startswith(f"0 of {found.race.jobs} in the race, but a second claim took jobs 1, 2,")
    assert verdict.hint.startswith("a second claim got job 1 too: does your statement lock")
    assert verdict.guide == figure(1)


def test_the_lock_poll_sees_a_session_wait_for_a_row_and_not_an_idle_one(scratch):
    with scratch.db.connection() as owner:
        reset_and_seed(owner, "send_receipt", 1)
        with scratch.connect(autocommit=False) as holder, scratch.connect() as waiter:
            run(holder, "exercise/touch_job", {"id": 1})
            with ThreadPoolExecutor(1) as pool:
                blocked = pool.submit(run, waiter, "exercise/touch_job", {"id": 1})
                try:
                    idle = claim.wait_for_lock_or_end(owner, holder.info.backend_pid, blocked, within_s=0.3)
                    waits = claim.wait_for_lock_or_end(owner, waiter.info.backend_pid, blocked)
                finally:
                    holder.commit()
                assert blocked.result().rowcount == 1
    assert waits and not idle


def test_a_race_past_its_budget_is_refused(scratch):
    """Eight workers need 2.5 s for 400 jobs of 50 ms each, however fast the claim."""
    model = batch_claim(exercise("03/batch_claim").answer_text())
    with pytest.raises(Refused, match=r"^the race ran past 0.3 s and was stopped"):
        claim.race_claim(scratch, model, batch=1, work_ms=50, budget_s=0.3)
