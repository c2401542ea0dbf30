"""The race lab: N workers drain M jobs with one of five claim styles, and
we count how many jobs ran more than once and how long the drain took."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import psycopg

from .. import charts, queue
from ..databases import Database
from ..errors import BadInput
from ..guide import GuideFigure, figure
from ..statements import run

MODES = {
    "naive": "naive read-then-update (wrong)",
    "hold_for_update": "hold the transaction, FOR UPDATE",
    "hold_skip_locked": "hold the transaction, SKIP LOCKED",
    "lease_for_update": "lease, FOR UPDATE",
    "lease_skip_locked": "lease, SKIP LOCKED (the course's claim)",
}
LIMITS = {"workers": (1, 64), "jobs": (1, 200_000), "work_ms": (0, 1_000)}
KIND = "send_receipt"


@dataclass(frozen=True)
class Run:
    """One worker running one job, in seconds from the start of the race."""

    worker: int
    job_id: int
    start: float
    end: float


class Ideals:
    """The two yardsticks for a drain of `jobs` jobs of `work_ms` each by
    `workers` workers (the guide's figure #6 uses them)."""

    jobs: int
    workers: int
    work_ms: float

    @property
    def serial_ideal(self) -> float:
        """One worker at a time: every job's work back to back."""
        return self.jobs * self.work_ms / 1000

    @property
    def shared_ideal(self) -> float:
        """Perfect sharing: the work split evenly over the workers."""
        return self.serial_ideal / self.workers


@dataclass
class RaceResult(Ideals):
    mode: str
    workers: int
    jobs: int
    work_ms: float
    elapsed: float
    runs: list[Run]
    done: int
    server_version: str
    stopped: bool = False
    guess: int | None = None
    guide: GuideFigure = field(default_factory=lambda: figure(1))

    @property
    def claims_per_job(self) -> Counter:
        return Counter(r.job_id for r in self.runs)

    @property
    def run_more_than_once(self) -> int:
        """Jobs run by more than one claim: in the store, duplicate receipts."""
        return sum(1 for n in self.claims_per_job.values() if n > 1)

    @property
    def total_runs(self) -> int:
        return len(self.runs)

    def summary(self) -> str:
        lines = [
            f"{MODES[self.mode]}: {self.workers} workers, {self.jobs:,} jobs, {self.work_ms:g} ms each"
            + (" (stopped early)" if self.stopped else ""),
            f"  run more than once: {self.run_more_than_once:,} jobs"
            + (f"  (your guess: {self.guess:,})" if self.guess is not None else ""),
            f"  total runs: {self.total_runs:,}; done: {self.done:,}",
            f"  elapsed {self.elapsed:.2f} s; ideal {self.serial_ideal:.2f} s serial, "
            f"{self.shared_ideal:.2f} s shared",
            f"  {self.guide}" + ("" if self.mode == "naive" else " (the naive claim's figure)"),
            f"  this server: PostgreSQL {self.server_version}",
        ]
        return "\n".join(lines)

    def timeline_svg(self, width: int = 720) -> str:
        twice = {j for j, n in self.claims_per_job.items() if n > 1}
        bars = [(r.worker, r.start, r.end, r.job_id in twice) for r in self.runs]
        return charts.timeline(bars, self.workers, max(self.elapsed, 1e-3), width=width,
                               title=f"{MODES[self.mode]}: one lane per worker; red = run more than once")


def _check(name: str, value) -> None:
    low, high = LIMITS[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise BadInput(f"{name} must be a number from {low} to {high:,}, got {value!r}")


def check_inputs(*, workers, jobs, work_ms, mode) -> None:
    _check("workers", workers)
    _check("jobs", jobs)
    _check("work_ms", work_ms)
    if isinstance(workers, float) or isinstance(jobs, float):
        raise BadInput("workers and jobs must be whole numbers")
    if mode not in MODES:
        raise BadInput(f"mode must be one of {', '.join(MODES)}; got {mode!r}")


# --- one claim style each: claim one job, or None; then finish it ------------


def _claimer(mode: str, conn: psycopg.Connection) -> Callable[[], tuple[int, Callable[[], None]] | None]:
    if mode == "naive":

        def claim_one():
            row = run(conn, "teaching/naive_read").fetchone()
            if row is None:
                return None
            run(conn, "teaching/naive_mark", {"id": row[0]})
            return row[0], lambda: run(conn, "teaching/mark_done", {"id": row[0]})

        return claim_one

    if mode.startswith("hold_"):
        statement = f"teaching/{mode}"

        def claim_one():
            row = run(conn, statement).fetchone()  # opens the transaction that holds the lock
            if row is None:
                conn.rollback()
                return None

            def finish():
                run(conn, "teaching/mark_done", {"id": row[0]})
                conn.commit()

            return row[0], finish

        return claim_one

    statement = "claim" if mode == "lease_skip_locked" else "teaching/lease_for_update"

    def claim_one():
        jobs = queue.claim(conn, batch=1, lease=60, statement=statement)
        if not jobs:
            return None
        return jobs[0].id, lambda: queue.complete(conn, jobs[0])

    return claim_one


def prepare(db: Database, jobs: int) -> None:
    """Empty the jobs table and add `jobs` due jobs, ids 1..jobs."""
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")
        run(conn, "lab/seed_jobs", {"kind": KIND, "count": jobs})


def run_race(
    db: Database,
    *,
    workers: int = 8,
    jobs: int = 400,
    work_ms: float = 10,
    mode: str = "naive",
    guess: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    stop: threading.Event | None = None,
    claimer: Callable[[psycopg.Connection], Callable[[], tuple[int, Callable[[], None]] | None]] | None = None,
) -> RaceResult:
    """Drain `jobs` jobs with `workers` threads claiming in `mode`.

    `progress(runs_so_far, jobs)` is called from worker threads; `stop` ends
    the race early. A worker's error is raised here, after all have stopped.
    `claimer(conn)`, when given, replaces the built-in claim style: it returns
    a `claim_one()` giving `(job_id, finish)` or None when nothing is left
    (the "Your turn" checker races the learner's own claim this way).
    """
    check_inputs(workers=workers, jobs=jobs, work_ms=work_ms, mode=mode)
    stop = stop or threading.Event()
    prepare(db, jobs)
    conns = [db.connect(autocommit=not mode.startswith("hold_")) for _ in range(workers)]
    runs: list[Run] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    gate = threading.Barrier(workers + 1)
    step = max(1, jobs // 100)
    t0 = 0.0

    def work(index: int, conn: psycopg.Connection) -> None:
        claim_one = claimer(conn) if claimer else _claimer(mode, conn)
        gate.wait()
        try:
            while not stop.is_set():
                got = claim_one()
                if got is None:
                    return
                job_id, finish = got
                start = time.perf_counter() - t0
                if work_ms:
                    time.sleep(work_ms / 1000)
                finish()
                with lock:
                    runs.append(Run(index, job_id, start, time.perf_counter() - t0))
                    n = len(runs)
                if progress and (n % step == 0 or n == jobs):
                    progress(n, jobs)
        except BaseException as exc:  # raised again in the caller after join
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=work, args=(i, c), daemon=True) for i, c in enumerate(conns)]
    try:
        for t in threads:
            t.start()
        t0 = time.perf_counter()
        gate.wait()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
    finally:
        for c in conns:
            c.close()
    if errors:
        raise errors[0]
    with db.connection() as conn:
        counts = {s: n for s, n, _ in run(conn, "stats_status").fetchall()}
    return RaceResult(
        mode=mode, workers=workers, jobs=jobs, work_ms=work_ms, elapsed=elapsed,
        runs=sorted(runs, key=lambda r: r.start), done=counts.get("done", 0),
        server_version=db.server.version, stopped=stop.is_set() and counts.get("done", 0) < jobs,
        guess=guess,
    )
