"""Every library function's effect on the rows."""

import dataclasses
import sys
import threading
from datetime import datetime, timedelta, timezone

import pytest

import pgq_teach as pgq
from helpers import counts, expire_leases, job_row, seed
from pgq_teach import queue
from pgq_teach.statements import run


def test_enqueue_writes_a_ready_job(conn):
    job_id = pgq.enqueue(conn, "send_receipt", {"order_id": 101}, max_attempts=3)
    row = job_row(conn, job_id)
    assert row["kind"] == "send_receipt"
    assert row["payload"] == {"order_id": 101}
    assert row["status"] == "ready"
    assert row["attempts"] == 0 and row["max_attempts"] == 3
    assert row["leased_until"] is None


def test_enqueue_later_is_not_claimed_yet(conn):
    pgq.enqueue(conn, "send_receipt", {}, run_at=timedelta(hours=1))
    assert pgq.claim(conn) == []
    soon = datetime.now(timezone.utc) - timedelta(seconds=1)
    pgq.enqueue(conn, "send_receipt", {"n": 2}, run_at=soon)
    assert [j.payload for j in pgq.claim(conn)] == [{"n": 2}]


def test_claim_marks_running_counts_the_attempt_and_leases(conn):
    job_id = pgq.enqueue(conn, "send_receipt", {"order_id": 7})
    [job] = pgq.claim(conn, lease=timedelta(seconds=90))
    assert (job.id, job.kind, job.payload, job.attempts) == (job_id, "send_receipt", {"order_id": 7}, 1)
    row = job_row(conn, job_id)
    assert row["status"] == "running" and row["attempts"] == 1
    left = (row["leased_until"] - datetime.now(timezone.utc)).total_seconds()
    assert 80 < left <= 90
    assert pgq.claim(conn) == []


def test_claim_takes_the_oldest_first_and_honours_the_batch(conn):
    seed(conn, 25)
    first = pgq.claim(conn, batch=10)
    assert sorted(j.id for j in first) == list(range(1, 11))
    assert len(pgq.claim(conn, batch=100)) == 15


def test_complete_is_fenced_and_refuses_a_second_call(conn):
    pgq.enqueue(conn, "send_receipt", {})
    [job] = pgq.claim(conn)
    assert pgq.complete(conn, job) is True
    row = job_row(conn, job.id)
    assert row["status"] == "done" and row["leased_until"] is None
    with pytest.raises(pgq.NotClaimed, match="already done under this claim.s token"):
        pgq.complete(conn, job)
    assert job_row(conn, job.id) == row


def test_a_completion_after_an_unfenced_mark_done_names_both_who_could_have_done_it(conn):
    # mark_done keeps the token, so the row looks as if this claim completed it: say both
    pgq.enqueue(conn, "send_receipt", {})
    [job] = pgq.claim(conn)
    run(conn, "teaching/mark_done", {"id": job.id})
    with pytest.raises(
        pgq.NotClaimed, match="this claim completed it, or a completion that checks no token did"
    ):
        pgq.complete(conn, job)


def test_a_stale_worker_is_fenced_out(conn):
    """Guide #10: with a 1-second lease, A stalls, the reaper runs, B claims;
    A's completion updates 0 rows and B's 1."""
    pgq.enqueue(conn, "send_receipt", {})
    [a] = pgq.claim(conn, lease=timedelta(seconds=1))
    expire_leases(conn, [a])  # A stalls past its lease
    assert pgq.reap(conn) == 1
    [b] = pgq.claim(conn, lease=timedelta(seconds=60))
    assert (a.id, a.attempts, b.attempts) == (b.id, 1, 2)
    assert (a.fence_token, b.fence_token) == (1, 2)
    assert pgq.complete(conn, a) is False
    assert job_row(conn, a.id)["status"] == "running"
    assert pgq.complete(conn, b) is True
    assert job_row(conn, a.id)["status"] == "done"


def test_a_worker_from_before_a_requeue_stays_fenced(conn):
    """Issue 8: requeue_dead resets attempts, so attempts cannot be the fence.
    A claims (attempts 1), stalls; the job dies and is requeued; B claims and
    also holds attempts 1. Only B's fencing token matches the row."""
    job_id = pgq.enqueue(conn, "send_receipt", {}, max_attempts=1)
    [a] = pgq.claim(conn, lease=timedelta(seconds=1))
    expire_leases(conn, [a])  # A stalls past its lease
    assert pgq.reap(conn) == 1
    assert job_row(conn, job_id)["status"] == "dead"
    assert pgq.requeue_dead(conn) == 1
    [b] = pgq.claim(conn)
    assert (a.id, a.attempts) == (b.id, b.attempts) == (job_id, 1)
    assert b.fence_token > a.fence_token
    assert run(conn, "complete", {"id": a.id, "fence_token": a.fence_token}).rowcount == 0
    assert pgq.complete(conn, a) is False
    assert pgq.fail(conn, a, "late") == "fenced"
    assert pgq.extend_lease(conn, a) is False
    assert job_row(conn, job_id)["status"] == "running"
    assert run(conn, "complete", {"id": b.id, "fence_token": b.fence_token}).rowcount == 1
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["fence_token"]) == ("done", 1, 2)


def test_an_older_database_gains_the_fence_token(conn):
    """schema.sql upgrades a jobs table made before fence_token existed."""
    run(conn, "lab/drop_fence_token")
    job_id = pgq.enqueue(conn, "send_receipt", {})
    run(conn, "schema")
    [job] = pgq.claim(conn)
    assert (job.id, job.fence_token) == (job_id, 1)
    assert pgq.complete(conn, job) is True


def test_fenced_after_reap_before_reclaim(conn):
    pgq.enqueue(conn, "send_receipt", {})
    [a] = pgq.claim(conn, lease=timedelta(seconds=1))
    expire_leases(conn, [a])  # A stalls past its lease
    pgq.reap(conn)
    assert pgq.complete(conn, a) is False
    assert pgq.fail(conn, a, "late") == "fenced"
    assert job_row(conn, a.id)["status"] == "ready"


def test_failed_by_names_this_claims_failure_and_nothing_else(conn):
    """What a worker asks after sending a failure as its connection broke."""
    job_id = pgq.enqueue(conn, "send_receipt", {}, max_attempts=3)
    error = RuntimeError("the mail server said no")
    [a] = pgq.claim(conn)
    assert queue.failed_by(conn, a, error) is None  # still running: not failed yet
    assert pgq.fail(conn, a, error) == "ready"
    assert queue.failed_by(conn, a, error) == "ready"  # the row holds this claim's failure
    assert queue.failed_by(conn, a, RuntimeError("another error")) is None
    run(conn, "lab/make_due", {"id": job_id})
    [b] = pgq.claim(conn)
    expire_leases(conn, [b])
    pgq.reap(conn)  # the reaper's "lease expired", with b's own token and attempts
    assert queue.failed_by(conn, b, error) is None and queue.failed_by(conn, a, error) is None
    run(conn, "lab/make_due", {"id": job_id})
    [c] = pgq.claim(conn)
    assert pgq.fail(conn, c, error) == "dead"
    assert queue.failed_by(conn, c, error) == "dead"
    assert pgq.requeue_dead(conn, "send_receipt") == 1
    assert queue.failed_by(conn, c, error) is None  # a requeue changed the row since


def test_five_failures_back_off_then_die(conn):
    """Guide #11: waits of 20, 40, 80 and 160 s, then dead with its error kept."""
    job_id = pgq.enqueue(conn, "call_webhook", {})
    waits = []
    for attempt in range(1, 6):
        run(conn, "lab/make_due", {"id": job_id})
        [job] = pgq.claim(conn)
        assert job.attempts == attempt
        before = datetime.now(timezone.utc)
        outcome = pgq.fail(conn, job, f"HTTP 503 from webhook (try {attempt})")
        row = job_row(conn, job_id)
        if attempt < 5:
            assert outcome == "ready" and row["status"] == "ready"
            waits.append((row["run_at"] - before).total_seconds())
    assert [round(w) for w in waits] == [20, 40, 80, 160]
    for got, want in zip(waits, [20, 40, 80, 160], strict=True):
        assert abs(got - want) < 1
    assert outcome == "dead"
    row = job_row(conn, job_id)
    assert row["status"] == "dead" and row["last_error"] == "HTTP 503 from webhook (try 5)"


def test_backoff_is_capped_at_one_hour(conn):
    job_id = pgq.enqueue(conn, "call_webhook", {}, max_attempts=20)
    for _ in range(12):
        run(conn, "lab/make_due", {"id": job_id})
        [job] = pgq.claim(conn)
        before = datetime.now(timezone.utc)
        pgq.fail(conn, job, "down")
    wait = (job_row(conn, job_id)["run_at"] - before).total_seconds()
    assert abs(wait - 3600) < 1


@pytest.mark.parametrize("attempts", [40, 1_000, 2**31 - 2])
def test_fail_at_huge_attempts_backs_off_an_hour_without_overflow(conn, attempts):
    """Issue 8: 2^attempts x 10 s overflowed an interval from attempts 40 on."""
    job_id = pgq.enqueue(conn, "call_webhook", {}, max_attempts=pgq.queue.MAX_ATTEMPTS)
    [job] = pgq.claim(conn)
    run(conn, "lab/set_attempts", {"id": job_id, "attempts": attempts})
    before = datetime.now(timezone.utc)
    assert pgq.fail(conn, job, "down") == "ready"
    row = job_row(conn, job_id)
    assert row["status"] == "ready" and row["attempts"] == attempts
    assert abs((row["run_at"] - before).total_seconds() - 3600) < 1


@pytest.mark.parametrize("attempts", [40, 1_000, 2**31 - 2])
def test_fail_at_huge_attempts_goes_dead_without_overflow(conn, attempts):
    job_id = pgq.enqueue(conn, "call_webhook", {}, max_attempts=attempts)
    [job] = pgq.claim(conn)
    run(conn, "lab/set_attempts", {"id": job_id, "attempts": attempts})
    assert pgq.fail(conn, job, "down for good") == "dead"
    row = job_row(conn, job_id)
    assert (row["status"], row["last_error"]) == ("dead", "down for good")


def test_lowering_max_attempts_makes_the_next_failure_dead_and_requeue_revives(conn):
    job_id = pgq.enqueue(conn, "call_webhook", {})
    for _ in range(3):
        run(conn, "lab/make_due", {"id": job_id})
        pgq.fail(conn, pgq.claim(conn)[0], "down")
    run(conn, "lab/set_max_attempts", {"id": job_id, "max_attempts": 2})
    run(conn, "lab/make_due", {"id": job_id})
    [job] = pgq.claim(conn)
    assert job.attempts == 4
    assert pgq.fail(conn, job, "still down") == "dead"
    assert pgq.requeue_dead(conn, kind="send_receipt") == 0
    assert pgq.requeue_dead(conn, kind="call_webhook") == 1
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["last_error"]) == ("ready", 0, None)


def test_fail_records_exception_text(conn):
    pgq.enqueue(conn, "send_receipt", {})
    [job] = pgq.claim(conn)
    pgq.fail(conn, job, ConnectionError("smtp down"))
    assert job_row(conn, job.id)["last_error"] == "ConnectionError: smtp down"


def test_failing_a_never_claimed_job_is_refused(conn):
    job_id = pgq.enqueue(conn, "send_receipt", {})
    fake = pgq.Job(job_id, "send_receipt", {}, attempts=0)
    with pytest.raises(pgq.NotClaimed, match="never claimed"):
        pgq.fail(conn, fake, "boom")
    with pytest.raises(pgq.NotClaimed, match="no such job"):
        pgq.complete(conn, pgq.Job(999, "send_receipt", {}, attempts=1))
    assert job_row(conn, job_id)["status"] == "ready"


def test_extend_lease_moves_the_deadline_only_for_the_holder(conn):
    pgq.enqueue(conn, "build_invoice", {})
    [job] = pgq.claim(conn, lease=timedelta(seconds=10))
    assert pgq.extend_lease(conn, job, timedelta(minutes=10)) is True
    left = (job_row(conn, job.id)["leased_until"] - datetime.now(timezone.utc)).total_seconds()
    assert left > 590
    stale = dataclasses.replace(job, fence_token=job.fence_token - 1)
    assert pgq.extend_lease(conn, stale, timedelta(minutes=10)) is False


def test_a_jobs_lost_event_is_one_event_however_many_threads_ask_first(conn):
    """job.lost is made on first use; threads that ask for it at the same
    moment must share one Event, or a set() on one copy would never reach a
    handler waiting on another."""
    seed(conn, 200)
    jobs = pgq.claim(conn, batch=200)
    assert all(job.still_mine() for job in jobs)  # looking makes no Event and sees none set
    threads = 8
    barrier = threading.Barrier(threads)
    seen: list[list[int]] = [[] for _ in range(threads)]

    def ask(n: int) -> None:
        for job in jobs:
            barrier.wait()
            seen[n].append(id(job.lost))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        workers = [threading.Thread(target=ask, args=(n,)) for n in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        sys.setswitchinterval(interval)
    assert all(len(set(column)) == 1 for column in zip(*seen, strict=True))
    jobs[0].lost.set()
    assert not jobs[0].still_mine() and all(job.still_mine() for job in jobs[1:])


def test_reap_returns_expired_leases_and_kills_the_exhausted(conn):
    a = pgq.enqueue(conn, "send_receipt", {})
    b = pgq.enqueue(conn, "send_receipt", {}, max_attempts=1)
    c = pgq.enqueue(conn, "send_receipt", {})
    short = pgq.claim(conn, batch=2, lease=timedelta(seconds=1))
    pgq.claim(conn, lease=timedelta(minutes=5))
    expire_leases(conn, short)  # the 1-second leases run out; the 5-minute one does not
    assert pgq.reap(conn) == 2
    assert job_row(conn, a)["status"] == "ready"
    assert job_row(conn, a)["last_error"] == "lease expired"
    assert job_row(conn, b)["status"] == "dead"
    assert job_row(conn, c)["status"] == "running"


def test_cleanup_deletes_done_jobs_in_batches(conn):
    seed(conn, 30)
    for job in pgq.claim(conn, batch=25):
        pgq.complete(conn, job)
    assert pgq.cleanup(conn, batch=10) == 25
    assert counts(conn) == {"ready": 5}


def test_stats_counts_and_waits(conn):
    seed(conn, 3)
    pgq.claim(conn)
    st = pgq.stats(conn)
    assert st.counts == {"ready": 2, "running": 1}
    assert st.oldest_due_wait > timedelta(minutes=59)
    assert "ready 2" in str(st)


def test_status_counts_reads_each_status_once_and_leaves_out_absent_ones(conn):
    assert pgq.queue.status_counts(conn) == {}
    seed(conn, 4)
    [done, dead] = pgq.claim(conn, batch=2)
    pgq.complete(conn, done)
    run(conn, "lab/set_max_attempts", {"id": dead.id, "max_attempts": 1})
    assert pgq.fail(conn, dead, "boom") == "dead"
    assert pgq.queue.status_counts(conn) == {"done": 1, "dead": 1, "ready": 2}
    assert pgq.stats(conn).counts == pgq.queue.status_counts(conn)


def test_reset_and_seed_starts_the_table_over_and_refuses_bad_input_first(conn):
    from pgq_teach import seeding

    seed(conn, 5)
    with pytest.raises(pgq.BadInput, match="count"):
        seeding.reset_and_seed(conn, "send_receipt", -1)
    with pytest.raises(pgq.BadInput, match="kind"):
        seeding.reset_and_seed(conn, "", 3)
    assert counts(conn) == {"ready": 5}  # refused before the table was emptied
    seeding.reset_and_seed(conn, "build_invoice", 3)
    assert counts(conn) == {"ready": 3}
    assert [job_row(conn, i)["kind"] for i in (1, 2, 3)] == ["build_invoice"] * 3  # ids start at 1 again
    assert [j.id for j in pgq.claim(conn, batch=3)] == [1, 2, 3]  # oldest first


def test_transactional_enqueue_rollback_leaves_nothing_commit_leaves_both(db):
    """Guide: a rolled-back order leaves no job and sends no notification;
    a committed order always has its job, and its notification arrives."""
    with db.connection() as listener, db.connection(autocommit=False) as app:
        run(listener, "listen")
        with pytest.raises(RuntimeError):
            with app.transaction():
                pgq.enqueue(app, "send_receipt", {"order_id": 1})
                raise RuntimeError("payment declined")
        assert list(listener.notifies(timeout=0.5, stop_after=1)) == []
        assert counts(app) == {}
        app.commit()
        with app.transaction():
            job_id = pgq.enqueue(app, "send_receipt", {"order_id": 2})
        heard = list(listener.notifies(timeout=2, stop_after=1))
        assert [(n.channel, n.payload) for n in heard] == [("jobs_ready", "send_receipt")]
        assert job_row(app, job_id)["status"] == "ready"


def test_claim_plan_uses_the_partial_index_under_lockrows(conn):
    """Guide #16."""
    seed(conn, 5000)
    pgq.claim(conn, batch=4950)
    run(conn, "lab/analyze_jobs")
    plan = "\n".join(r[0] for r in run(conn, "explain_claim").fetchall())
    assert "LockRows" in plan
    assert "Index Scan using jobs_ready_idx on jobs" in plan
    assert plan.index("LockRows") < plan.index("jobs_ready_idx")


def test_the_whole_claim_plans_a_locked_index_scan_and_runs_nothing(conn):
    from pgq_teach.statements import explain

    seed(conn, 10)
    plan = explain(conn, "claim", {"batch": 5, "lease": timedelta(minutes=5)})
    assert plan[0].startswith("Update on jobs")
    text = "\n".join(plan)
    assert text.index("LockRows") < text.index("jobs_ready_idx")
    assert counts(conn) == {"ready": 10}  # EXPLAIN without ANALYZE changed nothing
