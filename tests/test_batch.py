"""Batch completion (issue 13): outcomes sent together, still fenced row by
row, locked in one order so any number of workers never deadlock."""

import random
import threading
import time
from datetime import timedelta

import psycopg
import pytest

import pgq_teach as pgq
from helpers import counts, expire_leases, job_row, round_trips, seed
from pgq_teach import databases
from pgq_teach.infra import embedded
from pgq_teach.statements import run


def test_a_stale_workers_batch_is_fenced_row_by_row(conn):
    """A holds four jobs; two of its leases run out and B claims those two.
    A's one statement completes its two current rows and matches neither
    stale one; B's completes its two."""
    seed(conn, 4)
    short = pgq.claim(conn, batch=2, lease=timedelta(seconds=1))
    long = pgq.claim(conn, batch=2, lease=timedelta(minutes=5))
    a = short + long
    expire_leases(conn, short)  # A stalls past the two short leases
    assert pgq.reap(conn) == 2
    b = pgq.claim(conn, batch=4)
    assert sorted(j.id for j in b) == sorted(j.id for j in short)
    params = {"ids": [j.id for j in a], "fence_tokens": [j.fence_token for j in a]}
    with conn.transaction():
        assert run(conn, "complete_many", params).rowcount == 2  # the statement alone
        raise psycopg.Rollback()
    # The same batch through the library, which says which rows were fenced.
    assert pgq.complete_many(conn, a, durable=False) == [False, False, True, True]
    assert [job_row(conn, j.id)["status"] for j in a] == ["running", "running", "done", "done"]
    assert pgq.complete_many(conn, b) == [True, True]
    assert counts(conn) == {"done": 4}
    assert pgq.complete_many(conn, a) == [False] * 4  # nothing left to complete twice


def test_a_stale_workers_failures_are_fenced_row_by_row(conn):
    seed(conn, 3, kind="call_webhook")
    stale = pgq.claim(conn, batch=1, lease=timedelta(seconds=1))
    current = pgq.claim(conn, batch=2)
    expire_leases(conn, stale)
    assert pgq.reap(conn) == 1
    [fresh] = pgq.claim(conn)
    run(conn, "lab/set_max_attempts", {"id": current[1].id, "max_attempts": 1})
    failures = [(stale[0], "late"), (current[0], "HTTP 503"), (current[1], ValueError("bad"))]
    assert pgq.fail_many(conn, failures, durable=False) == ["fenced", "ready", "dead"]
    assert job_row(conn, fresh.id)["status"] == "running"  # the stale failure left it alone
    rows = [job_row(conn, j.id) for j in current]
    assert [r["last_error"] for r in rows] == ["HTTP 503", "ValueError: bad"]
    assert pgq.complete_many(conn, [fresh]) == [True]


@pytest.mark.usefixtures("alone")
def test_a_relaxed_batch_commits_in_one_statement_without_waiting_for_the_disk(db, conn):
    """durable=False on a connection of its own: one statement whose commit
    does not flush the WAL, and whose setting ends with it (the next durable
    statement on the session flushes again). Inside a caller's transaction
    the caller's setting holds. PostgreSQL 18 counts flushes per session.

    A durable commit flushes at least once, unless another session's flush
    already covered its WAL record (group commit): each durable count is the
    most of three tries, one job each. It may flush more than once (finishing
    a WAL segment, or writing out a dirty page for a busy neighbour, costs a
    flush too), so the claim is the difference: a relaxed commit flushes
    none. On a server of its own (alone), with no neighbour to flush for."""
    if db.server.major < 18:
        pytest.skip("WAL flushes per session are counted from PostgreSQL 18")
    seed(conn, 15, kind="call_webhook")
    done: list = []

    def flushes_by(send) -> int:
        run(conn, "lab/flush_stats")
        before = run(conn, "lab/wal_flushes").fetchone()[0]
        send()
        run(conn, "lab/flush_stats")
        return run(conn, "lab/wal_flushes").fetchone()[0] - before

    def durable_flushes(complete) -> int:
        tries = []
        for _ in range(3):
            job = pgq.claim(conn, batch=1)
            tries.append(flushes_by(lambda job=job: complete(job)))
            done.extend(job)
            if tries[-1]:
                break
        return max(tries)

    assert durable_flushes(lambda job: pgq.complete_many(conn, job)) >= 1  # durable: the control
    b, c = pgq.claim(conn, batch=2), pgq.claim(conn, batch=2)
    trips: list[int] = []

    def relaxed() -> None:
        trips.append(round_trips(conn, lambda: pgq.complete_many(conn, b, durable=False)))

    assert flushes_by(relaxed) == 0
    done.extend(b)
    assert trips == [1]  # BEGIN, SET LOCAL, the UPDATE and COMMIT would be four round trips
    assert flushes_by(lambda: pgq.fail_many(conn, [(j, "down") for j in c], durable=False)) == 0
    # the relaxed setting did not stay: the next durable completion flushes again
    assert durable_flushes(lambda job: pgq.complete_many(conn, job)) >= 1
    settings: list[str] = []

    def in_a_transaction(job) -> None:
        with conn.transaction():
            pgq.complete_many(conn, job, durable=False)
            settings.append(run(conn, "lab/synchronous_commit").fetchone()[0])

    assert durable_flushes(in_a_transaction) >= 1  # the caller's commit, under the caller's setting
    assert set(settings) == {"on"}  # the library sent the durable statement inside the transaction
    assert {job_row(conn, j.id)["status"] for j in done} == {"done"}
    assert [job_row(conn, j.id)["status"] for j in c] == ["ready", "ready"]  # failed, to retry later


def test_a_relaxed_batch_inside_a_pipeline_leaves_the_pipeline_durable(conn):
    """Inside conn.pipeline() the transaction status reads idle, yet the
    statements up to the pipeline's Sync share one implicit transaction: the
    relaxed twin's setting would relax the caller's later statements too. The
    server says the next statement in the pipeline still commits durably."""
    seed(conn, 2)
    jobs = pgq.claim(conn, batch=2)
    with conn.pipeline():
        assert pgq.complete_many(conn, jobs, durable=False) == [True, True]
        setting = run(conn, "lab/synchronous_commit").fetchone()[0]
    assert setting == "on"
    assert {job_row(conn, j.id)["status"] for j in jobs} == {"done"}


def test_a_relaxed_completion_a_crash_takes_runs_again_and_a_later_durable_commit_keeps_one(own_server):
    """What durable=False promises across a crash (pg_ctl stop -m immediate,
    on a server of this test's own): a relaxed completion may be lost, never
    half of one batch; a later durable commit (here the next claim) keeps the
    relaxed ones before it; a claim is never lost, so a job whose completion
    was lost is still running under its claim's token, and once its lease
    passes it runs again while the stale claim's completion is fenced. At
    least once, no more. With wal_writer_delay at 10 s (200 ms by default)
    the last relaxed commit is almost always still in the server's memory at
    the crash, so the path where it runs again is the one tested; the test
    holds either way."""
    db = databases.open_database("relaxed-crash", reset=True)
    with db.connection() as conn:
        run(conn, "admin/alter_system", {"value": "10s"}, idents={"name": "wal_writer_delay"})
        run(conn, "admin/reload_config")
        seed(conn, 5)
        early = pgq.claim(conn, batch=2)
        assert pgq.complete_many(conn, early, durable=False) == [True, True]
        later = pgq.claim(conn, batch=3)  # durable: its commit flushes the WAL before it
        assert pgq.complete_many(conn, later[:2], durable=False) == [True, True]
    embedded.stop(immediate=True)  # a crash, the moment after the relaxed commit
    embedded.start()
    with db.connection() as conn:
        rows = {job.id: job_row(conn, job.id) for job in early + later}
        assert [rows[job.id]["status"] for job in early] == ["done", "done"]
        assert {rows[job.id]["status"] for job in later[:2]} in ({"done"}, {"running"})  # never half
        unfinished = [job for job in later if rows[job.id]["status"] == "running"]
        assert later[2] in unfinished  # its claim survived: it still runs
        assert [rows[job.id]["fence_token"] for job in unfinished] == [job.fence_token for job in unfinished]
        expire_leases(conn, unfinished)  # their leases pass (staged)
        ran: list[int] = []
        report = pgq.Worker(db.dsn, {"send_receipt": lambda job: ran.append(job.id)}, poll=0.2).run(
            until_idle=True
        )
        assert sorted(ran) == sorted(job.id for job in unfinished) and report.reaped == len(unfinished)
        assert pgq.complete_many(conn, unfinished) == [False] * len(unfinished)  # the stale claims: fenced
        assert counts(conn) == {"done": 5}


def test_batch_backoff_matches_fail_and_never_overflows(conn):
    """fail_many backs off like fail.sql: 10 s x 2^attempts, capped at an hour,
    even at a retry count where 2^attempts would overflow an interval."""
    seed(conn, 2, kind="call_webhook")
    jobs = pgq.claim(conn, batch=2)
    run(conn, "lab/set_max_attempts", {"id": jobs[1].id, "max_attempts": pgq.queue.MAX_ATTEMPTS})
    run(conn, "lab/set_attempts", {"id": jobs[1].id, "attempts": 2**31 - 2})
    before = time.time()
    assert pgq.fail_many(conn, [(j, "down") for j in jobs]) == ["ready", "ready"]
    waits = [job_row(conn, j.id)["run_at"].timestamp() - before for j in jobs]
    assert abs(waits[0] - 20) < 1 and abs(waits[1] - 3600) < 1


@pytest.mark.parametrize(
    "call",
    [
        lambda c: pgq.complete_many(c, "not jobs"),
        lambda c: pgq.complete_many(c, [1, 2]),
        lambda c: pgq.fail_many(c, [("job", "error")]),
        lambda c: pgq.fail_many(c, [1]),
        lambda c: pgq.enqueue_many(c, "send_receipt", {"n": 1}),
        lambda c: pgq.enqueue_many(c, "send_receipt", [{"n": 1}, {"bad": float("nan")}]),
        lambda c: pgq.enqueue_many(c, "", [{"n": 1}]),
        lambda c: pgq.enqueue_many(c, "send_receipt", [{"n": 1}], max_attempts=0),
    ],
)
def test_bad_batches_are_refused_before_any_sql(conn, call):
    seed(conn, 1)
    [job] = pgq.claim(conn)
    before = job_row(conn, job.id)
    with pytest.raises(pgq.BadInput):
        call(conn)
    assert job_row(conn, job.id) == before and counts(conn) == {"running": 1}


def test_sixteen_workers_never_deadlock_nor_retry(db, conn):
    """16 workers at batch 10 drain 4,000 jobs: every job done once, no
    deadlock detected by the server, no worker error or reconnect, nothing
    fenced (no lease ran out), and no failure retried. Their claims never
    share a row, so this drain alone could not deadlock; the next test's
    batches share every row."""
    seed(conn, 4_000, kind="noop")
    before = run(conn, "lab/deadlocks").fetchone()[0]
    workers = [pgq.Worker(db.dsn, {"noop": lambda job: None}, batch=10) for _ in range(16)]
    errors = []

    def go(worker):
        try:
            worker.run(until_idle=True)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == [] and not any(t.is_alive() for t in threads)
    done_ids = [i for w in workers for i in w.report.done_ids]
    assert len(done_ids) == len(set(done_ids)) == 4_000
    assert counts(conn) == {"done": 4_000}
    assert sum(w.report.retried + w.report.fenced + w.report.reconnects for w in workers) == 0
    assert all(w.report.last_error is None for w in workers)
    time.sleep(1.1)  # a backend reports its deadlock count within a second
    with db.connection() as fresh:
        assert run(fresh, "lab/deadlocks").fetchone()[0] == before


def test_batches_that_share_rows_in_different_orders_never_deadlock(db, conn):
    """Eight sessions send batch statements over one shared set of 120
    claimed jobs at once, each naming a random 40 of them in a random order:
    25 rounds of heartbeats (extend_leases) each, then a completion or a
    failure batch of 60, durable or not, so every lock set overlaps every
    other. A statement that locked its rows in the order it was given would
    deadlock here (two sessions each holding a row the other wants): without
    the ORDER BY the plan locks rows where it meets them, scanning the
    running jobs where they lie on disk, and every update moves a row, so
    sessions meet the shared rows in different orders (taking the ORDER BY
    out of the statements made this test fail). Locked in id order, none
    deadlocks: no session errs, the server's deadlock count does not move,
    and every job gets exactly one outcome."""
    seed(conn, 5_000, kind="noop")
    claimed = pgq.claim(conn, batch=120, lease=timedelta(minutes=5))
    before = run(conn, "lab/deadlocks").fetchone()[0]
    start = threading.Barrier(8, timeout=30)
    errors: list[BaseException] = []
    matched: list[int] = []

    def send(n: int) -> None:
        pick = random.Random(n)
        try:
            with db.connection() as mine:
                start.wait()
                for _ in range(25):
                    pgq.extend_leases(mine, pick.sample(claimed, 40), timedelta(minutes=5))
                jobs = pick.sample(claimed, 60)
                if n % 2:
                    said = pgq.complete_many(mine, jobs, durable=n % 4 == 1)
                    matched.extend(job.id for job, ok in zip(jobs, said, strict=True) if ok)
                else:
                    said = pgq.fail_many(mine, [(job, "down") for job in jobs], durable=n % 4 == 2)
                    matched.extend(
                        job.id for job, outcome in zip(jobs, said, strict=True) if outcome != "fenced"
                    )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=send, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == [] and not any(t.is_alive() for t in threads)
    assert len(matched) == len(set(matched))  # no job finished twice
    rest = [job for job in claimed if job.id not in set(matched)]
    assert pgq.complete_many(conn, rest) == [True] * len(rest)  # and none lost its claim
    time.sleep(1.1)  # a backend reports its deadlock count within a second
    with db.connection() as fresh:
        assert run(fresh, "lab/deadlocks").fetchone()[0] == before


def test_enqueue_many_in_the_callers_transaction_with_one_notification(db, conn):
    with db.connection() as listener:
        run(listener, "listen")
        with conn.transaction():
            ids = pgq.enqueue_many(conn, "send_receipt", [{"n": n} for n in range(500)])
            assert len(list(listener.notifies(timeout=0.2))) == 0  # not before the commit
        heard = list(listener.notifies(timeout=0.5))
    assert [n.payload for n in heard] == ["send_receipt"]
    assert ids == sorted(ids) and len(set(ids)) == 500
    assert [job_row(conn, i)["payload"]["n"] for i in (ids[0], ids[250], ids[-1])] == [0, 250, 499]
    with pytest.raises(RuntimeError), conn.transaction():
        pgq.enqueue_many(conn, "send_receipt", [{"n": 1}, {"n": 2}])
        raise RuntimeError("the order failed")
    assert counts(conn) == {"ready": 500}
    assert pgq.enqueue_many(conn, "send_receipt", []) == []


@pytest.mark.parametrize("flush_after,earlier", [(0.1, "done"), (30.0, "running")])
def test_outcomes_wait_for_the_batch_or_for_flush_after(db, conn, flush_after, earlier):
    """Each handler sleeps 0.3 s and looks at the job before it. With
    flush_after 0.1 s the earlier outcome was sent before this job started;
    with 30 s it waits for the end of the batch (and the batch still fits in
    the 60 s lease). Either way all five end done."""
    seed(conn, 5, kind="slow")
    seen = []

    def slow(job):
        with db.connection() as look:
            if seen:
                seen.append(job_row(look, job.id - 1)["status"])
            else:
                seen.append(None)
        time.sleep(0.3)

    worker = pgq.Worker(db.dsn, {"slow": slow}, batch=5, lease=60, flush_after=flush_after)
    report = worker.run(until_idle=True)
    assert seen == [None] + [earlier] * 4
    assert report.done == 5 and counts(conn) == {"done": 5}


@pytest.mark.parametrize("flush_after", [-1, 60, 61, "1", float("nan")])
def test_a_flush_after_outside_the_lease_is_refused(db, flush_after):
    with pytest.raises(pgq.BadInput, match="flush_after"):
        pgq.Worker(db.dsn, {"noop": lambda job: None}, lease=60, flush_after=flush_after)
