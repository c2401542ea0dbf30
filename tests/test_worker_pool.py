"""The Worker as one producer with N executors: one heartbeat for every job
the process holds, a check before each job starts, a handler that learns it
lost its job, one wake-up per notification, and leases that count from the
claim. Runs are counted in the database (the job_runs ledger), and the
second worker is a separate process where the story needs one."""

import json
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

import pgq_teach as pgq
from helpers import Running, counts, job_row, recording_handler, runs_per_job, seed, wait_for
from pgq_teach.statements import run

TESTS = Path(__file__).resolve().parent
SECOND = "import json, sys; from helpers import serve_recording_worker; serve_recording_worker(json.loads(sys.argv[1]))"  # noqa: E501 (the input under test, kept on one line)


def second_process(
    db, *, running: int, seconds: float, work: float = 0.0, stop_after_run: bool = False
) -> subprocess.Popen:
    """Another worker process (lease 1 s, polling every 50 ms, reaping as it
    claims) that starts working once `running` jobs have been claimed; returned
    once it has loaded and connected (helpers.serve_recording_worker)."""
    spec = {
        "dsn": db.dsn,
        "name": "second",
        "kind": "slow",
        "running": running,
        "seconds": seconds,
        "work": work,
        "lease": 1.0,
        "stop_after_run": stop_after_run,
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", SECOND, json.dumps(spec)],
        cwd=TESTS,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Its only line before the final JSON: finish()'s communicate() reads the pipe itself, past
    # this file object's buffer, so nothing else may be printed in between.
    if proc.stdout.readline().strip() != "ready":  # '' if it exited first
        proc.kill()
        raise AssertionError(f"the second worker process did not start:\n{proc.communicate(timeout=60)[1]}")
    return proc


def finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_a_batch_of_long_jobs_with_heartbeats_runs_each_once_beside_a_second_process(db, conn):
    """Three 0.8 s jobs claimed as one batch under a 1 s lease: the third waits
    1.6 s, past its first lease, and the heartbeat keeps it."""
    run(conn, "lab/runs_create")
    seed(conn, 3, kind="slow")
    second = second_process(db, running=3, seconds=60.0, stop_after_run=True)  # outlives the batch
    worker = pgq.Worker(db, {"slow": recording_handler(db.dsn, "first", 0.8)}, lease=1.0, batch=3)
    report = worker.run(until_idle=True)
    # The second process is still working: a job enqueued now is its to run.
    late = pgq.enqueue(conn, "slow", {})
    assert wait_for(lambda: job_row(conn, late)["status"] == "done", 10)
    theirs = finish(second)
    runs = runs_per_job(conn)
    assert runs.pop(late) == ["second"]
    assert list(runs.values()) == [["first"]] * 3
    assert counts(conn) == {"done": 4}
    assert report.done == 3 and report.fenced == 0 and report.leases_lost == 0
    assert report.beats >= 2 and theirs["reaped"] == 0


def test_without_a_heartbeat_a_job_longer_than_its_lease_runs_twice_beside_a_second_process(db, conn):
    """The harness can see a job run twice: 2 s of work under a 1 s lease and
    no heartbeat. The second process reaps the passed lease and runs it too."""
    run(conn, "lab/runs_create")
    seed(conn, 1, kind="slow")
    second = second_process(db, running=1, seconds=30.0, stop_after_run=True)
    worker = pgq.Worker(db, {"slow": recording_handler(db.dsn, "first", 2.0)}, lease=1.0, heartbeat=False)
    report = worker.run(until_idle=True)
    finish(second)
    assert list(runs_per_job(conn).values()) == [["first", "second"]]
    assert report.fenced == 1  # the first worker's completion came too late


def test_a_terminated_heartbeat_session_is_replaced_and_the_job_runs_once(db, conn):
    """A 3.5 s job under a 1 s lease; its heartbeat session is ended from
    another session mid-job. The next beat fails, is retried on a fresh
    connection, and no other worker runs the job."""
    run(conn, "lab/runs_create")
    [job_id] = pgq.enqueue_many(conn, "slow", [{}])
    second = second_process(db, running=1, seconds=5.0)
    worker = pgq.Worker(db, {"slow": recording_handler(db.dsn, "first", 3.5)}, lease=1.0)
    running = Running(worker)
    try:
        assert wait_for(lambda: worker.report.beats >= 2, 10)
        pid = worker.leases.backend_pid()
        assert pid is not None and run(conn, "lab/terminate_backend", {"pid": pid}).fetchone()[0]
        assert wait_for(lambda: job_row(conn, job_id)["status"] == "done", 15)
    finally:
        running.join(15)
    finish(second)
    assert runs_per_job(conn) == {job_id: ["first"]}
    assert job_row(conn, job_id)["attempts"] == 1
    report = worker.report
    assert report.beat_failures >= 1 and report.leases_lost == 0 and report.done == 1
    assert worker.leases.backend_pid() != pid


def test_a_handler_sees_that_its_job_was_fenced_while_it_ran(db, conn):
    [job_id] = pgq.enqueue_many(conn, "slow", [{}])
    started, seen = threading.Event(), {}

    def handler(job):
        started.set()
        seen["lost"] = job.lost.wait(10)
        seen["still_mine"] = job.still_mine()

    worker = pgq.Worker(db, {"slow": handler}, lease=1.0)
    running = Running(worker)
    try:
        assert started.wait(10)
        assert run(conn, "lab/fence_job", {"id": job_id, "lease": "1 minute"}).fetchone()
        assert wait_for(lambda: "still_mine" in seen, 10)
    finally:
        running.join(15)
    assert seen == {"lost": True, "still_mine": False}
    report = worker.report
    assert report.leases_lost == 1 and report.fenced == 1 and report.done == 0
    assert job_row(conn, job_id)["status"] == "running"  # the newer claim's, untouched


@pytest.mark.parametrize("heartbeat", [True, False])
def test_a_job_fenced_while_it_waits_in_a_batch_is_not_started(db, conn, heartbeat):
    """The first job of a batch of two fences the second and works 0.6 s of
    a 1 s lease. The heartbeat finds the second fenced; without one, the
    check before it starts (half its lease gone) renews it and finds it fenced."""
    run(conn, "lab/runs_create")
    first, second = pgq.enqueue_many(conn, "slow", [{}, {}])
    record = recording_handler(db.dsn, "first")

    def handler(job):
        record(job)
        if job.id == first:
            with db.connection() as other:
                run(other, "lab/fence_job", {"id": second, "lease": "1 minute"})
            time.sleep(0.6)

    report = pgq.Worker(db, {"slow": handler}, lease=1.0, batch=2, heartbeat=heartbeat).run(until_idle=True)
    assert runs_per_job(conn) == {first: ["first"], second: []}
    assert report.done == 1 and report.fenced == 1 and report.leases_lost == 1


def test_one_notification_wakes_one_claim_in_a_pool_and_every_worker_otherwise(db, conn):
    """Four idle executors in one process: a notification wakes one claim.
    Four idle Workers: it wakes all four, and three claims come back empty."""
    done = []
    pool = pgq.Worker(db, {"slow": lambda job: done.append(job.id)}, concurrency=4, poll=60)
    loners = [pgq.Worker(db, {"slow": lambda job: done.append(job.id)}, poll=60) for _ in range(4)]
    seen = {}
    for name, workers in (("pool", [pool]), ("loners", loners)):
        started = [Running(w) for w in workers]
        try:
            assert wait_for(lambda ws=workers: all(w.report.empty_claims >= 1 for w in ws), 10)  # idle now
            before = [(w.report.claims, w.report.empty_claims) for w in workers]
            job_id = pgq.enqueue(conn, "slow", {})
            assert wait_for(lambda wanted=job_id: wanted in done, 10)
            time.sleep(0.5)  # any straggling wake-up and claim lands
        finally:
            for r in started:
                r.join(15)
        seen[name] = (
            sum(w.report.wakeups for w in workers),
            sum(w.report.claims - c for w, (c, _) in zip(workers, before, strict=True)),
            sum(w.report.empty_claims - e for w, (_, e) in zip(workers, before, strict=True)),
        )
    assert seen["pool"] == (1, 1, 0)  # wake-ups, claims, empty claims
    wakeups, claims, empty = seen["loners"]
    assert wakeups == 4 and empty >= 3 and claims >= 4


def test_a_pool_runs_its_executors_at_once_on_three_connections(db, conn):
    """Eight jobs that each wait for all eight: only eight executors at once
    can finish them. The process holds three sessions: work, LISTEN and heartbeat."""
    seed(conn, 8, kind="slow")
    barrier = threading.Barrier(8, timeout=10)
    sessions = []

    def handler(job):
        if barrier.wait() == 0:
            with db.connection() as look:
                sessions.append(run(look, "lab/other_sessions").fetchone()[0] - 1)  # less this look

    report = pgq.Worker(db, {"slow": handler}, concurrency=8, lease=30).run(until_idle=True)
    assert report.done == 8 and counts(conn) == {"done": 8}
    assert sessions == [3]


def test_a_claim_late_in_a_long_transaction_still_gets_a_whole_lease(db, conn):
    """The transaction is older than the lease when the claim runs; the lease
    counts from the claim (clock_timestamp()), not from the transaction's
    start (now()), so it has not passed already. The heartbeat's statement
    counts the same way."""
    [job_id] = pgq.enqueue_many(conn, "slow", [{}])
    with conn.transaction():
        began = run(conn, "lab/open_transaction").fetchone()[0]
        time.sleep(0.6)  # the transaction is now older than the 0.5 s lease
        [job] = pgq.claim(conn, lease=0.5)
        assert job.leased_until - began >= timedelta(seconds=1.1)
        assert run(conn, "lab/lease_left", {"id": job_id}).fetchone()[2] > 0
        time.sleep(0.6)
        assert pgq.extend_leases(conn, [job], 0.5) == {(job_id, job.fence_token)}
        leased_until = job_row(conn, job_id)["leased_until"]
        assert leased_until - began >= timedelta(seconds=1.7)
    # Outside a transaction the statement is its own transaction: the same count.
    with db.connection() as fresh:
        assert pgq.extend_leases(fresh, [job], 60) == {(job_id, job.fence_token)}
        assert 50 < run(fresh, "lab/lease_left", {"id": job_id}).fetchone()[2] <= 60


def test_a_stale_claim_and_a_newer_one_of_the_same_job_are_told_apart(db, conn):
    """One process can hold a stale claim of a job (its lease passed while it
    was frozen) and a newer claim of the same job. The leases are kept per
    claim, a beat keeps only the newer, and a batch completion refuses to
    name one job twice (its rows could not say which claim matched)."""
    from pgq_teach.worker import Leases

    [job_id] = pgq.enqueue_many(conn, "slow", [{}])
    [stale] = pgq.claim(conn, lease=60)
    [token] = run(conn, "lab/fence_job", {"id": job_id, "lease": "1 minute"}).fetchone()
    fresh = pgq.Job(stale.id, stale.kind, stale.payload, stale.attempts + 1, fence_token=token)
    told = []
    leases = Leases(
        db.dsn, timedelta(seconds=60), lambda job, why: told.append((job.fence_token, why)), lambda *_: None
    )
    try:
        leases.hold([stale, fresh], time.monotonic())
        assert leases.renew([stale, fresh]) == {(job_id, token)}
    finally:
        leases.close()
    assert stale.lost.is_set() and not fresh.lost.is_set() and told == [(stale.fence_token, "fenced")]
    assert leases.seconds_left(stale) == float("-inf") and leases.seconds_left(fresh) > 50
    with pytest.raises(pgq.BadInput, match="twice"):
        pgq.complete_many(conn, [stale, fresh])
    assert pgq.complete_many(conn, [stale]) == [False] and pgq.complete_many(conn, [fresh]) == [True]


def test_every_job_lost_at_once_is_marked_before_any_handler_is_told(db):
    """A lost-callback may block (a fault run's ledger waits out a server restart): the
    other jobs lost at the same moment are marked already, with the moment they were,
    so none runs on as held, and none seems to have been learnt lost late."""
    from pgq_teach.worker import Leases

    jobs = [pgq.Job(i, "slow", {}, 1, fence_token=1) for i in (1, 2, 3)]
    seen = []

    def told(job, why):
        seen.append([j.lost.is_set() and j.lost_at is not None for j in jobs])
        time.sleep(0.2)

    leases = Leases(db.dsn, timedelta(seconds=1), told, lambda *_: None)
    before = time.time()
    leases.hold(jobs, time.monotonic() - 2)  # every lease has passed
    leases.give_up_passed()
    assert seen == [[True, True, True]] * 3
    assert all(before <= job.lost_at < before + 0.2 for job in jobs)
    assert not jobs[0].mark_lost()  # learnt twice (a beat and a check at once): told once


def test_a_job_whose_outcome_is_on_its_way_is_still_given_up_at_its_end(db):
    """A send that outlasts the lease may be fenced, so a job taken out for its outcome's
    send is not renewed but is still given up at its end, and a failed send does not hold
    it again. Its handler is told; it is not counted as a lost lease, since its outcome may
    commit all the same and is counted as what it did."""
    told = []
    worker = pgq.Worker(
        db, {"slow": lambda job: None}, lease=1.0, on_event=lambda e, job: told.append((e, job.id))
    )
    leases = worker.leases
    job = pgq.Job(1, "slow", {}, 1, fence_token=1)
    leases.hold([job], time.monotonic() - 2)  # its lease has passed
    taken = leases.take([job])
    assert leases.held() == [] and leases.earliest_end() < time.monotonic()
    leases.give_up_passed()
    assert told == [("lost", 1)] and not job.still_mine() and worker.report.leases_lost == 0
    leases.put_back(taken)
    assert leases.held() == [] and leases.earliest_end() == float("inf")


def test_the_lease_clock_gives_up_a_job_at_its_end_though_no_beat_failed(db):
    """Beats that succeed slowly can let a lease end between them: the lease clock wakes
    at the end itself (a tenth of the lease early), not at the next beat (a minute's lease
    beats every 15 s)."""
    worker = pgq.Worker(db, {"slow": lambda job: None}, lease=60)
    job = pgq.Job(1, "slow", {}, 1, fence_token=1)
    worker.leases.hold([job], time.monotonic() - 53.7)  # 0.3 s before its end less 6 s
    clock = threading.Thread(target=worker._lease_clock_loop, daemon=True)
    clock.start()
    try:
        assert not job.lost.wait(0.1)
        assert job.lost.wait(5)
    finally:
        worker._closing.set()
        clock.join(5)
    assert worker.leases.held() == [] and worker.report.beats == 0


def test_a_job_is_given_up_before_its_lease_ends_while_a_beat_is_stuck(db, conn):
    """A beat that cannot renew a job (here another session holds its row, which every beat
    skips; in a fault run, a connect to a restarting server holds up the heartbeat's thread)
    does not hold up the job's end: the lease clock gives the job up and tells its handler
    before the server's lease ends, so no reaper can take it first, though no beat failed
    and nothing fenced it."""
    [job_id] = pgq.enqueue_many(conn, "slow", [{}])
    started, seen = threading.Event(), {}

    def handler(job):
        seen["job"] = job
        started.set()
        seen["lost"] = job.lost.wait(10)

    worker = pgq.Worker(db, {"slow": handler}, lease=2.0)
    running = Running(worker)
    try:
        assert started.wait(10)
        with db.connection() as blocker:
            with blocker.transaction():  # every beat skips the row this update locks
                run(blocker, "lab/fence_job", {"id": job_id, "lease": "1 minute"})
                assert wait_for(lambda: "lost" in seen, 10)
                ends = job_row(conn, job_id)["leased_until"]  # the lease the claim or a beat wrote
                raise psycopg.Rollback()  # the fence never happened
    finally:
        running.join(15)
    assert seen["lost"] and seen["job"].lost_at < ends.timestamp()
    assert worker.report.beat_failures == 0 and worker.report.leases_lost == 1
    assert worker.report.renewals_skipped >= 1  # the beats ran, and left its row alone
