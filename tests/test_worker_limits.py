"""The Worker's per-kind limits on a real server (pgq_teach/worker/limits.py): the job timeout
(a hung handler is failed at it, told, and retried by its kind's policy; what the Worker does
when every executor is stuck), the shared rate limit across 8 processes, and the pause after
failures in a row. Each asserts what happened, never how long it took."""

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from psycopg.rows import dict_row

import pgq_teach as pgq
from helpers import Running, job_row, wait_for
from pgq_teach import kinds
from pgq_teach.statements import run

TESTS = Path(__file__).resolve().parent
RATE_LIMITED = "import json, sys; from helpers import serve_rate_limited_worker; serve_rate_limited_worker(json.loads(sys.argv[1]))"  # noqa: E501 (one line for -c)


def retry_wait_s(conn, job_id: int) -> float:
    return run(conn, "lab/retry_wait", {"id": job_id}, row_factory=dict_row).fetchone()["wait_s"]


def test_a_hung_handler_is_failed_at_its_timeout_told_and_retried_by_its_kinds_policy(db, conn):
    kinds.set_policy(conn, "hang", timeout_s=0.5, backoff_base_s=600, backoff_cap_s=86_400)
    job_id = pgq.enqueue(conn, "hang", {})
    told = []

    def hang(job):
        told.append(job.lost.wait(60))  # hung until told: the timeout must tell it

    report = pgq.Worker(db.dsn, {"hang": hang}, poll=0.05).run(until_idle=True)
    assert told == [True]
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("ready", 1)
    assert row["last_error"] == "JobTimeout: ran past its job timeout of 0.5 s"
    assert retry_wait_s(conn, job_id) > 600  # the kind's base, 600 s x 2^1, not fail.sql's 20 s
    # The handler's own return came after the timeout's failure: dropped, not sent as done.
    assert (report.timed_out, report.retried, report.done, report.fenced, report.stuck) == (1, 1, 0, 0, 0)


def test_the_workers_timeout_overrides_the_kinds(db, conn):
    kinds.set_policy(conn, "hang", timeout_s=3600)
    job_id = pgq.enqueue(conn, "hang", {})
    report = pgq.Worker(db.dsn, {"hang": lambda job: job.lost.wait(60)}, timeout={"hang": 0.3}).run(
        until_idle=True
    )
    assert report.timed_out == 1 and job_row(conn, job_id)["last_error"].startswith("JobTimeout")


def test_a_handler_within_its_timeout_is_not_touched(db, conn):
    job_id = pgq.enqueue(conn, "quick", {})
    report = pgq.Worker(db.dsn, {"quick": lambda job: None}, timeout=30).run(until_idle=True)
    assert (report.done, report.timed_out) == (1, 0) and job_row(conn, job_id)["status"] == "done"


def test_the_timeout_clock_with_nothing_to_time_waits_for_news_and_ends_when_woken(db):
    """With no job timed, the clock waits for start() or wake(): it does not look at closing
    every second, which made every run() wait up to a second for it at its end."""
    deadlines = pgq.Worker(db.dsn, {"noop": lambda job: None})._deadlines
    closing = threading.Event()
    clock = threading.Thread(target=deadlines.clock_loop, args=(closing,), daemon=True)
    clock.start()
    closing.set()
    clock.join(1.5)  # the old loop ended within a second of this, unwoken
    assert clock.is_alive()
    deadlines.wake()
    clock.join(30)
    assert not clock.is_alive()


def test_when_every_executor_is_stuck_the_worker_claims_nothing_until_one_comes_back(db, conn):
    stuck, second = pgq.enqueue(conn, "hang", {"n": 1}), pgq.enqueue(conn, "hang", {"n": 2})
    release = threading.Event()

    def deaf(job):  # never looks at job.lost: a thread cannot be killed, so it keeps its executor
        release.wait(60)

    worker = pgq.Worker(db.dsn, {"hang": deaf}, timeout=0.3, poll=0.05, concurrency=1)
    running = Running(worker)
    try:
        assert wait_for(lambda: worker.report.stuck == 1, 30)
        # Sent with the next outcomes (within flush_after): polled for, not read at once.
        assert wait_for(lambda: (job_row(conn, stuck)["last_error"] or "").startswith("JobTimeout"), 30)
        polls = worker.report.polls
        assert wait_for(lambda: worker.report.polls >= polls + 5, 30)  # it looked, five times over
        assert (job_row(conn, second)["status"], worker.report.claimed) == ("ready", 1)
        release.set()
        assert wait_for(lambda: job_row(conn, second)["status"] == "done", 30)
    finally:
        release.set()
        running.join()
    report = worker.report
    assert (report.timed_out, report.stuck, report.done) == (1, 0, 1)
    assert (job_row(conn, stuck)["status"], job_row(conn, stuck)["attempts"]) == ("ready", 1)


def test_a_kind_failing_in_a_row_is_paused_and_its_jobs_handed_back_with_no_try_spent(db, conn):
    ids = pgq.enqueue_many(conn, "partner", [{"n": n} for n in range(5)])

    def down(job):
        raise ConnectionError("the partner is down")

    worker = pgq.Worker(db.dsn, {"partner": down}, poll=0.05, pause_after=3, pause_for=30)
    running = Running(worker)
    try:
        assert wait_for(lambda: worker.report.handed_back >= 2, 30)
    finally:
        running.join()
    report = worker.report
    assert (report.retried, report.pauses) == (3, 1)
    assert report.last_pause == "partner paused for 30 s after 3 failures in a row"
    rows = [job_row(conn, job_id) for job_id in ids]
    failed = [r for r in rows if r["attempts"] == 1]
    waiting = [r for r in rows if r["attempts"] == 0]
    assert len(failed) == 3 and {r["last_error"] for r in failed} == {"ConnectionError: the partner is down"}
    assert len(waiting) == 2 and all(r["status"] == "ready" for r in waiting)
    assert all(r["last_error"] is None for r in waiting)  # never tried: a hand-back is no failure of theirs
    assert all(20 < retry_wait_s(conn, r["id"]) <= 30 for r in waiting)  # out of reach until the pause ends


def test_a_success_ends_a_run_of_failures(db, conn):
    outcomes = iter([False, False, True, False, False, True])
    pgq.enqueue_many(conn, "partner", [{}] * 6)

    def flaky(job):
        if not next(outcomes):
            raise ConnectionError("no")

    report = pgq.Worker(db.dsn, {"partner": flaky}, pause_after=3).run(until_idle=True)
    assert (report.done, report.retried, report.pauses, report.handed_back) == (2, 4, 0, 0)


def windows(starts: list[float], width: float = 1.0) -> int:
    """The most starts inside any window of `width` seconds (each window opening at a start)."""
    most, first = 0, 0
    for last, at in enumerate(starts):
        while starts[first] <= at - width:
            first += 1
        most = max(most, last - first + 1)
    return most


def test_eight_processes_share_one_rate_limit_and_waiting_for_a_token_spends_no_try(db, conn, tmp_path):
    rate, total = 10, 60
    run(conn, "lab/runs_create")
    ids = pgq.enqueue_many(conn, "partner", [{"n": n} for n in range(total)])
    go = tmp_path / "go"
    procs = []
    for n in range(8):
        spec = {
            "dsn": db.dsn,
            "name": f"p{n}",
            "kind": "partner",
            "rate": rate,
            "total": total,
            "go": str(go),
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", RATE_LIMITED, json.dumps(spec)],
                cwd=TESTS,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready", proc.communicate(timeout=60)[1]
        go.touch()  # all eight start together, so they compete for the bucket from its first token
        reports = []
        for proc in procs:
            out, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, err
            reports.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            proc.kill()
    starts = [row[0] for row in run(conn, "lab/run_starts")]
    assert len(starts) == total  # each job ran once
    # The limit, plus the bucket's one second of burst, in any one-second window.
    most = windows(starts)
    print(f"most calls in a one-second window: {most} (limit {rate}/s, plus {rate} of burst)")
    assert most <= 2 * rate
    assert sum(r["handed_back"] for r in reports) > 0  # the limit held jobs back
    assert sum(r["done"] for r in reports) == total
    assert {job_row(conn, job_id)["attempts"] for job_id in ids} == {1}  # no try spent waiting


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"timeout": 0}, "timeout must be a number of seconds"),
        ({"timeout": -1}, "timeout must be a number of seconds"),
        ({"timeout": {"k": float("nan")}}, r"timeout\['k'\] must be a number"),
        ({"timeout": {"other": 5}}, "timeout names kind 'other', which this Worker has no handler for"),
        ({"rate_limits": {"k": 0}}, r"rate_limits\['k'\] must be a number"),
        ({"rate_limits": {"other": 5}}, "rate_limits names kind 'other'"),
        ({"pause_after": 0}, "pause_after must be from 1"),
        ({"pause_for": 0}, "pause_for must be a number of seconds"),
    ],
    ids=[
        "timeout 0",
        "timeout -1",
        "timeout NaN",
        "timeout unknown kind",
        "rate 0",
        "rate unknown kind",
        "pause after 0",
        "pause for 0",
    ],
)
def test_bad_limits_are_refused_before_anything_runs(settings, message):
    with pytest.raises(pgq.BadInput, match=message):
        pgq.Worker("postgresql:///no-such-database?host=/nonexistent", {"k": print}, **settings)


def test_a_session_broken_while_it_waits_for_a_token_leaves_no_lease_renewed_for_ever(db, conn):
    """The claim commits, then the work session is ended while it waits for the bucket's row:
    the jobs it claimed never reach an executor. The Worker must stop renewing their leases,
    so the reaper takes them back and the job runs (the fault run once left one job running,
    its lease renewed, for the whole of a 132 s drain)."""
    kinds.take_tokens(conn, "k", 100, 0)  # the bucket's row exists, so the holder can lock it
    job_id = pgq.enqueue(conn, "k", {})
    ran = []
    worker = pgq.Worker(
        db.dsn, {"k": lambda job: ran.append(job.id)}, rate_limits={"k": 100}, lease=1, poll=0.05
    )
    with db.connection() as holder:
        running = None
        try:
            with holder.transaction():  # the bucket's row held until the session is ended
                run(holder, "lab/bucket_hold", {"kind": "k"})
                running = Running(worker)
                assert wait_for(lambda: run(conn, "lab/waiting_on_lock").fetchone() is not None, 30)
                assert job_row(conn, job_id)["status"] == "running"  # the claim committed
                [pid, _, query] = run(conn, "lab/waiting_on_lock").fetchone()
                assert "rate_limits" in query  # the Worker's take of tokens, not something else
                run(conn, "lab/terminate_backend", {"pid": pid})
            assert wait_for(lambda: job_row(conn, job_id)["status"] == "done", 30), job_row(conn, job_id)
        finally:
            if running is not None:
                running.join()
    assert ran == [job_id]
    assert job_row(conn, job_id)["attempts"] == 2  # the broken claim's try, then the one that ran


def test_run_until_idle_waits_for_the_jobs_it_handed_back(db, conn):
    """A kind's first take finds its bucket empty, so the first claim hands its jobs back; they
    are not due for a moment, but run(until_idle=True) counts them as due and does them."""
    ids = pgq.enqueue_many(conn, "k", [{"n": n} for n in range(3)])
    report = pgq.Worker(db.dsn, {"k": lambda job: None}, rate_limits={"k": 50}, poll=5).run(until_idle=True)
    assert report.handed_back >= 1  # the empty bucket sent the first claim's jobs back
    assert report.done == 3 and all(job_row(conn, job_id)["status"] == "done" for job_id in ids)
