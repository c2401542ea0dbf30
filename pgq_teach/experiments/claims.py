"""Lesson 03, the claim with a lease, measured on the live server:

- batch_drain: several workers at once claim many jobs in batches; no batch
  is over its LIMIT and no job is claimed by two batches (guide #5);
- five_way: the same race with the guide's five claim styles, several rounds (guide #6);
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
from contextlib import ExitStack
from dataclasses import dataclass, field

from .. import charts, checks, queue, tables
from ..databases import Database
from ..guide import GuideFigure, figure
from ..statements import explain, run
from . import race
from .race import RaceResult
from .results import Comparison, Progress, Result, finish, guess_text, note

LIMITS = {"jobs": (1, 200_000), "batch": (1, queue.MAX_BATCH), "rounds": (1, 10), "workers": (1, 64)}

# Short names for charts and tables; race.STYLES keeps the long ones.
SHORT = {
    "naive": "naive",
    "guarded_update": "guarded update",
    "hold_for_update": "hold + FOR UPDATE",
    "hold_skip_locked": "hold + SKIP LOCKED",
    "lease_for_update": "lease + FOR UPDATE",
    "lease_skip_locked": "lease + SKIP LOCKED",
}
# the guide's five claim styles (#6)
FIVE_WAYS = ("naive", "hold_for_update", "hold_skip_locked", "lease_for_update", "lease_skip_locked")
LOCKING_STYLES = tuple(m for m in FIVE_WAYS if m != "naive")
ZERO_WORK_STYLES = ("lease_skip_locked", "lease_for_update")
# Two medians closer than this are within the noise of a shared 2-CPU machine.
TOO_CLOSE_TO_CALL = 0.05


# --- batch claims (guide #5) --------------------------------------------------


@dataclass(kw_only=True)
class BatchDrainResult(Result):
    jobs: int
    batch: int
    workers: int
    batch_sizes: list[int]
    claims_per_job: Counter
    elapsed_s: float
    status_counts: dict[str, int]
    # jobs by their attempts, as the server counts them (lab/attempts_spent.sql): each claim adds
    # one, so a job two batches took shows 2 even if the client's own record missed it
    attempts_spent: dict[int, int] = field(default_factory=dict)
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
        """Each seeded id (1..jobs) claimed by exactly one batch, and no other: by the batches
        the sessions got back, and by the server's count of one attempt on every job."""
        return (
            not self.stopped
            and set(self.claims_per_job) == set(range(1, self.jobs + 1))
            and self.run_more_than_once == 0
            and self.attempts_spent == {1: self.jobs}
        )

    def comparison(self) -> list[Comparison]:
        g = self.guide.values
        return [
            ("batches", self.guess_cell, self.batches, g["batches"]),
            ("largest batch, rows", None, self.largest_batch, f"none over {g['batch']}"),
            ("jobs claimed", None, self.total_claimed, g["jobs"]),
            ("jobs claimed by two batches", None, self.run_more_than_once, None),
            ("seconds to claim them all", None, self.elapsed_s, None),
        ]

    def report(self) -> list[str]:
        return [
            note(
                f"batch drain: {self.jobs:,} jobs, batches of up to {self.batch:,}, "
                f"{self.workers} workers at once" + self.stopped_note
            ),
            f"  batches: {self.batches:,}  (your guess: {guess_text(self.guess)})",
            f"  largest batch: {self.largest_batch:,} rows; total claimed: {self.total_claimed:,}",
            note(f"  every job claimed by one batch only: {'yes' if self.every_job_once else 'NO'}"),
            f"  jobs by status afterwards: {self.status_counts}",
            note(
                f"  elapsed {self.elapsed_s:.2f} s "
                f"({self.total_claimed / max(self.elapsed_s, 1e-9):,.0f} jobs/s claimed)"
            ),
            *self.footer(),
        ]


def batch_drain(
    db: Database,
    *,
    jobs: int = 100_000,
    batch: int = 100,
    workers: int = 4,
    guess: int | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> BatchDrainResult:
    """Seed `jobs` due jobs, then let `workers` sessions at once claim them with
    claim.sql, `batch` at a time, each until a claim comes back empty. Nothing
    is completed: the point is the claim itself, so every job ends 'running'."""
    checks.whole_number("jobs", jobs, *LIMITS["jobs"])
    checks.whole_number("batch", batch, *LIMITS["batch"])
    checks.whole_number("workers", workers, *LIMITS["workers"])
    stop = stop or threading.Event()
    race.prepare(db, jobs)  # empty the table, then ids 1..jobs, all due
    sizes: list[int] = []
    claims: Counter = Counter()
    errors: list[BaseException] = []
    lock = threading.Lock()
    report_every = max(1, jobs // batch // 100)  # about a hundred progress steps

    def work(conn) -> None:
        try:
            while not stop.is_set():
                got = queue.claim(conn, batch=batch)
                if not got:
                    return  # the empty claim that ends the drain is not a batch
                with lock:
                    sizes.append(len(got))
                    claims.update(job.id for job in got)
                    count, claimed = len(sizes), sum(sizes)
                if progress and count % report_every == 0:
                    progress(min(claimed, jobs), jobs)
        except BaseException as exc:  # raised again below, after every worker stopped
            errors.append(exc)
            stop.set()

    with ExitStack() as stack:
        conns = []
        for _ in range(workers):
            conn = db.connect()
            stack.callback(conn.close)
            conns.append(conn)
        threads = [threading.Thread(target=work, args=(c,), daemon=True) for c in conns]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    if progress and not stop.is_set():
        progress(jobs, jobs)
    with db.connection() as conn:
        counts = queue.status_counts(conn)
        attempts = dict(run(conn, "lab/attempts_spent", {"kind": race.KIND}).fetchall())
    return finish(
        BatchDrainResult,
        db,
        jobs=jobs,
        batch=batch,
        workers=workers,
        batch_sizes=sizes,
        claims_per_job=claims,
        elapsed_s=elapsed,
        status_counts=counts,
        attempts_spent=attempts,
        stopped=stop.is_set() and sum(sizes) < jobs,
        guess=guess,
    )


# --- races over several styles and rounds (guide #6 and #7) ---------------------


def _rounds_of_races(
    db: Database,
    plan: list[str],
    *,
    workers: int,
    jobs: int,
    work_ms: float,
    progress: Progress | None,
    stop: threading.Event,
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

        result = race.run_race(
            db, workers=workers, jobs=jobs, work_ms=work_ms, mode=mode, progress=record, stop=stop
        )
        if stop.is_set():
            return finished, True  # the race cut short is not a measurement
        finished.append(result)
        record(jobs, jobs)
    return finished, False


def _by_style(races: list[RaceResult], styles, value) -> dict[str, list]:
    return {m: [value(r) for r in races if r.mode == m] for m in styles}


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass(kw_only=True)
class FiveWayResult(Result, race.Ideals):
    workers: int
    jobs: int
    work_ms: float
    rounds: int
    races: list[RaceResult]
    guide: GuideFigure = field(default_factory=lambda: figure(6))

    @property
    def elapsed_s(self) -> dict[str, list[float]]:
        """Seconds per finished race, by style, in round order."""
        return _by_style(self.races, FIVE_WAYS, lambda r: r.elapsed_s)

    @property
    def run_more_than_once(self) -> dict[str, list[int]]:
        """Jobs run by more than one claim, per finished race, by style."""
        return _by_style(self.races, FIVE_WAYS, lambda r: r.run_more_than_once)

    def median(self, mode: str) -> float | None:
        return _median(self.elapsed_s[mode])

    def jobs_in_flight(self, mode: str) -> float | None:
        """On average, how many jobs were being worked on at once: the time
        spent on jobs divided by the drain time (1 means one at a time)."""
        races = [r for r in self.races if r.mode == mode and r.elapsed_s > 0]
        if not races:
            return None
        return statistics.mean(sum(run.end - run.start for run in r.runs) / r.elapsed_s for r in races)

    @property
    def most_at_once(self) -> dict[str, list[int]]:
        """The most jobs in progress at one moment, per finished race, by style: 1 means the
        jobs went one at a time (an order of events on one clock, not a duration)."""
        return _by_style(self.races, FIVE_WAYS, lambda r: race.most_at_once(r.runs))

    def race(self, mode: str, round_number: int = 1) -> RaceResult:
        """One finished race, to look at its timeline."""
        return [r for r in self.races if r.mode == mode][round_number - 1]

    def comparison(self) -> list[Comparison]:
        """The guess is for hold + FOR UPDATE, in seconds."""
        g = self.guide.values
        hold = self.median("hold_for_update")
        rows: list[Comparison] = [
            (
                "hold + FOR UPDATE, s (median)",
                self.guess_cell,
                hold,
                f"slower than the {g['serial_s']:.1f} s serial ideal",
            )
        ]
        rows += [
            (f"{SHORT[m]}, s (median)", None, self.median(m), None)
            for m in FIVE_WAYS
            if m != "hold_for_update"
        ]
        naive = max(self.run_more_than_once["naive"], default=None)
        race = figure(1).values  # the naive race's counts on PostgreSQL 16 and 18
        low, high = min(race["pg16"] + race["pg18"]), max(race["pg16"] + race["pg18"])
        rows += [
            ("serial ideal, s", None, self.serial_ideal_s, g["serial_s"]),
            ("shared ideal, s", None, self.shared_ideal_s, g["shared_s"]),
            ("naive: jobs run more than once (max)", None, naive, f"{low} to {high} (guide #1)"),
        ]
        return rows

    def report(self) -> list[str]:
        lines = [
            note(
                f"five ways: {self.workers} workers, {self.jobs:,} jobs, {self.work_ms:g} ms each, "
                f"{tables.count(self.rounds, 'round')}" + self.stopped_note
            ),
            f"  ideal {self.serial_ideal_s:.2f} s serial, {self.shared_ideal_s:.2f} s shared",
        ]
        for mode in FIVE_WAYS:
            times = ", ".join(f"{t:.2f}" for t in self.elapsed_s[mode]) or "–"
            twice = ", ".join(f"{n:,}" for n in self.run_more_than_once[mode]) or "–"
            flight = self.jobs_in_flight(mode)
            in_flight = f"; {flight:.1f} jobs in flight on average" if flight is not None else ""
            # each round's time and the jobs in flight: the table has the medians only
            lines.append(note(f"  {SHORT[mode]:<20} {times} s; run more than once: {twice}{in_flight}"))
        lines.append(note(f"  your guess for hold + FOR UPDATE: {guess_text(self.guess, ' s')}"))
        return lines + self.footer()

    def chart(self) -> charts.Chart:
        """Each claim's median drain time, beside the serial and shared ideals."""
        rows = []
        for mode in FIVE_WAYS:
            if not self.elapsed_s[mode]:
                continue
            twice = max(self.run_more_than_once[mode])
            noted = f"{twice:,} jobs run more than once" if twice else "no job run twice"
            rows.append({"claim": f"{SHORT[mode]} ({noted})", "drain time": self.median(mode)})
        return charts.bars(
            rows,
            label="claim",
            value="drain time",
            fmt=",.2f",
            heading=f"Drain time, median of {tables.count(self.rounds, 'round')}; "
            "duplicates: most in any round",
            value_axis=charts.axis("drain time", "s", ",.1~f"),
            refs=[
                charts.Reference(
                    f"serial ideal {self.serial_ideal_s:.1f} s", self.serial_ideal_s, "the ideal times"
                ),
                charts.Reference(
                    f"shared ideal {self.shared_ideal_s:.1f} s", self.shared_ideal_s, "the ideal times"
                ),
            ],
        )


def five_way(
    db: Database,
    *,
    rounds: int = 3,
    workers: int = 8,
    jobs: int = 400,
    work_ms: float = 10,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> FiveWayResult:
    """Race the guide's five claim styles, `rounds` times each (guide #6). Each
    round runs the styles in the course's order; progress covers every race."""
    checks.whole_number("rounds", rounds, *LIMITS["rounds"])
    race.check_inputs(workers=workers, jobs=jobs, work_ms=work_ms, mode="naive")
    stop = stop or threading.Event()
    plan = [mode for _ in range(rounds) for mode in FIVE_WAYS]
    races, stopped = _rounds_of_races(
        db, plan, workers=workers, jobs=jobs, work_ms=work_ms, progress=progress, stop=stop
    )
    return finish(
        FiveWayResult,
        db,
        workers=workers,
        jobs=jobs,
        work_ms=work_ms,
        rounds=rounds,
        races=races,
        stopped=stopped,
        guess=guess,
    )


@dataclass(kw_only=True)
class ZeroWorkResult(Result):
    workers: int
    jobs: int
    rounds: int
    races: list[RaceResult]
    guide: GuideFigure = field(default_factory=lambda: figure(7))

    @property
    def elapsed_s(self) -> dict[str, list[float]]:
        return _by_style(self.races, ZERO_WORK_STYLES, lambda r: r.elapsed_s)

    def median(self, mode: str) -> float | None:
        return _median(self.elapsed_s[mode])

    @property
    def every_job_once(self) -> bool:
        """In every finished race, each job ran once and ended done."""
        return bool(self.races) and all(
            r.run_more_than_once == 0 and r.total_runs == self.jobs and r.done == self.jobs
            for r in self.races
        )

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
            return f"the medians differ by {abs(saving):.0%}: too close to call on this machine"
        faster = "faster" if saving > 0 else "slower"
        return f"SKIP LOCKED was {abs(saving):.0%} {faster} (medians) on this run"

    def comparison(self) -> list[Comparison]:
        """The guess is for SKIP LOCKED, in milliseconds."""
        low, high = self.guide.values["skip_locked_s"]
        wait_low, wait_high = self.guide.values["for_update_s"]

        def ms(seconds):
            return None if seconds is None else round(seconds * 1000)

        return [
            (
                "lease + SKIP LOCKED, ms (median)",
                self.guess_cell,
                ms(self.median("lease_skip_locked")),
                f"{low * 1000:,.0f} to {high * 1000:,.0f}",
            ),
            (
                "lease + FOR UPDATE, ms (median)",
                None,
                ms(self.median("lease_for_update")),
                f"{wait_low * 1000:,.0f} to {wait_high * 1000:,.0f}",
            ),
            ("every job run once", None, "yes" if self.every_job_once else "NO", None),
        ]

    def report(self) -> list[str]:
        lines: list[str] = [
            note(
                f"zero work: {self.workers} workers, {self.jobs:,} jobs, "
                f"{tables.count(self.rounds, 'round')}" + self.stopped_note
            )
        ]
        for mode in ZERO_WORK_STYLES:  # in ms, as the guess and the chart are: one unit for the lab
            times = ", ".join(f"{t * 1000:,.0f}" for t in self.elapsed_s[mode]) or "–"
            lines.append(note(f"  {SHORT[mode]:<20} {times} ms"))  # each round: the table has medians
        lines.append(f"  every job run once: {'yes' if self.every_job_once else 'NO'}")
        lines.append(f"  {self.verdict()}")  # the view shows the verdict apart (claims_lab)
        lines.append(note(f"  your guess for SKIP LOCKED: {guess_text(self.guess, ' ms')}"))
        return lines + self.footer()

    def chart(self) -> charts.Chart:
        """Each round's drain time, with and without SKIP LOCKED, in ms as the lab's guess is."""
        rows = [
            {"round": f"{SHORT[r.mode]}, round {n}", "drain time": r.elapsed_s * 1000, "claim": SHORT[r.mode]}
            for mode in ZERO_WORK_STYLES
            for n, r in enumerate((r for r in self.races if r.mode == mode), start=1)
        ]
        return charts.bars(
            rows,
            label="round",
            value="drain time",
            colour="claim",
            fmt=",.0f",
            heading=f"Zero work: {self.jobs:,} jobs, {self.workers} workers, each round",
            value_axis=charts.axis("drain time", "ms", ",.0f"),
        )


def zero_work(
    db: Database,
    *,
    jobs: int = 3000,
    workers: int = 8,
    rounds: int = 3,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> ZeroWorkResult:
    """Lease claims with and without SKIP LOCKED and no work per job, so the
    claims are the whole cost (guide #7). The two styles swap order every
    round, so neither always runs first on a cold cache."""
    checks.whole_number("rounds", rounds, *LIMITS["rounds"])
    race.check_inputs(workers=workers, jobs=jobs, work_ms=0, mode="lease_skip_locked")
    stop = stop or threading.Event()
    plan = [
        mode for n in range(rounds) for mode in (ZERO_WORK_STYLES if n % 2 == 0 else ZERO_WORK_STYLES[::-1])
    ]
    races, stopped = _rounds_of_races(
        db, plan, workers=workers, jobs=jobs, work_ms=0, progress=progress, stop=stop
    )
    return finish(
        ZeroWorkResult,
        db,
        workers=workers,
        jobs=jobs,
        rounds=rounds,
        races=races,
        stopped=stopped,
        guess=guess,
    )


# --- plans (guide #16) -----------------------------------------------------------


@dataclass(kw_only=True)
class ClaimPlans(Result):
    ready: int
    claimed: int
    locking_read: str
    whole_claim: str
    in_subquery: str
    guide: GuideFigure = field(default_factory=lambda: figure(16))

    @property
    def uses_ready_index(self) -> bool:
        return "Index Scan using jobs_ready_idx on jobs" in self.locking_read

    @property
    def lockrows_above_index_scan(self) -> bool:
        plan = self.locking_read
        return (
            "LockRows" in plan
            and self.uses_ready_index
            and plan.index("LockRows") < plan.index("jobs_ready_idx")
        )

    @property
    def claim_locks_in_its_own_step(self) -> bool:
        """The WITH query is planned as its own step (CTE next), with the
        locking under it, and the UPDATE reads its rows via CTE Scan."""
        plan = self.whole_claim
        return (
            "CTE next" in plan
            and "CTE Scan on next" in plan
            and plan.index("CTE next") < plan.index("LockRows") < plan.index("CTE Scan on next")
        )


def _plan(conn, name: str, params=None) -> str:
    return "\n".join(row[0] for row in run(conn, name, params).fetchall())


def explain_claims(db: Database, ready: int = 50, claimed: int = 4950, batch: int = 100) -> ClaimPlans:
    """Seed ready + claimed jobs, claim `claimed` of them, refresh statistics
    (so the planner knows few rows are ready), then EXPLAIN three things: the
    locking read, the whole claim, and the IN (subquery) shape."""
    checks.whole_number("claimed", claimed, 0)
    checks.whole_number("ready", ready, *LIMITS["jobs"])
    checks.whole_number("ready + claimed", ready + claimed, *LIMITS["jobs"])
    checks.whole_number("batch", batch, *LIMITS["batch"])
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
        return finish(
            ClaimPlans,
            db,
            ready=ready,
            claimed=claimed,
            locking_read=_plan(conn, "explain_claim"),
            whole_claim="\n".join(explain(conn, "claim", params)),
            in_subquery="\n".join(explain(conn, "teaching/claim_in_subquery", params)),
        )
