"""One producer with executors, a batch under one heartbeat: `pool_batch`,
a batch of long jobs claimed at once by one Worker with another beside it,
then a job fenced by hand while its handler runs; and `first_beats`, how
soon after each claim its job's first beat lands."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ... import checks, queue, seeding, tables
from ...databases import Database
from ...errors import PgqError
from ...guide import GuideFigure, figure
from ...statements import run
from ...worker import Worker
from ..results import Comparison, Progress, Result, finish, guess_text, tell
from .lab import KIND, LAB_PREFIX, LEASE_LIMITS, prepare


@dataclass(kw_only=True)
class PoolBatchResult(Result):
    """A batch of long jobs claimed at once by worker A (heartbeat on), with
    worker B looking for work beside it. The guess is of how many runs in all."""

    lease_s: float
    work_s: float
    runs: dict[int, list[str]]  # job id -> the workers that ran it, from the runs ledger
    beats: int
    leases_lost: int
    handler_saw_lost: bool  # the fenced handler's job.lost was set while it ran
    guide: GuideFigure = field(default_factory=lambda: figure(10))

    @property
    def total_runs(self) -> int:
        return sum(len(workers) for workers in self.runs.values())

    def summary(self) -> str:
        per_job = ", ".join(f"job {job}: {'+'.join(w) or 'never'}" for job, w in self.runs.items())
        return "\n".join(
            [
                f"a batch of {len(self.runs)} jobs of {self.work_s:g} s each, {self.lease_s:g} s lease, "
                "one heartbeat for the batch, worker B beside" + self.stopped_note,
                f"  runs in all: {self.total_runs} (your guess: {guess_text(self.guess)}); {per_job}",
                f"  heartbeat statements: {self.beats}; leases lost: {self.leases_lost}",
                "  a handler whose job was fenced mid-run saw job.lost: "
                + ("yes" if self.handler_saw_lost else "no"),
                *self.footer(),
            ]
        )

    def comparison(self) -> list[Comparison]:
        return [
            ("runs in all", self.guess_cell, self.total_runs, "each job once (at least once)"),
            ("handler saw job.lost", None, "yes" if self.handler_saw_lost else "no", None),
        ]


def pool_batch(
    db: Database,
    *,
    lease_s: float = 1.0,
    work_s: float = 0.8,
    batch: int = 3,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> PoolBatchResult:
    """Worker A claims `batch` jobs at once (each `work_s` long, under a
    `lease_s` lease, heartbeat on); once they are all running, worker B starts
    looking for work. Every run is written to a ledger on the server. Then one
    more job, fenced by hand while its handler runs: does the handler see it?"""
    lease_s = checks.seconds("lease_s", lease_s, *LEASE_LIMITS)
    work_s = checks.seconds("work_s", work_s, 0.1, lease_s)
    batch = checks.whole_number("batch", batch, 2, 5)
    stop = stop or threading.Event()
    with db.connection() as conn:
        seeding.reset_and_seed(conn, KIND, batch)
        run(conn, "lab/runs_create")
        run(conn, "lab/runs_clear")
    a = Worker(db, {KIND: _recording(db, "A", work_s)}, lease=lease_s, batch=batch, poll=0.1)
    b = Worker(db, {KIND: _recording(db, "B", work_s)}, lease=lease_s, poll=0.05)
    a_done = threading.Thread(target=a.run, kwargs={"until_idle": True}, daemon=True)
    a_done.start()
    with db.connection() as conn:
        while queue.status_counts(conn).get("running", 0) < batch and a_done.is_alive():
            time.sleep(0.01)
    b_thread = threading.Thread(target=b.run, daemon=True)
    b_thread.start()
    while a_done.is_alive() and not stop.is_set():
        a_done.join(0.1)
        tell(progress, 1 if a_done.is_alive() else 2, 3)
    b.stop()
    b_thread.join(10)
    a_done.join(10)
    with db.connection() as conn:
        runs = {job_id: list(workers) for job_id, _, workers in run(conn, "lab/runs_per_job")}
    saw_lost = _fenced_mid_run(db, lease_s)
    tell(progress, 3, 3)
    return finish(
        PoolBatchResult,
        db,
        lease_s=lease_s,
        work_s=work_s,
        runs=runs,
        beats=a.report.beats,
        leases_lost=a.report.leases_lost,
        handler_saw_lost=saw_lost,
        guess=guess,
        stopped=stop,
    )


@dataclass(kw_only=True)
class FirstBeatsResult(Result):
    """One Worker (heartbeat on) claims jobs that come due at staggered
    moments: how long after each claim its job's first beat landed, read from
    the lease deadlines the claim and the beat wrote (the server's clock)."""

    lease_s: float
    first_beat_s: dict[int, float]  # job id -> seconds from its claim to its first beat
    guide: GuideFigure = field(default_factory=lambda: figure(10))

    @property
    def beat_every_s(self) -> float:
        return self.lease_s / 4

    def summary(self) -> str:
        gaps = ", ".join(f"{gap:.2f}" for gap in self.first_beat_s.values())
        return "\n".join(
            [
                f"{tables.count(len(self.first_beat_s), 'job')} claimed at staggered moments by one Worker, "
                f"{self.lease_s:g} s lease, a beat every {self.beat_every_s:g} s" + self.stopped_note,
                f"  each job's first beat came this long after its claim (s): {gaps}",
                *self.footer(),
            ]
        )


def first_beats(
    db: Database, *, lease_s: float = 1.0, jobs: int = 5, spacing_s: float = 0.31, work_s: float = 0.6
) -> FirstBeatsResult:
    """Enqueue `jobs` jobs due `spacing_s` apart, each `work_s` long; one
    Worker with enough executors claims each as it comes due. Each claim
    returns the lease deadline it wrote; a monitor watches the running jobs'
    deadlines, and the first one that differs is the job's first beat. The
    gap between the two deadlines is the time from the claim to the beat, on
    the server's clock (both are clock_timestamp() plus the same lease)."""
    lease_s = checks.seconds("lease_s", lease_s, *LEASE_LIMITS)
    jobs = checks.whole_number("jobs", jobs, 2, 8)
    spacing_s = checks.seconds("spacing_s", spacing_s, 0.05, 2.0)
    work_s = checks.seconds("work_s", work_s, lease_s / 2, lease_s * 2)
    prepare(db)
    with db.connection() as conn:
        seeding.reset_jobs(conn)
        ids = [
            queue.enqueue(conn, KIND, {"n": n}, run_at=timedelta(seconds=0.2 + n * spacing_s), notify=False)
            for n in range(jobs)
        ]
    claimed_until: dict[int, datetime] = {}  # job id -> the deadline its claim wrote
    beat_until: dict[int, datetime] = {}  # job id -> the first deadline a beat wrote

    def on_event(event: str, job: queue.Job | None) -> None:
        if event == "claimed" and job is not None and job.leased_until is not None:
            claimed_until.setdefault(job.id, job.leased_until)

    worker = Worker(
        db,
        {KIND: lambda job: time.sleep(work_s)},
        concurrency=jobs,
        lease=lease_s,
        poll=0.02,
        on_event=on_event,
    )
    thread = threading.Thread(target=worker.run, daemon=True)
    limit = time.monotonic() + 0.2 + jobs * spacing_s + work_s + 10
    thread.start()
    try:
        with db.connection(application_name=f"{LAB_PREFIX} monitor") as monitor:
            while len(beat_until) < len(ids):
                if time.monotonic() > limit:
                    raise PgqError("not every job got a heartbeat in time")
                for job_id, leased_until in run(monitor, "lab/running_leases").fetchall():
                    claim = claimed_until.get(job_id)
                    if claim is not None and leased_until not in (None, claim):
                        beat_until.setdefault(job_id, leased_until)
                time.sleep(0.005)
    finally:
        worker.stop()
        thread.join(work_s + 10)
    return finish(
        FirstBeatsResult,
        db,
        lease_s=lease_s,
        first_beat_s={job_id: (beat_until[job_id] - claimed_until[job_id]).total_seconds() for job_id in ids},
    )


def _recording(db: Database, worker: str, work_s: float) -> Callable[[queue.Job], None]:
    """A handler whose first act writes its run to the ledger, then works."""

    def handle(job: queue.Job) -> None:
        with db.connection() as conn:
            run(conn, "lab/run_record", {"job_id": job.id, "fence_token": job.fence_token, "worker": worker})
        time.sleep(work_s)

    return handle


def _fenced_mid_run(db: Database, lease_s: float) -> bool:
    """One job; once its handler runs, fence it by hand (a new token, as a reaper
    and another claim would). True if the handler's job.lost was set within 5 s."""
    started, seen = threading.Event(), threading.Event()

    def handle(job: queue.Job) -> None:
        started.set()
        if job.lost.wait(5):
            seen.set()

    with db.connection() as conn:
        [job_id] = queue.enqueue_many(conn, KIND, [{}])
        worker = Worker(db, {KIND: handle}, lease=lease_s, poll=0.1)
        thread = threading.Thread(target=worker.run, kwargs={"until_idle": True}, daemon=True)
        thread.start()
        if started.wait(10):
            run(conn, "lab/fence_job", {"id": job_id, "lease": "1 minute"})
        thread.join(15)
    return seen.is_set()
