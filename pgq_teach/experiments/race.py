"""The race lab: N workers drain M jobs with one of six claim styles (or the
learner's own claim), and we count how many jobs ran more than once, how many
claims were wasted, and how long the drain took."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import psycopg

from .. import charts, checks, queue, seeding, tables
from ..databases import Database
from ..errors import BadInput
from ..guide import GuideFigure, figure
from ..statements import records, run
from .results import Comparison, Result, finish, guess_text, note

# The claim styles, in the course's order: the wrong one, the guarded
# (optimistic) repair of it, then the four locking claims of guide #6.
STYLES = {
    "naive": "naive read-then-update (wrong)",
    "guarded_update": "guarded update (optimistic)",
    "hold_for_update": "hold the transaction, FOR UPDATE",
    "hold_skip_locked": "hold the transaction, SKIP LOCKED",
    "lease_for_update": "lease, FOR UPDATE",
    "lease_skip_locked": "lease, SKIP LOCKED (the course's claim)",
}
CUSTOM = "custom"  # the style of a race run with claimer=
LIMITS = {"workers": (1, 64), "jobs": (1, 200_000), "work_ms": (0, 1_000)}
KIND = "send_receipt"
LEASE_S = 60  # long enough that no lease ends during a race

# claim_one() returns (job_id, finish) or None when no job is left; a claimer
# builds one claim_one per worker from that worker's connection.
ClaimOne = Callable[[], "tuple[int, Callable[[], object]] | None"]
Claimer = Callable[[psycopg.Connection], ClaimOne]


def style_name(style: str) -> str:
    return STYLES.get(style, "your own claim")


@dataclass(frozen=True)
class RaceRun:
    """One worker running one job, in seconds from the start of the race. It starts when the
    claim answers. It ends with the work, before the job is let go (a commit, or a completion).
    So a job handed on under a lock ends before the next one starts."""

    worker: int
    job_id: int
    start: float
    end: float


def most_at_once(runs: list[RaceRun]) -> int:
    """The most runs in progress at one moment. A run that ends as another starts does not
    overlap it: ends are counted before starts at the same instant."""
    events = sorted([(r.start, 1) for r in runs] + [(r.end, -1) for r in runs])
    most = now = 0
    for _, change in events:
        now += change
        most = max(most, now)
    return most


class Ideals:
    """The two yardsticks for a drain of `jobs` jobs of `work_ms` each by
    `workers` workers (the guide's figure #6 uses them)."""

    jobs: int
    workers: int
    work_ms: float

    @property
    def serial_ideal_s(self) -> float:
        """One worker at a time: every job's work back to back."""
        return self.jobs * self.work_ms / 1000

    @property
    def shared_ideal_s(self) -> float:
        """Perfect sharing: the work split evenly over the workers."""
        return self.serial_ideal_s / self.workers


def guide_rows() -> dict[int, str]:
    """The guide's count of jobs run more than once (#1), by PostgreSQL major version."""
    values = figure(1).values
    pg16, pg18 = values["pg16"], values["pg18"]
    return {
        16: f"{min(pg16)}–{max(pg16)} (three runs: {', '.join(str(n) for n in pg16)})",
        18: f"{min(pg18)}–{max(pg18)}",
    }


def guide_version_for(major: int) -> int:
    """Which of the guide's versions to compare with: this server's major
    version when the guide measured it, else the nearest (ties go newer)."""
    return min(sorted(guide_rows()), key=lambda v: (abs(v - major), -v))


@dataclass(kw_only=True)
class RaceResult(Result, Ideals):
    mode: str
    workers: int
    jobs: int
    work_ms: float
    elapsed_s: float
    runs: list[RaceRun]
    done: int
    wasted_claims: int = 0  # claims that matched 0 rows (guarded update) and had to read again
    guide: GuideFigure = field(default_factory=lambda: figure(1))

    @property
    def claims_per_job(self) -> Counter:
        return Counter(r.job_id for r in self.runs)

    @property
    def run_more_than_once(self) -> int:
        """Jobs run by more than one claim: in the store, duplicate receipts."""
        return sum(1 for n in self.claims_per_job.values() if n > 1)

    @property
    def extra_runs(self) -> int:
        """Runs beyond the first of each job: the work done twice (or more)."""
        return sum(n - 1 for n in self.claims_per_job.values())

    @property
    def total_runs(self) -> int:
        return len(self.runs)

    @property
    def at_guide_settings(self) -> bool:
        values = self.guide.values
        return (self.mode, self.workers, self.jobs, self.work_ms) == (
            "naive",
            values["workers"],
            values["jobs"],
            values["work_ms"],
        )

    @property
    def compared_version(self) -> int:
        return guide_version_for(self.server_major)

    def guide_figure_text(self) -> str:
        """What the guide's column says for this run."""
        if self.mode != "naive":
            return "none: this claim never hands one job to two workers"
        text = f"{guide_rows()[self.compared_version]} on PostgreSQL {self.compared_version}"
        if not self.at_guide_settings:
            text += " (measured with 8 workers, 400 jobs, 10 ms; yours differ)"
        return text

    def comparison(self) -> list[Comparison]:
        return [
            ("jobs run more than once", self.guess_cell, self.run_more_than_once, self.guide_figure_text()),
            ("wasted claims (matched 0 rows)", None, self.wasted_claims, None),
            ("total runs", None, self.total_runs, None),
            ("jobs done", None, self.done, None),
            ("elapsed, s", None, self.elapsed_s, None),
        ]

    def report(self) -> list[str]:
        lines = [
            note(
                f"{style_name(self.mode)}: {tables.count(self.workers, 'worker')}, "
                f"{tables.count(self.jobs, 'job')}, {self.work_ms:g} ms each" + self.stopped_note
            ),
            f"  run more than once: {tables.count(self.run_more_than_once, 'job')}"
            f"  (your guess: {guess_text(self.guess)})",
            f"  total runs: {self.total_runs:,}; done: {self.done:,}; wasted claims: {self.wasted_claims:,}",
            note(
                f"  elapsed {self.elapsed_s:.2f} s; ideal {self.serial_ideal_s:.2f} s serial, "
                f"{self.shared_ideal_s:.2f} s shared"
            ),
        ]
        footer = self.footer()
        if self.mode != "naive":
            footer[0] = note(footer[0] + " (the naive claim's figure)")
        return lines + footer

    def timeline(self) -> charts.Chart:
        """Every run in its worker's lane, red where the job ran more than once;
        runs too thin to see are merged into blocks (charts.lane_blocks)."""
        twice = {j for j, n in self.claims_per_job.items() if n > 1}
        kinds = {"a job run once": charts.BLUE, "a job run more than once": charts.RED}
        by_lane: dict[int, list[tuple[float, float, bool]]] = {}
        for r in self.runs:
            by_lane.setdefault(r.worker, []).append((r.start, r.end, r.job_id in twice))
        min_s = max(self.elapsed_s, 1e-3) * 3 / charts.WIDTH  # 3 px
        rows = [
            {"lane": f"worker {lane + 1}", "start": start, "end": end, "kind": list(kinds)[hot]}
            for lane, spans in sorted(by_lane.items())
            for start, end, hot in charts.lane_blocks(spans, min_s)
        ]
        return charts.timeline(
            rows,
            heading=f"{style_name(self.mode)}: one lane per worker, time left to right",
            kinds=kinds,
            lanes=[f"worker {n}" for n in range(1, self.workers + 1)],
            time_axis=charts.axis("time since the start", "s", ",.2~f"),
            legend_below=True,
        )


def check_inputs(*, workers: Any, jobs: Any, work_ms: Any, mode: Any) -> None:
    """Every input of a race, checked before any SQL runs."""
    checks.whole_number("workers", workers, *LIMITS["workers"])
    checks.whole_number("jobs", jobs, *LIMITS["jobs"])
    checks.number("work_ms", work_ms, *LIMITS["work_ms"], unit="milliseconds")
    checks.one_of("mode", mode, STYLES)


# --- one claim style each: claim one job, or None; then finish it ------------


def lease_claim(conn: psycopg.Connection, statement: str, batch: int = 1) -> list[queue.Job]:
    """Run a lease claim from sql/ (claim.sql or a teaching variant of it).
    The public queue.claim runs only claim.sql; the labs race the variants."""
    with conn.transaction():
        params = {"batch": batch, "lease": checks.lease(LEASE_S)}
        return run(conn, statement, params, row_factory=records(queue.Job)).fetchall()


def style_claimer(style: str, wasted: Callable[[], None]) -> Claimer:
    """The built-in claim for `style`; `wasted()` counts a claim that matched 0 rows."""

    def naive(conn: psycopg.Connection) -> ClaimOne:
        def claim_one():
            row = run(conn, "teaching/naive_read").fetchone()
            if row is None:
                return None
            run(conn, "teaching/naive_mark", {"id": row[0]})
            return row[0], lambda: run(conn, "teaching/mark_done", {"id": row[0]})

        return claim_one

    def guarded(conn: psycopg.Connection) -> ClaimOne:
        def claim_one():
            while True:
                row = run(conn, "teaching/naive_read").fetchone()
                if row is None:
                    return None
                job_id = row[0]
                if run(conn, "teaching/guarded_mark", {"id": job_id}).rowcount == 1:
                    return job_id, lambda job_id=job_id: run(conn, "teaching/mark_done", {"id": job_id})
                wasted()  # another worker marked it first: read again

        return claim_one

    def hold(conn: psycopg.Connection) -> ClaimOne:
        def claim_one():
            row = run(conn, f"teaching/{style}").fetchone()  # opens the transaction that holds the lock
            if row is None:
                conn.rollback()
                return None

            def finish():
                run(conn, "teaching/mark_done", {"id": row[0]})
                conn.commit()

            return row[0], finish

        return claim_one

    def lease(conn: psycopg.Connection) -> ClaimOne:
        statement = "claim" if style == "lease_skip_locked" else "teaching/lease_for_update"

        def claim_one():
            jobs = lease_claim(conn, statement)
            return (jobs[0].id, lambda: queue.complete(conn, jobs[0])) if jobs else None

        return claim_one

    return {
        "naive": naive,
        "guarded_update": guarded,
        "hold_for_update": hold,
        "hold_skip_locked": hold,
        "lease_for_update": lease,
        "lease_skip_locked": lease,
    }[style]


def prepare(db: Database, jobs: int) -> None:
    """Empty the jobs table and add `jobs` due jobs, ids 1..jobs."""
    with db.connection() as conn:
        seeding.reset_and_seed(conn, KIND, jobs)


class Tally:
    """A count that many threads add to."""

    def __init__(self) -> None:
        self.value, self.lock = 0, threading.Lock()

    def add(self) -> None:
        with self.lock:
            self.value += 1


def drain(
    conns: list[psycopg.Connection],
    claimer: Claimer,
    *,
    jobs: int,
    work_ms: float,
    progress: Callable[[int, int], None] | None,
    stop: threading.Event,
) -> tuple[list[RaceRun], float]:
    """One thread per connection claims and runs jobs until none is left.
    Returns the runs and the seconds it took; a worker's error is raised here."""
    runs: list[RaceRun] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    gate = threading.Barrier(len(conns) + 1)
    step = max(1, jobs // 100)
    t0 = 0.0

    def work(index: int, conn: psycopg.Connection) -> None:
        try:
            try:
                claim_one = claimer(conn)
            finally:
                gate.wait()  # every worker starts together, even one whose claimer failed
            while not stop.is_set():
                got = claim_one()
                if got is None:
                    return
                job_id, finish = got
                start = time.perf_counter() - t0
                if work_ms:
                    time.sleep(work_ms / 1000)
                end = time.perf_counter() - t0  # stamped before finish() lets the job go
                finish()
                with lock:
                    runs.append(RaceRun(index, job_id, start, end))
                    n = len(runs)
                if progress and (n % step == 0 or n == jobs):
                    progress(n, jobs)
        except BaseException as exc:  # raised again in the caller after join
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=work, args=(i, c), daemon=True) for i, c in enumerate(conns)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    gate.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return sorted(runs, key=lambda r: r.start), elapsed


def run_race(
    db: Database,
    *,
    workers: int = 8,
    jobs: int = 400,
    work_ms: float = 10,
    mode: str = "naive",
    guess: int | None = None,
    claimer: Claimer | None = None,
    connect: Callable[[], psycopg.Connection] | None = None,
    progress: Callable[[int, int], None] | None = None,
    stop: threading.Event | None = None,
) -> RaceResult:
    """Drain `jobs` jobs with `workers` threads claiming in style `mode`, or
    with `claimer` when given: a callable (conn) -> claim_one, where
    claim_one() returns (job_id, finish) or None when no job is left. A
    claimer's connections are autocommit. `connect` opens each worker's
    connection, where a claimer needs sessions of its own kind (a learner's
    role); by default db.connect.

    `progress(runs_so_far, jobs)` is called from worker threads; `stop` ends
    the race early. A worker's error is raised here, after all have stopped;
    every connection is closed, also when one fails to open.
    """
    check_inputs(workers=workers, jobs=jobs, work_ms=work_ms, mode=mode)
    if claimer is not None and not callable(claimer):
        raise BadInput(f"claimer must be a callable (conn) -> claim_one, got {claimer!r}")
    stop = stop or threading.Event()
    wasted = Tally()
    custom = claimer is not None
    claim = claimer or style_claimer(mode, wasted.add)
    autocommit = custom or not mode.startswith("hold_")
    prepare(db, jobs)
    with ExitStack() as stack:
        conns = []
        for _ in range(workers):
            conn = connect() if connect is not None else db.connect(autocommit=autocommit)
            stack.callback(conn.close)
            conns.append(conn)
        runs, elapsed = drain(conns, claim, jobs=jobs, work_ms=work_ms, progress=progress, stop=stop)
    with db.connection() as conn:
        done = queue.status_counts(conn).get("done", 0)
    return finish(
        RaceResult,
        db,
        mode=CUSTOM if custom else mode,
        workers=workers,
        jobs=jobs,
        work_ms=work_ms,
        elapsed_s=elapsed,
        runs=runs,
        done=done,
        wasted_claims=wasted.value,
        stopped=stop.is_set() and done < jobs,
        guess=guess,
    )


# --- how the count of duplicates moves with the number of workers --------------


@dataclass(kw_only=True)
class SweepResult(Result):
    """The naive race once per worker count: jobs run more than once, and runs
    beyond the first of each job (the wasted work)."""

    jobs: int
    work_ms: float
    races: list[RaceResult]
    guide: GuideFigure = field(default_factory=lambda: figure(1))

    @property
    def workers(self) -> list[int]:
        return [r.workers for r in self.races]

    @property
    def run_more_than_once(self) -> dict[int, int]:
        return {r.workers: r.run_more_than_once for r in self.races}

    @property
    def extra_runs(self) -> dict[int, int]:
        return {r.workers: r.extra_runs for r in self.races}

    def runs_per_duplicate(self, workers: int) -> float | None:
        """How many runs each job that ran more than once got, on average."""
        race = next(r for r in self.races if r.workers == workers)
        dup = race.run_more_than_once
        return (race.extra_runs + dup) / dup if dup else None

    def comparison(self) -> list[Comparison]:
        """A few worker counts only (the chart shows them all): 4 holds the guess, 8 the guide's figure."""
        shown = [r for r in self.races if r.workers in (1, 4, 8, max(self.workers))]
        return [
            (
                f"{tables.count(r.workers, 'worker')}: jobs run more than once",
                self.guess_cell if r.workers == 4 else None,
                r.run_more_than_once,
                self.guide_text(r),
            )
            for r in shown
        ]

    def guide_text(self, race: RaceResult) -> str | None:
        return race.guide_figure_text() if race.workers == self.guide.values["workers"] else None

    def report(self) -> list[str]:
        lines: list[str] = [
            note(
                f"naive race, {self.jobs:,} jobs, {self.work_ms:g} ms each, by worker count"
                + self.stopped_note
            )
        ]
        for r in self.races:
            per = self.runs_per_duplicate(r.workers)
            per_text = f" ({per:.1f} runs per such job)" if per else ""
            lines.append(  # extra runs: the table has only the jobs run more than once
                note(
                    f"  {r.workers:>2} {tables.plural(r.workers, 'worker'):<7}: "
                    f"{r.run_more_than_once:>4,} {tables.plural(r.run_more_than_once, 'job'):<4} "
                    "run more than once, "
                    f"{r.extra_runs:>4,} extra {tables.plural(r.extra_runs, 'run')}{per_text}"
                )
            )
        return lines + self.footer()

    def chart(self) -> charts.Chart:
        """Duplicates against the number of workers: one line for jobs run more
        than once, one for the extra runs."""
        rows = [
            {"workers": r.workers, "measure": name, "count": value}
            for r in self.races
            for name, value in (
                ("jobs run more than once", r.run_more_than_once),
                ("extra runs (work done again)", r.extra_runs),
            )
        ]
        return charts.lines(
            rows,
            x="workers",
            y="count",
            series="measure",
            heading=f"Naive race, {self.jobs:,} jobs of {self.work_ms:g} ms, by number of workers",
            x_axis=charts.axis("workers", "", "d", values=[r.workers for r in self.races]),
            y_axis=charts.axis("jobs or runs", "count"),
            legend_below=True,
        )


def sweep_workers(
    db: Database,
    *,
    workers: tuple[int, ...] = tuple(range(1, 17)),
    jobs: int = 200,
    work_ms: float = 10,
    guess: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    stop: threading.Event | None = None,
) -> SweepResult:
    """The naive race once for each worker count in `workers`."""
    if not workers:
        raise BadInput("workers must list at least one worker count")
    for count in workers:
        check_inputs(workers=count, jobs=jobs, work_ms=work_ms, mode="naive")
    stop = stop or threading.Event()
    races: list[RaceResult] = []
    for index, count in enumerate(workers):
        if stop.is_set():
            break

        def step(done: int, _total: int, before: int = index * jobs) -> None:
            if progress:
                progress(before + min(done, jobs), len(workers) * jobs)

        race = run_race(db, workers=count, jobs=jobs, work_ms=work_ms, mode="naive", progress=step, stop=stop)
        if race.stopped:
            break
        races.append(race)
    return finish(
        SweepResult,
        db,
        jobs=jobs,
        work_ms=work_ms,
        races=races,
        guess=guess,
        stopped=len(races) < len(workers),
    )
