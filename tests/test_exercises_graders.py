"""The graders test the behaviour, not one story: each checker stages scenes
drawn afresh (ids, fence tokens, leases, batch sizes, max_attempts, due and
not-yet-due jobs, decoy sessions), so a statement that writes one story's
value into its text or ignores a column fails, for the lesson's reason, with
a hint that names the fix. Every model answer still passes (tests/test_exercises.py)."""

import contextlib

import psycopg
import pytest

from pgq_teach import databases, exercises
from pgq_teach.infra import server
from pgq_teach.statements import run, statement

pytestmark = pytest.mark.usefixtures("pg")

# (exercise, seeded wrong answer under sql/, evidence that must fail, words the hint must hold)
WRONG = [
    (
        "10b/fair_claim",
        "exercise/wrong/fair_claim_fifo",
        "every tenant with due work got a job",
        "one per tenant",
    ),
    (
        "10b/fair_claim",
        "exercise/wrong/fair_claim_fifo",
        "no tenant got a second job before every tenant had its first",
        "then the oldest of those",
    ),
    (
        "10b/fair_claim",
        "exercise/wrong/fair_claim_locks_unreturned",
        "locks only the jobs it returns",
        "LIMIT right above the LATERAL",
    ),
    ("03/claim", "exercise/wrong/claim_without_lease", "writes the lease it is given", "leased_until"),
    ("03/claim", "exercise/wrong/claim_without_lease", "jobs not due yet left alone", "run_at BETWEEN"),
    (
        "03/claim",
        "exercise/wrong/claim_without_lease",
        "the first claim takes the oldest due",
        "ORDER BY run_at",
    ),
    ("04/reap", "exercise/wrong/reap_fixed_attempts", "dead once the job's own max_attempts", "max_attempts"),
    (
        "05/complete",
        "exercise/wrong/complete_fixed_token",
        "current worker B's call",
        "fence_token = :fence_token",
    ),
    (
        "09/holder",
        "exercise/wrong/oldest_idle_in_transaction",
        "names the session holding VACUUM back",
        "backend_xmin",
    ),
    (
        "09/holder",
        "exercise/wrong/oldest_idle_in_transaction",
        "every session it names holds VACUUM back",
        "backend_xmin",
    ),
    (
        "10/cleanup",
        "exercise/wrong/cleanup_fixed_limit",
        "full batches of :batch while done rows remain",
        "LIMIT :batch",
    ),
    # The slow forms lesson 10 rejects, judged by the server's plan (issue 43, item 32).
    (
        "10/cleanup",
        "teaching/cleanup_in_subquery",
        "finds each batch through an index",
        "id > :after ORDER BY id",
    ),
    (
        "10/cleanup",
        "teaching/cleanup_from_first_page",
        "finds each batch through an index",
        "id > :after ORDER BY id",
    ),
    # Wrong answers that passed before the scenes staged what catches them (issue 44).
    ("04/reap", "exercise/wrong/reap_early", "live leases left running", "leased_until BETWEEN"),
    (
        "11/relay_complete",
        "exercise/wrong/complete_batch_any_token",
        "stale relay A's completion",
        "paired with its id",
    ),
    (
        "11/relay_hand_back",
        "exercise/wrong/hand_back_any_token",
        "relay S's claim of order 3's first event left alone",
        "its own token",
    ),
    ("01/claim", "exercise/wrong/claim_without_counts", "counts the attempt", "attempts = jobs.attempts + 1"),
    (
        "01/claim",
        "exercise/wrong/claim_without_counts",
        "takes a new fencing token",
        "fence_token = jobs.fence_token + 1",
    ),
    ("03/claim", "exercise/wrong/claim_without_counts", "counts the attempt", "attempts = jobs.attempts + 1"),
    (
        "03/claim",
        "exercise/wrong/claim_waits_for_locks",
        "passes over the rows the first holds",
        "SKIP LOCKED",
    ),
    (
        "10c/unique_enqueue",
        "exercise/wrong/unique_enqueue_do_nothing",
        "the same kind and key while it is ready, then running: nothing added, its id returned",
        "DO NOTHING returns no row",
    ),
    (
        "10c/unique_enqueue",
        "exercise/wrong/unique_enqueue_key_alone",
        "the same key, another kind: a job added",
        "unique per kind",
    ),
    (
        "10c/unique_enqueue",
        "exercise/wrong/unique_enqueue_check_then_insert",
        "a double click: one job, the second session gets the first's id",
        "uncommitted job",
    ),
    (
        "10c/unique_enqueue",
        "exercise/wrong/unique_enqueue_same_snapshot",
        "a double click: one job, the second session gets the first's id",
        "statement's snapshot",
    ),
]

# Wrong answers refused for the lesson's reason before they run: (exercise, seeded
# wrong answer, what the refusal names).
REFUSED = [
    ("08/index", "exercise/wrong/ready_index_unique", "a second job due at the same instant"),
    ("08/index", "exercise/wrong/ready_index_including_payload", "INCLUDE copies those columns"),
    (
        "10b/fair_claim",
        "exercise/wrong/fair_claim_distinct_for_update",
        "FOR UPDATE is not allowed with DISTINCT",
    ),
]

# Right answers that failed before (issue 44): each passes.
RIGHT = [
    ("08/index", "exercise/model/ready_index_in_list"),
    ("08/index", "exercise/model/ready_index_text_cast"),
    ("05/complete", "exercise/model/complete_with_lock"),
    ("06/fail", "exercise/model/fail_with_lock"),
    ("10/cleanup", "exercise/model/cleanup_with_batch"),
    ("10/cleanup", "exercise/model/cleanup_with_batch_first"),  # WITH-led: the batch gathered by ARRAY
    (
        "07/notify",
        "exercise/model/enqueue_returning_notify",
    ),  # pg_notify once, in a one-row INSERT's RETURNING
]


@pytest.fixture(autouse=True)
def learner_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))


@pytest.fixture(scope="module")
def verdicts():
    """One check per seeded wrong answer, shared by the cases that read it."""
    return {}


def verdict_for(verdicts, key: str, name: str):
    if (key, name) not in verdicts:
        verdicts[key, name] = exercises.check(key, statement(name).text, save=False)
    return verdicts[key, name]


@pytest.mark.parametrize("key, name, failing, hint", WRONG, ids=[f"{w[0]}-{w[2][:30]}" for w in WRONG])
def test_a_seeded_wrong_answer_fails_for_the_lessons_reason(verdicts, key, name, failing, hint):
    verdict = verdict_for(verdicts, key, name)
    assert not verdict.passed and not verdict.refused, verdict.summary()
    assert any(failing in e.what for e in verdict.failures), verdict.summary()
    assert hint in verdict.hint, verdict.summary()


@pytest.mark.parametrize("key, name, says", REFUSED, ids=[r[1].rsplit("/", 1)[1] for r in REFUSED])
def test_a_seeded_wrong_answer_is_refused_for_the_lessons_reason(key, name, says):
    verdict = exercises.check(key, statement(name).text, save=False)
    assert not verdict.passed and verdict.refused and says in verdict.headline, verdict.summary()


@pytest.mark.parametrize("key, name", RIGHT, ids=[r[1].rsplit("/", 1)[1] for r in RIGHT])
def test_a_right_answer_spelt_another_way_passes(key, name):
    verdict = exercises.check(key, statement(name).text, save=False)
    assert verdict.passed, verdict.summary()


def test_a_reaper_taking_leases_near_their_end_fails_on_the_short_live_lease(verdicts):
    """Each scene stages a live lease with a second or two left: a reaper that takes what
    expires within 25 s takes it there, whatever the other live lease drew."""
    verdict = verdict_for(verdicts, "04/reap", "exercise/wrong/reap_early")
    assert len(verdict.numbers["live_changed"]) >= 2, verdict.summary()


def test_the_reaper_that_ignores_max_attempts_still_uses_the_index(verdicts):
    """It fails on max_attempts alone: the index is not its problem."""
    verdict = verdict_for(verdicts, "04/reap", "exercise/wrong/reap_fixed_attempts")
    assert [e.what for e in verdict.failures] == [
        "expired leases back to ready, or dead once the job's own max_attempts is used"
    ]


def test_a_hard_coded_token_finishes_nothing_and_no_stale_call_matches(verdicts):
    verdict = verdict_for(verdicts, "05/complete", "exercise/wrong/complete_fixed_token")
    assert verdict.numbers["current_misses"] == 2 and verdict.numbers["stale_hits"] == 0


def test_the_oldest_idle_session_is_a_decoy_in_one_scene_and_the_newest_in_the_other(verdicts):
    verdict = verdict_for(verdicts, "09/holder", "exercise/wrong/oldest_idle_in_transaction")
    first, second = verdict.numbers["scenes"]  # the decoy opened before the culprit, then after it
    assert len(first["found"]) == 1 and first["culprit"] not in first["found"]
    assert first["held_after"] == first["held_before"] > 0  # VACUUM still held back
    assert second["found"] == [second["culprit"]]


def test_a_claim_without_its_lease_still_runs_each_job_once(verdicts):
    """The race alone would pass it: only the staged scenes catch it."""
    verdict = verdict_for(verdicts, "03/claim", "exercise/wrong/claim_without_lease")
    assert verdict.numbers["run_more_than_once"] == 0 and verdict.numbers["never_run"] == 0


def test_scenes_differ_from_check_to_check():
    """Two checks of the same answer draw different values (a fixed story could be learned)."""
    key = "05/complete"
    first, second = (
        exercises.check(key, exercises.exercise(key).answer_text(), save=False) for _ in range(2)
    )
    assert first.passed and second.passed
    assert [e.found for e in first.evidence] != [e.found for e in second.evidence]


def test_the_newest_idle_session_is_a_decoy_too():
    """ORDER BY ... DESC instead: the second scene opens its decoy after the culprit."""
    text = statement("exercise/wrong/oldest_idle_in_transaction").text.replace(
        "backend_start", "backend_start DESC"
    )
    verdict = exercises.check("09/holder", text, save=False)
    assert not verdict.passed and any("holding VACUUM back" in e.what for e in verdict.failures)
    first, second = verdict.numbers["scenes"]
    assert first["culprit"] in first["found"] and second["culprit"] not in second["found"]


def test_a_holder_query_on_backend_xmin_alone_misses_the_writer():
    """A transaction that wrote holds VACUUM back by its xid, with no snapshot between statements."""
    text = exercises.exercise("09/holder").answer_text().replace("backend_xid IS NOT NULL OR ", "")
    verdict = exercises.check("09/holder", text, save=False)
    assert not verdict.passed and "backend_xid" in verdict.hint
    first, second = verdict.numbers["scenes"]
    assert first["culprit"] in first["found"] and second["found"] == []


def test_a_holder_query_that_names_a_client_session_outside_the_scenes_still_fails():
    """The checker leaves out only what no learner query can tell apart (an autovacuum
    worker visiting the scratch database): a client session the scenes did not open, here a
    snapshot held in another database, which holds the scratch's VACUUM back not at all, counts.
    A dozen of them, as on a busy server: each counts, and the evidence says how many in one item.
    They are opened on the checker, the server the check runs on (the lessons' server is
    another cluster, whose sessions no check can see)."""
    text = exercises.exercise("09/holder").answer_text()
    assert "datname = current_database()\n  AND " in text
    everywhere = text.replace("datname = current_database()\n  AND ", "")
    checker = server.get_checker()
    db = databases.open_database("holder_elsewhere", schema=False, server=checker)
    with contextlib.ExitStack() as stack:
        stack.callback(databases.drop_database, "holder_elsewhere", server=checker)
        pids = []
        for _ in range(12):
            elsewhere = stack.enter_context(db.connection(autocommit=False))
            elsewhere.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            run(elsewhere, "lab/open_transaction")  # its snapshot: a backend_xmin every role sees
            pids.append(elsewhere.info.backend_pid)
        verdict = exercises.check("09/holder", everywhere, save=False)
    assert not verdict.passed
    # Other tests' sessions on a shared server count too, so ask for these among them.
    for scene in verdict.numbers["scenes"]:
        assert set(pids) <= set(scene["extra"])
    extra = next(e for e in verdict.evidence if e.what == "every session it names holds VACUUM back")
    assert "client sessions the scene did not open: pid " in extra.found and not extra.ok
