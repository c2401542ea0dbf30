"""Lesson 03, the claim with a lease, measured on the live server:

- batch_drain: claim many jobs in batches and check no batch is over its LIMIT
  and every job is claimed exactly once (guide #5);
- five_way: the same race with the five claim styles, several rounds (guide #6);
- zero_work: lease claims with and without SKIP LOCKED when claiming is the
  whole cost (guide #7);
- explain_claims: the plans of the locking read, the whole claim, and the
  IN (subquery) shape it replaces (guide #16).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from .. import charts, queue
from ..databases import Database
from ..errors import BadInput
from ..guide import GuideFigure, figure
from ..statements import explain, run
from . import race
from .race import MODES, RaceResult

Progress = Callable[[int, int], None]

LIMITS = {"jobs": (1, 200_000), "batch": (1, queue.MAX_BATCH), "rounds": (1, 10)}

# Short names for charts and tables; race.MODES keeps the long ones.
SHORT = {
    "naive": "naive",
    "hold_for_update": "hold + FOR UPDATE",
    "hold_skip_locked": "hold + SKIP LOCKED",
    "lease_for_update": "lease + FOR UPDATE",
    "lease_skip_locked": "lease + SKIP LOCKED",
}
LOCKING_MODES = tuple(m for m in MODES if m != "naive")
ZERO_WORK_MODES = ("lease_skip_locked", "lease_for_update")
# Two medians closer than this are within the noise of a shared 2-CPU machine.
TOO_CLOSE_TO_CALL = 0.05


def _check_whole(name: str, value) -> int:
    low, high = LIMITS[name]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadInput(f"{name} must be a whole number from {low:,} to {high:,}, got {value!r}")
    return value


def _status_counts(db: Database) -> dict[str, int]:
    with db.connection() as conn:
        return {s: n for s, n, _ in run(conn, "stats_status").fetchall()}


# --- batch claims (guide #5) --------------------------------------------------


@dataclass
class BatchDrainResult:
    jobs: int
    batch: int
    batch_sizes: list[int]
    claims_per_job: Counter
    elapsed: float
    status_counts: dict[str, int]
    server_version: str
    stopped: bool = False
    guess: int | None = None
    guide: GuideFigure = field(default_factory=lambda: figure(5))

    @property
    def batches(self) -> int:
        return len(self.batch_sizes)

    @property
    def largest_batch(self) -> int:
        return max(self.batch_sizes, default=0)

    @property
    def total_claimed(self) -> int:
        return sum(self.batch_sizes)

    @property
    def run_more_than_once(self) -> int:
        return sum(1 for n in self.claims_per_job.values() if n > 1)

    @property
    def every_job_once(self) -> bool:
        """Each seeded id (1..jobs) claimed by exactly one batch, and no other."""
        return (not self.stopped and set(self.claims_per_job) == set(range(1, self.jobs + 1))
                and self.run_more_than_once == 0)

    def summary(self) -> str:
        return "\n".join([
            f"batch drain: {self.jobs:,} jobs, batches of up to {self.batch:,}"
            + (" (stopped early)" if self.stopped else ""),
            f"  batches: {self.batches:,}" + (f"  (your guess: {self.guess:,})" if self.guess is not None else ""),
            f"  largest batch: {self.largest_batch:,} rows; total claimed: {self.total_claimed:,}",
            f"  every job claimed exactly once: {'yes' if self.every_job_once else 'NO'}",
            f"  jobs by status afterwards: {self.status_counts}",
            f"  elapsed {self.elapsed:.2f} s ({self.total_claimed / max(self.elapsed, 1e-9):,.0f} jobs/s claimed)",
            f"  {self.guide}",
            f"  this server: PostgreSQL {self.server_version}",
        ])


def batch_drain(
    db: Database,
    jobs: int = 100_000,
    batch: int = 100,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    *,
    guess: int | None = None,
) -> BatchDrainResult:
    """Seed `jobs` due jobs, then claim them with claim.sql `batch` at a time
    until a claim comes back empty. Nothing is completed: the point is the
    claim itself, so every job ends 'running' with attempts 1."""
    _check_whole("jobs", jobs)
    _check_whole("batch", batch)
    stop = stop or threading.Event()
    race.prepare(db, jobs)  # empty the table, then ids 1..jobs, all due
    sizes: list[int] = []
    claims: Counter = Counter()
    report_every = max(1, jobs // batch // 100)  # about a hundred progress steps
    with db.connection() as conn:
        t0 = time.perf_counter()
        while not stop.is_set():
            got = queue.claim(conn, batch=batch)
            if not got:
                break  # the empty claim that ends the drain is not a batch
            sizes.append(len(got))
            claims.update(job.id for job in got)
            if progress and len(sizes) % report_every == 0:
                progress(min(sum(sizes), jobs), jobs)
        elapsed = time.perf_counter() - t0
    if progress and not stop.is_set():
        progress(jobs, jobs)
    return BatchDrainResult(
        jobs=jobs, batch=batch, batch_sizes=sizes, claims_per_job=claims, elapsed=elapsed,
        status_counts=_status_counts(db), server_version=db.server.version,
        stopped=stop.is_set() and sum(sizes) < jobs, guess=guess,
    )


# --- races over several modes and rounds (guide #6 and #7) ---------------------


def _rounds_of_races(
    db: Database, plan: list[str], *, workers: int, jobs: int, work_ms: float,
    progress: Progress | None, stop: threading.Event,
) -> tuple[list[RaceResult], bool]:
    """Run one race per entry of `plan`, one after another, with one progress
    bar over all of them. Returns the finished races and whether it stopped."""
    finished: list[RaceResult] = []
    total = len(plan) * jobs
    for index, mode in enumerate(plan):
        if stop.is_set():
            return finished, True
        before = index * jobs

        def record(done: int, _jobs: int, before=before) -> None:
            # a naive race runs some jobs twice, so its count can pass `jobs`
            if progress:
                progress(before + min(done, jobs), total)

        result = race.run_race(db, workers=workers, jobs=jobs, work_ms=work_ms, mode=mode,
                               progress=record, stop=stop)
        if stop.is_set():
            return finished, True  # the race cut short is not a measurement
        finished.append(result)
        record(jobs, jobs)
    return finished, False


def _by_mode(races: list[RaceResult], modes, value) -> dict[str, list]:
    return {m: [value(r) for r in races if r.mode == m] for m in modes}


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass
class FiveWayResult(race.Ideals):
    workers: int
    jobs: int
    work_ms: float
    rounds: int
    races: list[RaceResult]
    server_version: str
    stopped: bool = False
    guess: int | None = None
    guide: GuideFigure = field(default_factory=lambda: figure(6))

    @property
    def elapsed(self) -> dict[str, list[float]]:
        """Seconds per finished race, by mode, in round order."""
        return _by_mode(self.races, MODES, lambda r: r.elapsed)

    @property
    def run_more_than_once(self) -> dict[str, list[int]]:
        """Jobs run by more than one claim, per finished race, by mode."""
        return _by_mode(self.races, MODES, lambda r: r.run_more_than_once)

    def median(self, mode: str) -> float | None:
        return _median(self.elapsed[mode])

    def jobs_in_flight(self, mode: str) -> float | None:
        """On average, how many jobs were being worked on at once: the time
        spent on jobs divided by the drain time (1 means one at a time)."""
        races = [r for r in self.races if r.mode == mode and r.elapsed > 0]
        if not races:
            return None
        return statistics.mean(sum(run.end - run.start for run in r.runs) / r.elapsed for r in races)

    def race(self, mode: str, round_number: int = 1) -> RaceResult:
        """One finished race, to look at its timeline."""
        return [r for r in self.races if r.mode == mode][round_number - 1]

    def summary(self) -> str:
        lines = [
            f"five ways: {self.workers} workers, {self.jobs:,} jobs, {self.work_ms:g} ms each, "
            f"{self.rounds} round(s)" + (" (stopped early)" if self.stopped else ""),
            f"  ideal {self.serial_ideal:.2f} s serial, {self.shared_ideal:.2f} s shared",
        ]
        for mode in MODES:
            times = ", ".join(f"{t:.2f}" for t in self.elapsed[mode]) or "–"
            twice = ", ".join(f"{n:,}" for n in self.run_more_than_once[mode]) or "–"
            flight = self.jobs_in_flight(mode)
            flight = f"; {flight:.1f} jobs in flight on average" if flight is not None else ""
            lines.append(f"  {SHORT[mode]:<20} {times} s; run more than once: {twice}{flight}")
        if self.guess is not None:
            lines.append(f"  your guess for hold + FOR UPDATE: {self.guess:,} s")
        lines += [f"  {self.guide}", f"  this server: PostgreSQL {self.server_version}"]
        return "\n".join(lines)

    def chart_svg(self, width: int = 720) -> str:
        rows = []
        for mode in MODES:
            if not self.elapsed[mode]:
                continue
            twice = max(self.run_more_than_once[mode])
            noted = f"{twice:,} jobs run more than once" if twice else "no job run twice"
            rows.append((f"{SHORT[mode]} ({noted})", self.median(mode), ""))
        lines = [(f"serial {self.serial_ideal:.1f} s", self.serial_ideal),
                 (f"shared {self.shared_ideal:.1f} s", self.shared_ideal)]
        return charts.bars(rows, lines=lines, width=width,
                           title=f"Drain time, median of {self.rounds} round(s); duplicates: most in any round; "
                                 "dashed: the ideals")


def five_way(
    db: Database,
    rounds: int = 3,
    workers: int = 8,
    jobs: int = 400,
    work_ms: float = 10,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    *,
    guess: int | None = None,
) -> FiveWayResult:
    """Race the five claim styles, `rounds` times each (guide #6). Each round
    runs the modes in the course's order; progress covers every race."""
    _check_whole("rounds", rounds)
    race.check_inputs(workers=workers, jobs=jobs, work_ms=work_ms, mode="naive")
    stop = stop or threading.Event()
    plan = [mode for _ in range(rounds) for mode in MODES]
    races, stopped = _rounds_of_races(db, plan, workers=workers, jobs=jobs, work_ms=work_ms,
                                      progress=progress, stop=stop)
    return FiveWayResult(workers=workers, jobs=jobs, work_ms=work_ms, rounds=rounds, races=races,
                         server_version=db.server.version, stopped=stopped, guess=guess)


@dataclass
class ZeroWorkResult:
    workers: int
    jobs: int
    rounds: int
    races: list[RaceResult]
    server_version: str
    stopped: bool = False
    guess: int | None = None
    guide: GuideFigure = field(default_factory=lambda: figure(7))

    @property
    def elapsed(self) -> dict[str, list[float]]:
        return _by_mode(self.races, ZERO_WORK_MODES, lambda r: r.elapsed)

    def median(self, mode: str) -> float | None:
        return _median(self.elapsed[mode])

    @property
    def every_job_once(self) -> bool:
        """In every finished race, each job ran exactly once and ended done."""
        return bool(self.races) and all(
            r.run_more_than_once == 0 and r.total_runs == self.jobs and r.done == self.jobs
            for r in self.races)

    @property
    def skip_locked_saving(self) -> float | None:
        """How much shorter SKIP LOCKED's median was, as a fraction of FOR
        UPDATE's (negative when SKIP LOCKED was slower)."""
        skip, wait = self.median("lease_skip_locked"), self.median("lease_for_update")
        if skip is None or wait is None:
            return None
        return (wait - skip) / wait

    def verdict(self) -> str:
        """What this run showed, said no more strongly than it showed it."""
        saving = self.skip_locked_saving
        if saving is None:
            return "not enough finished rounds to compare"
        if abs(saving) < TOO_CLOSE_TO_CALL:
            return (f"the medians differ by {abs(saving):.0%}: too close to call on this machine")
        faster = "faster" if saving > 0 else "slower"
        return f"SKIP LOCKED was {abs(saving):.0%} {faster} (medians) on this run"

    def summary(self) -> str:
        lines = [f"zero work: {self.workers} workers, {self.jobs:,} jobs, {self.rounds} round(s)"
                 + (" (stopped early)" if self.stopped else "")]
        for mode in ZERO_WORK_MODES:
            times = ", ".join(f"{t:.2f}" for t in self.elapsed[mode]) or "–"
            lines.append(f"  {SHORT[mode]:<20} {times} s")
        lines.append(f"  every job exactly once: {'yes' if self.every_job_once else 'NO'}")
        lines.append(f"  {self.verdict()}")
        if self.guess is not None:
            lines.append(f"  your guess for SKIP LOCKED: {self.guess:,} ms")
        lines += [f"  {self.guide}", f"  this server: PostgreSQL {self.server_version}"]
        return "\n".join(lines)

    def chart_svg(self, width: int = 720) -> str:
        rows = [(f"{SHORT[r.mode]}, round {n}", r.elapsed, "")
                for mode in ZERO_WORK_MODES
                for n, r in enumerate((r for r in self.races if r.mode == mode), start=1)]
        return charts.bars(rows, width=width,
                           title=f"Zero work: {self.jobs:,} jobs, {self.workers} workers, each round")


def zero_work(
    db: Database,
    jobs: int = 3000,
    workers: int = 8,
    rounds: int = 3,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    *,
    guess: int | None = None,
) -> ZeroWorkResult:
    """Lease claims with and without SKIP LOCKED and no work per job, so the
    claims are the whole cost (guide #7). The two modes swap order every
    round, so neither always runs first on a cold cache."""
    _check_whole("rounds", rounds)
    race.check_inputs(workers=workers, jobs=jobs, work_ms=0, mode="lease_skip_locked")
    stop = stop or threading.Event()
    plan = [mode for n in range(rounds) for mode in (ZERO_WORK_MODES if n % 2 == 0 else ZERO_WORK_MODES[::-1])]
    races, stopped = _rounds_of_races(db, plan, workers=workers, jobs=jobs, work_ms=0,
                                      progress=progress, stop=stop)
    return ZeroWorkResult(workers=workers, jobs=jobs, rounds=rounds, races=races,
                          server_version=db.server.version, stopped=stopped, guess=guess)


# --- plans (guide #16) -----------------------------------------------------------


@dataclass
class ClaimPlans:
    ready: int
    claimed: int
    locking_read: str
    whole_claim: str
    in_subquery: str
    server_version: str
    guide: GuideFigure = field(default_factory=lambda: figure(16))

    @property
    def uses_ready_index(self) -> bool:
        return "Index Scan using jobs_ready_idx on jobs" in self.locking_read

    @property
    def lockrows_above_index_scan(self) -> bool:
        plan = self.locking_read
        return "LockRows" in plan and self.uses_ready_index and plan.index("LockRows") < plan.index("jobs_ready_idx")

    @property
    def claim_locks_in_its_own_step(self) -> bool:
        """The WITH query is planned as its own step (CTE next), with the
        locking under it, and the UPDATE reads its rows via CTE Scan."""
        plan = self.whole_claim
        return ("CTE next" in plan and "CTE Scan on next" in plan
                and plan.index("CTE next") < plan.index("LockRows") < plan.index("CTE Scan on next"))


def _plan(conn, name: str, params=None) -> str:
    return "\n".join(row[0] for row in run(conn, name, params).fetchall())


def explain_claims(db: Database, ready: int = 50, claimed: int = 4950, batch: int = 100) -> ClaimPlans:
    """Seed ready + claimed jobs, claim `claimed` of them, refresh statistics
    (so the planner knows few rows are ready), then EXPLAIN three things: the
    locking read, the whole claim, and the IN (subquery) shape."""
    if isinstance(claimed, bool) or not isinstance(claimed, int) or claimed < 0:
        raise BadInput(f"claimed must be a whole number, zero or more; got {claimed!r}")
    _check_whole("jobs", ready)
    _check_whole("jobs", ready + claimed)
    _check_whole("batch", batch)
    race.prepare(db, ready + claimed)
    params = {"batch": batch, "lease": queue.DEFAULT_LEASE}
    with db.connection() as conn:
        left = claimed
        while left:
            got = queue.claim(conn, batch=min(left, queue.MAX_BATCH))
            if not got:
                break
            left -= len(got)
        run(conn, "lab/analyze_jobs")
        return ClaimPlans(
            ready=ready, claimed=claimed,
            locking_read=_plan(conn, "explain_claim"),
            whole_claim="\n".join(explain(conn, "claim", params)),
            in_subquery="\n".join(explain(conn, "teaching/claim_in_subquery", params)),
            server_version=db.server.version,
        )
