"""The herd: N idle Workers against one Worker with N executors, each woken by
notifications: wake-ups and empty claims per job, and sessions held."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import psycopg

from ... import checks, queue
from ...databases import Database
from ...guide import GuideFigure, figure
from ...statements import run, run_one
from ...worker import Worker, running_idle
from ..results import Comparison, Progress, Result, finish, guess_text, tell
from .listening import KIND


@dataclass
class HerdSide:
    """One side of the herd lab: wake-ups and empty claims per job, sessions held."""

    label: str
    wakeups_per_job: float
    empty_claims_per_job: float
    sessions: int


@dataclass(kw_only=True)
class WakeupHerdResult(Result):
    """`workers` idle Workers, then one Worker with as many executors, each
    woken by `jobs` notifications in turn. The guess is of the wake-ups per
    job with separate Workers."""

    workers: int
    jobs: int
    separate: HerdSide
    pool: HerdSide
    guide: GuideFigure = field(default_factory=lambda: figure(13))

    def summary(self) -> str:
        lines = [f"{self.jobs} jobs, one at a time, to idle workers" + self.stopped_note]
        for side in (self.separate, self.pool):
            lines.append(
                f"  {side.label}: {side.wakeups_per_job:.1f} wake-ups and {side.empty_claims_per_job:.1f} "
                f"empty claims per job, {side.sessions} sessions held"
            )
        lines.append(f"  your guess for the separate Workers: {guess_text(self.guess, ' wake-ups per job')}")
        return "\n".join(lines + self.footer())

    def comparison(self) -> list[Comparison]:
        return [
            ("wake-ups per job, separate Workers", self.guess_cell, self.separate.wakeups_per_job, None),
            ("wake-ups per job, one Worker with executors", None, self.pool.wakeups_per_job, None),
        ]


def herd(
    db: Database,
    *,
    workers: int = 8,
    jobs: int = 10,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> WakeupHerdResult:
    """First `workers` separate idle Workers, then one Worker with `workers`
    executors (each with a 60 s poll, so only notifications wake them); enqueue
    `jobs` jobs one at a time, each with its NOTIFY, and count the wake-ups
    (notifications that ended a wait) and the claims that came back empty."""
    workers = checks.whole_number("workers", workers, 2, 32)
    jobs = checks.whole_number("jobs", jobs, 1, 100)
    stop = stop or threading.Event()
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")
    sides = []
    for n, (label, fleet_of) in enumerate(
        (
            (f"{workers} separate Workers", lambda h: [Worker(db, h, poll=60) for _ in range(workers)]),
            (f"1 Worker, {workers} executors", lambda h: [Worker(db, h, poll=60, concurrency=workers)]),
        )
    ):
        sides.append(_herd_side(db, label, fleet_of, jobs, stop))
        tell(progress, n + 1, 2)
    return finish(
        WakeupHerdResult,
        db,
        workers=workers,
        jobs=jobs,
        separate=sides[0],
        pool=sides[1],
        guess=guess,
        stopped=stop,
    )


def settled_sessions(conn: psycopg.Connection, within_s: float = 5.0) -> int:
    """Other sessions on this database once none is still ending: a closed client's
    backend can linger a moment in pg_stat_activity. Waits until the count is 0, or
    has held still for half a second, or `within_s` passed."""
    deadline = time.monotonic() + within_s
    last = run_one(conn, "lab/other_sessions")[0]
    while last and time.monotonic() < deadline:
        time.sleep(0.5)
        now = run_one(conn, "lab/other_sessions")[0]
        if now == last:
            break
        last = now
    return last


def _herd_side(
    db: Database,
    label: str,
    fleet_of: Callable[[dict[str, Callable[[queue.Job], None]]], list[Worker]],
    jobs: int,
    stop: threading.Event,
) -> HerdSide:
    ran = threading.Event()
    with db.connection() as conn:
        before = settled_sessions(conn)  # the last side's sessions may take a moment to end
    with running_idle(fleet_of({KIND: lambda job: ran.set()})) as fleet, db.connection() as conn:
        sessions = run_one(conn, "lab/other_sessions")[0] - before
        woken = sum(w.report.wakeups for w in fleet)
        empty = sum(w.report.empty_claims for w in fleet)
        sent = 0
        while sent < jobs and not stop.is_set():
            ran.clear()
            queue.enqueue(conn, KIND, {})
            sent += 1
            ran.wait(10)
            time.sleep(0.1)  # every woken worker's claim lands before the next job
        woken = sum(w.report.wakeups for w in fleet) - woken
        empty = sum(w.report.empty_claims for w in fleet) - empty
    return HerdSide(label, woken / max(sent, 1), empty / max(sent, 1), sessions)
