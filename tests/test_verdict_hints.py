"""Every exercise's listed wrong answers (`Exercise.wrong_answers`: the seeded attempt
and the common habits, each a file in sql/exercise/wrong/) through the live checker:
each verdict's headline is one line, and its hint is whole and names the mistake the
answer makes, without giving away what a later lesson teaches."""

from pathlib import Path

import pytest

from pgq_teach import exercises
from pgq_teach.exercises.verdict import MAX_TEXT

pytestmark = pytest.mark.usefixtures("pg")

WRONG_DIR = Path(exercises.__file__).resolve().parents[2] / "sql" / "exercise" / "wrong"

# wrong answer -> words its hint must hold: the mistake, in the lesson's terms
NAMES_THE_MISTAKE = {
    "exercise/wrong/unique_enqueue_do_nothing": "DO NOTHING returns no row",
    "exercise/wrong/unique_enqueue_key_alone": "unique per kind",
    "exercise/wrong/unique_enqueue_check_then_insert": "uncommitted job",
    "exercise/wrong/unique_enqueue_same_snapshot": "statement's snapshot",
    "exercise/wrong/unguarded_update": "lock the row it picks",
    "exercise/wrong/claim_without_counts": "attempts = jobs.attempts + 1",
    "exercise/wrong/claim_without_lock": "lock the row it picks",
    "exercise/wrong/claim_without_lease": "leased_until",
    "exercise/wrong/claim_waits_for_locks": "SKIP LOCKED",
    "exercise/wrong/claim_locks_only": "mark it running",
    "exercise/wrong/batch_in_subquery": "lock the row it picks",
    "exercise/wrong/reap_without_status": "status = 'running' as a literal",
    "exercise/wrong/reap_fixed_attempts": "not with a number written into the statement",
    "exercise/wrong/reap_early": "whose lease has passed",
    "exercise/wrong/complete_on_attempts": "resets attempts",
    "exercise/wrong/complete_fixed_token": "fence_token = :fence_token",
    "exercise/wrong/complete_without_fence": "add the fence",
    "exercise/wrong/fail_uncapped": "cap the exponent",
    "exercise/wrong/notify_whole_job": "send the id",
    "exercise/wrong/full_status_index": "status = 'ready'",
    "exercise/wrong/ready_index_unique": "Drop UNIQUE",
    "exercise/wrong/ready_index_including_payload": "Drop the INCLUDE",
    "exercise/wrong/idle_in_transaction": "state = 'idle in transaction'",
    "exercise/wrong/oldest_idle_in_transaction": "state and age",
    "exercise/wrong/cleanup_all_at_once": "more than :batch rows",
    "exercise/wrong/cleanup_fixed_limit": "not a number written into the statement",
    "exercise/wrong/cleanup_delete_limit": "DELETE has no LIMIT",
    "exercise/wrong/complete_batch_on_attempts": "Fence on fence_token",
    "exercise/wrong/complete_batch_any_token": "its own fence_token",
    "exercise/wrong/complete_batch_on_first_token": "its own fence_token",
    "exercise/wrong/complete_all_running": "not in the batch",
    "exercise/wrong/hand_back_spending_a_try": "attempts - 1",
    "exercise/wrong/hand_back_any_token": "its own token",
    "exercise/wrong/fair_claim_fifo": "one per tenant",
    "exercise/wrong/fair_claim_distinct_for_update": "LATERAL subquery",
    "exercise/wrong/fair_claim_locks_unreturned": "locked until commit",
    "envelope/attempt": "Little's law",
}

# where one wrong answer serves two exercises, the words for the one whose lesson differs
NAMES_FOR = {("01/guarded_update", "exercise/wrong/unguarded_update"): "re-checks its WHERE"}

# what a lesson's hint must not give away: (lessons before it, words), e.g. greatest(), lesson 06's
LATER = [("01 03 04 05", "greatest(")]

CASES = [(key, name) for key, ex in exercises.EXERCISES.items() for name in ex.wrong_answers]


def test_every_wrong_answer_file_is_listed_by_an_exercise_and_named_here():
    listed = {name for _, name in CASES}
    files = {f"exercise/wrong/{p.stem}" for p in WRONG_DIR.glob("*.sql")}
    assert files <= listed, sorted(files - listed)
    assert listed == set(NAMES_THE_MISTAKE), sorted(listed ^ set(NAMES_THE_MISTAKE))


@pytest.fixture(autouse=True)
def learner_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))


@pytest.mark.parametrize("key, name", CASES, ids=[f"{k}-{n.rsplit('/', 1)[1]}" for k, n in CASES])
def test_a_wrong_answer_gets_a_one_line_headline_and_a_whole_hint_naming_its_mistake(key, name):
    ex = exercises.exercise(key)
    verdict = exercises.check(key, ex.text_of(name), save=False)
    assert not verdict.passed, verdict.summary()
    assert "\n" not in verdict.headline and len(verdict.headline) <= MAX_TEXT, verdict.headline
    if not verdict.refused:  # the rows name what failed; the headline counts them
        failed, judged = len(verdict.failures), sum(e.ok is not None for e in verdict.evidence)
        assert verdict.headline == f"{failed} of {judged} check{'s' if judged != 1 else ''} failed"
        assert "Not yet: " + verdict.headline in verdict.html()
    assert verdict.hint.endswith((".", "?")) and "…" not in verdict.hint, verdict.hint
    assert NAMES_FOR.get((key, name), NAMES_THE_MISTAKE[name]) in verdict.hint, verdict.summary()
    for lessons, words in LATER:
        if ex.lesson in lessons.split():
            assert words not in verdict.hint, verdict.hint
