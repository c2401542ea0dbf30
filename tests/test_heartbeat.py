"""The heartbeat against other sessions' locks (worker/leases.py's guarantee): a row
another session holds is skipped, not waited for and not lost, while every other lease is
renewed; a row held past its lease is given up by the lease clock; a beat that cannot get
the table's lock (a pending ALTER TABLE) is ended by its session's timeouts and retried.
Each test prints what it measured (pytest -s, or -rP, shows it)."""

import threading
import time
from datetime import datetime, timedelta

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

import pgq_teach as pgq
from helpers import Running, job_row, wait_for
from pgq_teach import queue
from pgq_teach.statements import run

NAME = "beat-test"


class Held:
    """Handlers that hold their jobs until `release` is set (or their job is lost), and
    every event the Worker announced, with whether the job was still the process's then."""

    def __init__(self):
        self.release = threading.Event()
        self.jobs: dict[int, queue.Job] = {}
        self.events: list[tuple[str, int | None, bool, float]] = []
        self._lock = threading.Lock()

    def handler(self, job):
        with self._lock:
            self.jobs[job.id] = job
        while not self.release.is_set() and not job.lost.is_set():
            self.release.wait(0.05)

    def on_event(self, name, job):
        with self._lock:
            self.events.append(
                (name, job.id if job else None, job.still_mine() if job else False, time.time())
            )

    def of(self, name, job_id):
        with self._lock:
            return [e for e in self.events if e[0] == name and e[1] == job_id]


def leases_of(conn, ids) -> dict[int, datetime]:
    """The lease deadline each running job has in the committed state, as the server reads it now."""
    return {row[0]: row[1] for row in run(conn, "lab/running_leases").fetchall() if row[0] in ids}


def waits_on(conn, name: str, pid: int) -> bool:
    """Whether a session named `name` is waiting on a lock that session `pid` holds or awaits."""
    rows = run(conn, "lab/lock_lab_sessions", {"prefix": name}).fetchall()
    return any(row[1] == name and pid in row[5] for row in rows)


def test_renew_leases_skips_a_locked_row_and_reads_its_committed_state(db, conn):
    """The statement alone: a row another transaction holds is left as it was and reported
    held but not renewed, while the others are renewed; once a fence commits, it is missing."""
    pgq.enqueue_many(conn, "slow", [{}, {}])
    a, b = pgq.claim(conn, batch=2, lease=60)
    before = leases_of(conn, {a.id, b.id})
    with db.connection(autocommit=False) as other:
        run(other, "lab/set_max_attempts", {"id": a.id, "max_attempts": 10})  # left open
        began = time.monotonic()
        assert queue.renew_leases(conn, [a, b], 120) == {
            (a.id, a.fence_token): False,
            (b.id, b.fence_token): True,
        }
        took = time.monotonic() - began
        after = leases_of(conn, {a.id, b.id})
        assert after[a.id] == before[a.id] and after[b.id] > before[b.id] + timedelta(seconds=50)
        # An uncommitted fence is not seen: the committed state still shows this claim.
        run(other, "lab/fence_job", {"id": a.id, "lease": "1 minute"})
        assert queue.renew_leases(conn, [a], 120) == {(a.id, a.fence_token): False}
        other.commit()
    assert queue.renew_leases(conn, [a, b], 120) == {(b.id, b.fence_token): True}  # a: fenced, lost
    print(f"\nrenew_leases beside a held row: answered in {took * 1000:.0f} ms without waiting")


def test_one_row_held_open_holds_up_no_other_lease_and_is_given_up_only_at_its_end(db, conn):
    """Issue 43, item 6: an operator's UPDATE on one held job, left open for longer than the
    lease. Every beat skips that row and renews the others (their deadlines, read from the
    server, keep moving and never pass); the held-up job is reported as skipped, not lost,
    while its committed state is still this claim; and when the lock outlasts its lease the
    lease clock gives it up (job.lost) before the lease the server holds for it ends."""
    lease = 1.5
    ids = pgq.enqueue_many(conn, "slow", [{}, {}, {}])
    held = Held()
    worker = pgq.Worker(
        make_conninfo(db.dsn, application_name=NAME),
        {"slow": held.handler},
        concurrency=3,
        lease=lease,
        on_event=held.on_event,
    )
    running = Running(worker)
    try:
        assert wait_for(lambda: len(held.jobs) == 3, 15)
        locked, *others = ids
        # Lock it just after a beat, so the test's own timing cannot be what loses it.
        beats = worker.report.beats
        assert wait_for(lambda: worker.report.beats > beats, 10)
        with db.connection(autocommit=False) as operator:
            run(operator, "lab/set_max_attempts", {"id": locked, "max_attempts": 10})  # left open
            locked_at = time.monotonic()
            first = leases_of(conn, set(ids))
            seen = [first]
            blocked_samples = 0
            # Hold the row for twice the lease, reading the deadlines as the beats move them.
            while time.monotonic() - locked_at < 2 * lease:
                time.sleep(0.05)
                now = leases_of(conn, set(ids))
                assert now.keys() == set(ids)  # nothing reaped, nothing done
                if now != seen[-1]:
                    seen.append(now)
                pid = operator.info.backend_pid
                blocked_samples += waits_on(conn, f"{NAME} heartbeat", pid)
                # The server's lease of each other job never passes while the row is held.
                server_now = run(conn, "lab/lease_left", {"id": others[0]}).fetchone()
                assert server_now[2] > 0
            lost_at = held.jobs[locked].lost_at
            server_end = job_row(conn, locked)["leased_until"]  # the lease its claim or a beat wrote
            row = job_row(conn, locked)
            operator.rollback()
        held.release.set()
    finally:
        running.join(15)
    report = worker.report
    renewals = {job_id: len({s[job_id] for s in seen}) - 1 for job_id in ids}
    skips = held.of("renewals_skipped", locked)
    lost = held.of("lost", locked)
    print(
        f"\nlease {lease} s, a beat every {lease / 4} s; row {locked} held open {2 * lease} s: "
        f"renewals seen while held {renewals}; skipped beats of {locked}: {len(skips)} "
        f"(first {skips[0][3] - lost[0][3] if skips and lost else float('nan'):+.2f} s from its loss); "
        f"given up {server_end.timestamp() - lost_at:.2f} s before the server's lease end; "
        f"beats {report.beats}, failed {report.beat_failures}, heartbeat seen waiting {blocked_samples}x"
    )
    # The others were renewed all along: several beats landed while the row was held.
    assert all(renewals[job_id] >= 4 for job_id in others), renewals
    assert renewals[locked] == 0  # its committed deadline never moved while the row was held
    assert blocked_samples == 0  # the heartbeat session never waited on the operator
    # Skipped, not lost, while its committed state was still this claim...
    assert row["status"] == "running" and row["fence_token"] == held.jobs[locked].fence_token
    assert skips and all(still_mine for _, _, still_mine, _ in skips)
    assert lost and skips[0][3] <= lost[0][3]
    # ...and given up by the lease clock once the lock outlasted the lease, before its end.
    assert lost_at is not None and lost_at < server_end.timestamp()
    assert report.leases_lost == 1 and report.beat_failures == 0 and report.renewals_skipped >= 1
    assert all(not held.jobs[job_id].lost.is_set() for job_id in others)


def test_a_pending_alter_table_ends_the_beat_at_its_lock_timeout_and_beats_resume(db, conn):
    """An ALTER TABLE queued behind an open transaction: every statement on jobs waits
    behind its ACCESS EXCLUSIVE request, the beat's too. The heartbeat session's
    lock_timeout ends each try (the error names the lock), the beat is retried on a fresh
    connection, again and again while the ALTER waits, and beats land again once it is done."""
    lease = 2.0
    [job_id] = pgq.enqueue_many(conn, "slow", [{}])
    held = Held()
    worker = pgq.Worker(make_conninfo(db.dsn, application_name=NAME), {"slow": held.handler}, lease=lease)
    running = Running(worker)
    ddl_done = threading.Event()
    try:
        assert wait_for(lambda: job_id in held.jobs and worker.report.beats >= 1, 15)
        with (
            db.connection(autocommit=False) as reader,
            db.connection(autocommit=False, application_name=f"{NAME} ddl") as ddl,
        ):
            run(reader, "lab/job_row", {"id": job_id})  # an open transaction that read jobs

            def alter():
                try:
                    run(ddl, "lab/alter_jobs_default")
                finally:
                    ddl_done.set()

            alterer = threading.Thread(target=alter, daemon=True)
            alterer.start()
            assert wait_for(lambda: waits_on(conn, f"{NAME} ddl", reader.info.backend_pid), 10)
            failures, beats, pending_at = worker.report.beat_failures, worker.report.beats, time.monotonic()
            # Three beats ended by their timeout while the ALTER still waits: none hung on it.
            assert wait_for(lambda: worker.report.beat_failures >= failures + 3, 10)
            waited = time.monotonic() - pending_at
            still_pending = not ddl_done.is_set() and waits_on(conn, f"{NAME} ddl", reader.info.backend_pid)
            during = (worker.report.beat_failures - failures, worker.report.beats - beats)
            error = worker.report.last_error
            reader.rollback()
            assert ddl_done.wait(10)
            alterer.join(5)
            ddl.rollback()
        resumed = worker.report.beats
        assert wait_for(lambda: worker.report.beats > resumed, 10)
        held.release.set()
    finally:
        held.release.set()
        running.join(15)
    print(
        f"\nlease {lease} s (lock_timeout {worker.leases.lock_timeout} s, statement_timeout "
        f"{worker.leases.statement_timeout} s): {during[0]} beats ended by the lock timeout in "
        f"{waited:.2f} s behind the pending ALTER, {during[1]} succeeded meanwhile; last error: {error}"
    )
    assert still_pending and during[1] == 0
    assert error is not None and "LockNotAvailable" in error and "lock timeout" in error
    assert not worker._first_error.first()


@pytest.mark.parametrize("heartbeat", [True, False])
def test_the_check_before_a_job_starts_does_not_wait_on_its_row(db, conn, heartbeat):
    """The first job of a batch of two locks the second's row from another session (left
    open) and works 0.6 s of a 1 s lease. The check before the second starts (half its lease
    gone) runs the heartbeat's statement, which skips the row: not confirmed, the job is not
    started but given up, while the row is still held, and nothing failed or waited."""
    first, second = pgq.enqueue_many(conn, "slow", [{}, {}])
    started, events = [], []
    operator = db.connect(autocommit=False)

    def handler(job):
        started.append(job.id)
        if job.id == first:
            run(operator, "lab/set_max_attempts", {"id": second, "max_attempts": 10})
            time.sleep(0.6)

    def on_event(name, job):
        if job is not None and job.id == second:
            events.append((name, operator.info.transaction_status.name))

    try:
        worker = pgq.Worker(db, {"slow": handler}, lease=1.0, batch=2, heartbeat=heartbeat, on_event=on_event)
        report = worker.run(until_idle=True)
    finally:
        operator.rollback()
        operator.close()
    assert started == [first]
    assert ("lost", "INTRANS") in events  # given up while the row was still held
    assert report.done == 1 and report.fenced == 1 and report.leases_lost == 1
    assert report.renewals_skipped >= 1 and report.beat_failures == 0 and report.last_error is None


def test_the_heartbeat_session_runs_under_its_timeouts(db):
    """The heartbeat session's statement_timeout is one beat's interval (a quarter lease)
    and its lock_timeout half that, in whole milliseconds, after any options the dsn gives."""
    dsn = make_conninfo(db.dsn, options="-c search_path=public")
    leases = pgq.Worker(dsn, {"slow": lambda job: None}, lease=timedelta(seconds=2)).leases
    assert leases.options == "-c search_path=public -c statement_timeout=500 -c lock_timeout=250"
    longest = pgq.Worker(db, {"slow": lambda job: None}, lease=timedelta(days=365)).leases
    assert "statement_timeout=2147483647 " in longest.options  # the server's largest
    tiny = pgq.Worker(db, {"slow": lambda job: None}, lease=0.001).leases
    assert tiny.options.endswith("statement_timeout=1 -c lock_timeout=1")  # never 0, which is none
    # The server takes them: a statement longer than the timeout is cancelled.
    leases.open()
    try:
        conn = leases._connection()
        with pytest.raises(psycopg.errors.QueryCanceled):
            run(conn, "lab/sleep", {"seconds": 1.0})
    finally:
        leases.close()
