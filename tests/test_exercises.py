"""Your turn: every model answer passes its live check, and every seeded wrong
attempt fails it for the reason its lesson teaches."""

import pytest

from pgq_teach import exercises
from pgq_teach.statements import statement

# exercise -> the evidence that must fail for the seeded wrong attempt
WRONG_FOR = {
    "01/claim": "jobs run more than once",
    "01/guarded_update": "jobs run more than once",
    "03/claim": "jobs run more than once",
    "03/batch_claim": "jobs run more than once",
    "04/reap": "plan uses the partial index",
    "05/complete": "requeued, B claimed it again: stale worker",
    "06/fail": "no overflow",
    "07/notify": "payload is the new job's id",
    "08/index": "index's size",
    "09/holder": "every session it names holds VACUUM back",
    "10/cleanup": "largest batch",
    "10b/fair_claim": "every tenant with due work got a job",
    "11/relay_complete": "stale relay A's completion",
    "11/relay_hand_back": "no try spent on the outage",
    "12/envelope": "dead row versions a second",
    "10c/unique_enqueue": "nothing added, its id returned",
}


@pytest.fixture(autouse=True)
def learner_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))


def test_every_exercise_has_a_reason_for_its_wrong_attempt():
    assert set(WRONG_FOR) == set(exercises.EXERCISES)


@pytest.mark.parametrize("key", list(exercises.EXERCISES))
def test_the_model_answer_passes(pg, key):
    ex = exercises.exercise(key)
    verdict = exercises.check(key, ex.answer_text())
    assert verdict.passed, verdict.summary()
    assert not verdict.failures and not verdict.refused
    assert exercises.done()[key]


@pytest.mark.parametrize("key", list(exercises.EXERCISES))
def test_the_seeded_wrong_attempt_fails_for_the_right_reason(pg, key):
    ex = exercises.exercise(key)
    verdict = exercises.check(key, ex.attempt_text())
    assert not verdict.passed and not verdict.refused, verdict.summary()
    assert any(WRONG_FOR[key] in e.what for e in verdict.failures), verdict.summary()
    assert verdict.hint
    assert not exercises.done()[key]


def test_a_racing_claim_names_the_job_two_workers_got(pg):
    verdict = exercises.check("01/claim", exercises.exercise("01/claim").attempt_text())
    assert verdict.numbers["run_more_than_once"] > 0 and not verdict.numbers["locks"]
    assert verdict.hint.startswith("two workers got job ") and "lock the row it picks" in verdict.hint


def test_a_nowait_claim_is_refused_for_the_error_it_raises_not_for_a_wait(pg):
    text = exercises.exercise("03/claim").answer_text().replace("SKIP LOCKED", "NOWAIT")
    verdict = exercises.check("03/claim", text)
    assert verdict.refused and "raised an error (NOWAIT)" in verdict.headline, verdict.summary()


def test_the_guarded_update_counts_wasted_attempts_and_has_no_lock(pg):
    verdict = exercises.check("01/guarded_update", exercises.exercise("01/guarded_update").answer_text())
    assert verdict.passed and verdict.numbers["run_more_than_once"] == 0
    assert not verdict.numbers["locks"]
    # The guard turns lost races into empty attempts: with 8 workers on one
    # "oldest" job some always lose.
    assert verdict.numbers["wasted"] > 0
    assert f"{verdict.numbers['wasted']:,} attempts were wasted" in verdict.headline


def test_a_claim_over_its_limit_fails(pg):
    text = exercises.exercise("03/batch_claim").answer_text().replace("LIMIT :batch", "LIMIT :batch * 3")
    verdict = exercises.check("03/batch_claim", text)
    assert not verdict.passed and verdict.numbers["over_limit"] > 0
    assert any(e.what.startswith("claims over the LIMIT") for e in verdict.failures)


def test_the_one_statement_claim_must_lock_inside_the_with(pg):
    verdict = exercises.check("03/claim", exercises.exercise("01/guarded_update").answer_text())
    assert verdict.numbers["run_more_than_once"] == 0 and not verdict.numbers["locks_in_with"]
    assert not verdict.passed
    # Lesson 03's claim also takes a new fencing token and skips locked rows; the guarded
    # update of lesson 01 does neither (its UPDATE waits on the row the first claim holds,
    # which a machine too loaded to show the wait within PAIR_WAIT_S may miss).
    must = {"locks inside the WITH query", "takes a new fencing token (fence_token + 1)"}
    may = {"a second claim passes over the rows the first holds (SKIP LOCKED)"}
    assert must <= {e.what for e in verdict.failures} <= must | may, verdict.summary()


def test_a_pass_is_kept_when_a_later_try_fails(pg):
    ex = exercises.exercise("05/complete")
    assert exercises.check(ex.key, ex.answer_text()).passed
    assert not exercises.check(ex.key, ex.attempt_text()).passed
    assert exercises.done()[ex.key]
    from pgq_teach.infra import learner

    assert learner.load("progress")[ex.key]["latest"]["passed"] is False


def test_the_unguarded_update_hint_points_at_the_recheck(pg):
    verdict = exercises.check("01/guarded_update", exercises.exercise("01/guarded_update").attempt_text())
    assert not verdict.passed and verdict.hint.startswith("two workers got job ")
    assert "re-checks its WHERE" in verdict.hint


def test_an_unfenced_relay_completion_finishes_the_stale_batch(pg):
    text = (
        exercises.exercise("11/relay_complete")
        .answer_text()
        .replace("AND jobs.fence_token = claimed.fence_token", "")
    )
    verdict = exercises.check("11/relay_complete", text)
    assert not verdict.passed and verdict.numbers["stale_matched"] == 6
    assert "stale relay finished someone else's claim" in verdict.hint


def test_a_relay_completion_that_ignores_its_batch_loses_the_crashed_relays_jobs(pg):
    text = statement("exercise/wrong/complete_all_running").text
    verdict = exercises.check("11/relay_complete", text)
    assert not verdict.passed and verdict.numbers["lost"] == 3  # C's jobs: never reaped, never published
    assert any(e.what.startswith("nothing lost") for e in verdict.failures)


def test_the_envelope_form_refuses_what_is_not_a_form_line(pg):
    verdict = exercises.check("12/envelope", "DROP TABLE jobs")
    assert verdict.refused and not verdict.passed


def test_the_envelope_form_agrees_with_the_rehearsal_calculator(pg):
    from pgq_teach.exercises import envelope

    text = envelope.ANSWER.replace("workers = 400 ", "workers = 401 ")  # within 2 %: rounding
    assert exercises.check("12/envelope", text).passed
    text = envelope.ANSWER.replace("autovacuum_trigger_rows = 37,000", "autovacuum_trigger_rows = 200,050")
    verdict = exercises.check("12/envelope", text)
    assert [e.what for e in verdict.failures] == [
        "dead rows before autovacuum starts (scale factor 0.01, threshold 1000)"
    ]


# What each lesson 01-06 says about its seeded attempt's verdict. These were
# asserts in the lessons' own cells; a lesson cell holds only the lesson's code.
def _claim_01(v):
    assert v.numbers["run_more_than_once"] > 0  # one UPDATE is not enough
    assert not v.numbers["locks"]
    assert v.hint.startswith("two workers got job ")


def _guarded_01(v):
    assert v.numbers["run_more_than_once"] > 0


def _claim_03(v):
    assert v.numbers["run_more_than_once"] > 0
    assert not v.numbers["locks_in_with"]
    assert "lock the row it picks" in v.hint


def _batch_03(v):
    assert v.numbers["run_more_than_once"] > 0


def _reap_04(v):
    assert any("plan uses the partial index" in e.what for e in v.failures)
    assert any("expired leases" in e.what for e in v.failures)  # the last-attempt job stays ready
    assert "jobs_running_idx" not in v.numbers["indexes"]
    assert v.numbers["live_changed"] == []  # the rows are right: live leases stay running
    assert v.numbers["others_changed"] == 0


def _complete_05(v):
    assert v.numbers["stale_hits"] == 1  # the plain lease story is caught...
    assert any("requeued, B claimed it again: stale worker" in e.what for e in v.failures)
    assert any("requeued, B claimed it again: current worker" in e.what for e in v.failures)
    assert "fence_token" in v.hint  # ...the requeue is not


def _fail_06(v):
    assert len(v.failures) == 1  # the waits and the dead rule are right...
    assert "no overflow" in v.failures[0].what
    assert v.failures[0].found.startswith("the statement failed")  # ...until power() overflows


LESSON_SAYS = {
    "01/claim": _claim_01,
    "01/guarded_update": _guarded_01,
    "03/claim": _claim_03,
    "03/batch_claim": _batch_03,
    "04/reap": _reap_04,
    "05/complete": _complete_05,
    "06/fail": _fail_06,
}


@pytest.mark.parametrize("key", list(LESSON_SAYS))
def test_the_seeded_attempt_fails_as_its_lesson_says(pg, key):
    verdict = exercises.check(key, exercises.exercise(key).attempt_text(), save=False)
    assert not verdict.passed, verdict.summary()
    LESSON_SAYS[key](verdict)
