"""Per kind, on a real server: the retry policy in job_kinds (enqueue's max_attempts, the
per-kind failure statements), the dashboard's per-kind stats, the shared token bucket, and
handing jobs back without spending a try."""

from datetime import timedelta

import pytest
from psycopg.rows import dict_row

import pgq_teach as pgq
from helpers import expire_leases, job_row, seed
from pgq_teach import kinds, queue
from pgq_teach.errors import BadInput
from pgq_teach.statements import run


def wait_s(conn, job_id: int) -> float:
    """Seconds until the job is due again, on the server's clock (read in the failure's
    transaction, so now() is the one the failure used)."""
    return run(conn, "lab/retry_wait", {"id": job_id}, row_factory=dict_row).fetchone()["wait_s"]


def test_enqueue_writes_the_kinds_max_attempts_unless_the_caller_passes_one(conn):
    kinds.set_policy(conn, "invoice", max_attempts=25)
    own = pgq.enqueue(conn, "invoice", {})
    passed = pgq.enqueue(conn, "invoice", {}, max_attempts=3)
    other = pgq.enqueue(conn, "receipt", {})  # no row: today's 5
    many = pgq.enqueue_many(conn, "invoice", [{}, {}])
    got = {job.id: job.max_attempts for job in pgq.claim(conn, batch=10)}
    assert got == {own: 25, passed: 3, other: 5, many[0]: 25, many[1]: 25}


def test_a_changed_policy_reaches_the_next_enqueue_only(conn):
    kinds.set_policy(conn, "invoice", max_attempts=7)
    before = pgq.enqueue(conn, "invoice", {})
    kinds.set_policy(conn, "invoice", max_attempts=9)
    after = pgq.enqueue(conn, "invoice", {})
    assert {job.id: job.max_attempts for job in pgq.claim(conn, batch=2)} == {before: 7, after: 9}
    assert kinds.policies(conn, ["invoice", "receipt"]) == {
        "invoice": kinds.KindPolicy("invoice", max_attempts=9)
    }


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "relaxed"])
def test_each_kind_backs_off_by_its_own_base_and_cap(conn, durable):
    kinds.set_policy(conn, "invoice", backoff_base_s=2, backoff_cap_s=30, max_attempts=25)
    invoices = pgq.enqueue_many(conn, "invoice", [{}] * 2)
    receipt = pgq.enqueue(conn, "receipt", {})
    run(conn, "lab/set_attempts", {"id": invoices[1], "attempts": 9})  # its next try is the 10th
    jobs = pgq.claim(conn, batch=3)
    with conn.transaction():  # one now() for the failures and the reads
        outcomes = pgq.fail_many(conn, [(job, "no") for job in jobs], durable=durable, by_kind=True)
        waits = {job.id: wait_s(conn, job.id) for job in jobs}
    assert outcomes == ["ready"] * 3
    # 2 s x 2^1; 2 s x 2^10 capped at 30 s; a kind with no row waits as fail.sql: 10 s x 2^1.
    assert waits == {
        invoices[0]: pytest.approx(4),
        invoices[1]: pytest.approx(30),
        receipt: pytest.approx(20),
    }


def test_the_single_failure_by_kind_matches_the_batch_and_goes_dead_at_the_kinds_tries(conn):
    kinds.set_policy(conn, "invoice", backoff_base_s=0.5, backoff_cap_s=60, max_attempts=2)
    job_id = pgq.enqueue(conn, "invoice", {})
    [job] = pgq.claim(conn)
    with conn.transaction():
        assert kinds.fail(conn, job, "no") == "ready"
        assert wait_s(conn, job_id) == pytest.approx(1)
    run(conn, "lab/make_due", {"id": job_id})
    [job] = pgq.claim(conn)
    assert kinds.fail(conn, job, "no again") == "dead"
    assert job_row(conn, job_id)["finished_at"] is not None


def test_a_huge_attempt_count_with_the_largest_base_and_cap_stays_in_range(conn):
    kinds.set_policy(
        conn,
        "invoice",
        backoff_base_s=kinds.MAX_BACKOFF_S,
        backoff_cap_s=kinds.MAX_BACKOFF_S,
        max_attempts=10**9,
    )
    job_id = pgq.enqueue(conn, "invoice", {})
    run(conn, "lab/set_attempts", {"id": job_id, "attempts": 1_000})  # 2^1000 seconds, were it not capped
    [job] = pgq.claim(conn)
    with conn.transaction():
        assert kinds.fail(conn, job, "no") == "ready"
        assert wait_s(conn, job_id) == pytest.approx(kinds.MAX_BACKOFF_S)


def stage(conn, job_id, status, attempts, enqueued, attempted=None, finished=None, due=0.0):
    """Give one job a status and the times a run would have given it, seconds ago."""
    times = {"enqueued_s_ago": enqueued, "attempted_s_ago": attempted, "finished_s_ago": finished}
    values = {"id": job_id, "status": status, "attempts": attempts, "run_at_s_ago": due, **times}
    assert run(conn, "lab/set_job_times", values).fetchone() == (job_id,)


def test_stats_per_kind_read_the_waits_ages_percentiles_and_failure_rate_staged(conn):
    kinds.set_policy(conn, "invoice", timeout_s=90)
    ids = pgq.enqueue_many(conn, "invoice", [{}] * 9) + pgq.enqueue_many(conn, "receipt", [{}] * 2)
    stage(conn, ids[0], "ready", 0, enqueued=400, due=300)  # waiting out nothing: due 300 s ago
    stage(conn, ids[1], "ready", 2, enqueued=500, due=-60)  # in a backoff: not due, so not "waiting"
    stage(conn, ids[2], "running", 1, enqueued=200, attempted=120)
    stage(conn, ids[3], "running", 3, enqueued=50, attempted=10)
    # Finished inside the window: done after 100, 200 and 3,600 s (one late invoice), and one dead.
    stage(conn, ids[4], "done", 1, enqueued=150, attempted=60, finished=50)
    stage(conn, ids[5], "done", 2, enqueued=300, attempted=110, finished=100)
    stage(conn, ids[6], "done", 4, enqueued=3_700, attempted=200, finished=100)
    stage(conn, ids[7], "dead", 5, enqueued=900, attempted=300, finished=200)
    stage(conn, ids[8], "done", 1, enqueued=99_000, attempted=90_000, finished=90_000)  # before the window
    stage(conn, ids[9], "done", 1, enqueued=20, attempted=15, finished=10)
    stage(conn, ids[10], "ready", 0, enqueued=5, due=5)

    by_kind = {row.kind: row for row in kinds.stats(conn, window=timedelta(hours=1))}
    assert set(by_kind) == {"invoice", "receipt"}
    inv = by_kind["invoice"]
    assert (inv.due, inv.running, inv.done, inv.dead) == (1, 2, 3, 1)
    assert inv.oldest_due_wait.total_seconds() == pytest.approx(300, abs=1)
    assert inv.oldest_running_age.total_seconds() == pytest.approx(120, abs=5)  # clock_timestamp
    assert inv.timeout == timedelta(seconds=90) and inv.past_timeout
    assert inv.done_p50 == timedelta(seconds=200)
    assert inv.done_p99.total_seconds() == pytest.approx(200 + 0.98 * 3_400)  # percentile_cont
    # Tries of the finished: 1 + 2 + 4 + 5 = 12, of which 0 + 1 + 3 + 5 = 9 failed.
    assert inv.failure_rate == pytest.approx(9 / 12)
    rec = by_kind["receipt"]
    assert (rec.due, rec.running, rec.done, rec.dead, rec.timeout) == (1, 0, 1, 0, None)
    assert rec.done_p50 == rec.done_p99 == timedelta(seconds=10) and rec.failure_rate == 0
    assert not rec.past_timeout


def test_the_failure_rate_counts_retried_tries_when_no_job_died(conn):
    # The window's dead jobs add nothing here: their sum is NULL, and NULL + n would be NULL.
    ids = pgq.enqueue_many(conn, "invoice", [{}] * 2)
    stage(conn, ids[0], "done", 3, enqueued=300, attempted=60, finished=50)  # two failed tries, then done
    stage(conn, ids[1], "done", 1, enqueued=100, attempted=60, finished=50)
    [row] = kinds.stats(conn)
    assert (row.done, row.dead) == (2, 0) and row.failure_rate == pytest.approx(2 / 4)


def test_stats_show_a_kind_with_a_policy_and_no_jobs(conn):
    kinds.set_policy(conn, "invoice", timeout_s=30)
    [row] = kinds.stats(conn)
    assert (row.kind, row.due, row.timeout, row.done_p99, row.failure_rate) == (
        "invoice",
        0,
        timedelta(seconds=30),
        None,
        None,
    )


def test_a_new_bucket_starts_empty_and_holds_at_most_one_second_of_tokens(conn):
    assert kinds.take_tokens(conn, "partner", 50, 200) == 0  # new: empty, nothing earned yet
    assert kinds.take_tokens(conn, "slow", 0.2, 5) == 0
    run(conn, "lab/age_bucket", {"kind": "partner", "seconds": 60})  # unused for a minute
    assert kinds.take_tokens(conn, "partner", 50, 200) == 50  # full: one second's worth, not 60
    assert kinds.take_tokens(conn, "partner", 50, 200) <= 1  # microseconds later: nothing, or one
    run(conn, "lab/age_bucket", {"kind": "slow", "seconds": 60})
    assert kinds.take_tokens(conn, "slow", 0.2, 5) == 1  # under 1/s the bucket still holds one
    assert kinds.take_tokens(conn, "slow", 0.2, 5) == 0
    assert kinds.take_tokens(conn, "steady", 5, 10) == 0
    run(conn, "lab/age_bucket", {"kind": "steady", "seconds": 0.8})  # 4 tokens earned, at 5 a second
    assert kinds.take_tokens(conn, "steady", 5, 3) == 3
    assert kinds.take_tokens(conn, "steady", 5, 10) in (1, 2)  # the last one, and one more if 0.2 s passed


def test_hand_back_gives_the_try_back_moves_run_at_and_skips_a_fenced_claim(conn):
    seed(conn, 2)
    first, second = pgq.claim(conn, batch=2)
    stale = queue.Job(second.id, second.kind, second.payload, second.attempts, fence_token=0)
    with conn.transaction():
        assert kinds.hand_back(conn, [(first, 30.0), (stale, 30.0)]) == [first.id]
        assert wait_s(conn, first.id) == pytest.approx(30)
    row = job_row(conn, first.id)
    assert (row["status"], row["attempts"]) == ("ready", 0)
    assert job_row(conn, second.id)["status"] == "running"


def test_waiting_for_a_token_keeps_the_jobs_last_error_and_runs_it_at_the_earliest(conn):
    """A hand-back is not the job's failure: the error of its last real try stays, and its
    run_at is now plus its wait, not later (the earliest it may run)."""
    seed(conn, 1)
    [job] = pgq.claim(conn)
    expire_leases(conn, [job])
    assert pgq.reap(conn) == 1  # its first try ended with a real error
    [job] = pgq.claim(conn)
    with conn.transaction():
        assert kinds.hand_back(conn, [(job, 12.5)]) == [job.id]
        assert wait_s(conn, job.id) == pytest.approx(12.5)
    row = job_row(conn, job.id)
    assert (row["status"], row["attempts"], row["last_error"]) == ("ready", 1, "lease expired")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda c: kinds.set_policy(c, "k", backoff_base_s=60, backoff_cap_s=10), "must not be above"),
        (lambda c: kinds.set_policy(c, "k", timeout_s=0), "timeout_s must be a number"),
        (lambda c: kinds.set_policy(c, "k", max_attempts=0), "max_attempts must be from 1"),
        (lambda c: kinds.stats(c, window=0), "window must be"),
        (lambda c: kinds.take_tokens(c, "k", 0, 1), "per_second must be a number"),
        (lambda c: pgq.enqueue(c, "k", {}, max_attempts=0), "max_attempts must be from 1"),
    ],
    ids=["base over cap", "timeout 0", "0 tries", "window 0", "rate 0", "enqueue 0 tries"],
)
def test_bad_input_is_refused_before_any_row_changes(conn, call, message):
    with pytest.raises(BadInput, match=message):
        call(conn)
    assert kinds.stats(conn) == []
