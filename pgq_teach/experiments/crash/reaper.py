"""The reaper: `reaper_plan` plans sql/reap.sql and runs it once on a few passed
leases, `two_reapers` runs two at once, `reaper_backlog` measures an empty
reaper pass as jobs run beside a held transaction and after VACUUM, and
`reaper_cadence` counts how often one library Worker reaps over several
seconds of work."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta

from ... import checks, queue, seeding, tables
from ...databases import Database
from ...guide import GuideFigure
from ...statements import explain, explain_analyze, run
from ...worker import Worker
from ..bloat import VacuumReport, vacuum
from ..results import Comparison, Result, advice, finish
from ..sessions import run_and_wait
from .cleanup import tuples_line
from .scene import HOLD, KIND, LAB_PREFIX, OTHERS_LIMITS, answer, lab_session

GUIDE_REAPER = advice(
    "the reaper",
    "run it every minute from a scheduler, or from each worker before it claims; "
    "EXPLAIN shows it using the partial index on leased_until",
)


@dataclass(kw_only=True)
class ReaperPlan(Result):
    """sql/reap.sql planned on a table of mostly ready jobs, then run once after
    `expired` of the running jobs' leases were moved into the past, beside the
    guide's advice on the reaper (its prose, not a numbered figure)."""

    running: int
    ready: int
    expired: int  # running jobs whose lease the lab moved into the past
    plan: str
    reaped_now: int  # what one run of the reaper handed back
    still_running: int  # running jobs after it ran: their leases had minutes left
    guide: GuideFigure = field(default_factory=lambda: GUIDE_REAPER)

    @property
    def uses_running_index(self) -> bool:
        return "jobs_running_idx" in self.plan

    def comparison(self) -> list[Comparison]:
        return [
            (
                "the plan reads jobs_running_idx",
                None,
                "yes" if self.uses_running_index else "no",
                "yes: the partial index on leased_until",
            ),
            (
                f"jobs reaped ({self.expired} leases passed, {self.running - self.expired} live)",
                None,
                self.reaped_now,
                "the passed leases only",
            ),
        ]

    def summary(self) -> str:
        lines = [
            f"sql/reap.sql on {self.running:,} running and {self.ready:,} ready jobs:",
            *(f"  {line}" for line in self.plan.splitlines()),
            f"  {self.expired} of the leases moved into the past; the reaper, run once, handed back "
            f"{tables.count(self.reaped_now, 'job')} and left {self.still_running:,} running",
        ]
        return "\n".join(lines + self.footer())


def reaper_plan(db: Database, running: int = 50, ready: int = 4_950, expired: int = 5) -> ReaperPlan:
    """Seed ready + running jobs (five-minute leases), refresh statistics,
    EXPLAIN sql/reap.sql, then pass `expired` of those leases and reap once."""
    running = checks.whole_number("running", running, *OTHERS_LIMITS)
    ready = checks.whole_number("ready", ready, *OTHERS_LIMITS)
    expired = checks.whole_number("expired", expired, 0, running)
    with db.connection() as conn:
        seeding.reset_and_seed(conn, KIND, running + ready)
        claimed = queue.claim(conn, batch=running, lease=timedelta(minutes=5))
        run(conn, "lab/analyze_jobs")
        plan = "\n".join(explain(conn, "reap"))
        run(conn, "lab/expire_leases", {"ids": [job.id for job in claimed[:expired]]})
        reaped = queue.reap(conn)
        still_running = queue.status_counts(conn).get("running", 0)
    return finish(
        ReaperPlan,
        db,
        running=running,
        ready=ready,
        expired=expired,
        plan=plan,
        reaped_now=reaped,
        still_running=still_running,
    )


@dataclass(frozen=True)
class ReaperPass:
    """One empty reaper pass: what had happened before it, and the buffers it read."""

    after: str
    buffers: int


@dataclass(kw_only=True)
class ReaperBacklog(Result):
    """Empty reaper passes as jobs run while a hold-style worker keeps a
    transaction ID, then VACUUM beside it, then VACUUM once it has ended."""

    jobs: int  # jobs run in each of the two rounds
    passes: list[ReaperPass]
    vacuum_held: VacuumReport  # VACUUM while the worker still held its transaction
    vacuum_after: VacuumReport  # VACUUM after it ended
    guide: GuideFigure = field(default_factory=lambda: GUIDE_REAPER)

    def buffers(self, after: str) -> int:
        """The buffers of the pass made after `after` (one of the passes' labels)."""
        return next(p.buffers for p in self.passes if p.after == after)

    def comparison(self) -> list[Comparison]:
        return [(f"buffers of an empty pass after {p.after}", None, p.buffers, None) for p in self.passes]

    def summary(self) -> str:
        lines = [
            "empty reaper passes (sql/reap.sql; EXPLAIN (ANALYZE, BUFFERS): shared hit + read)"
            + self.stopped_note,
            *(f"  after {p.after}: {tables.count(p.buffers, 'buffer')}" for p in self.passes),
            f"  VACUUM beside the held transaction: {tuples_line(self.vacuum_held)}",
            f"  VACUUM after it ended: {tuples_line(self.vacuum_after)}",
        ]
        return "\n".join(lines + self.footer())


def reaper_pass_buffers(db: Database) -> int:
    """Buffers (shared hit + read) one reaper pass reads, run in a new session and rolled back."""
    with db.connection() as conn:
        plan = explain_analyze(conn, "reap")
    return int(plan["Shared Hit Blocks"] + plan["Shared Read Blocks"])


def reaper_backlog(db: Database, jobs: int = 10_000) -> ReaperBacklog:
    """On an empty, vacuumed table a hold-style worker takes job 1 and keeps
    its transaction open; then `jobs` jobs run (claimed with leases that have
    since passed, and completed, each in one statement), twice, with an empty
    reaper pass after each round; VACUUM runs beside the held transaction,
    then again once it has ended, each followed by a pass. Autovacuum is kept
    off the table meanwhile."""
    jobs = checks.whole_number("jobs", jobs, 1, 100_000)
    passes = []
    with db.connection(application_name=f"{LAB_PREFIX} reaper") as conn:
        seeding.reset_and_seed(conn, KIND, 1)
        run(conn, "lab/autovacuum_off")
        vacuum(db)
        with lab_session(db, HOLD) as hold:
            hold.begin()
            answer(run_and_wait(hold, "teaching/hold_skip_locked"))
            passes.append(ReaperPass("nothing had run", reaper_pass_buffers(db)))
            for done in (jobs, 2 * jobs):
                run(conn, "lab/seed_jobs", {"kind": KIND, "count": jobs})
                run(conn, "lab/claim_all_lease_passed")
                run(conn, "lab/complete_running")
                passes.append(ReaperPass(f"{done:,} jobs ran", reaper_pass_buffers(db)))
            held = vacuum(db)
            passes.append(ReaperPass("VACUUM beside the held transaction", reaper_pass_buffers(db)))
            hold.rollback()
            hold.wait_done()
        cleaned = vacuum(db)
        passes.append(ReaperPass("VACUUM once it had ended", reaper_pass_buffers(db)))
        run(conn, "lab/autovacuum_reset")
    return finish(ReaperBacklog, db, jobs=jobs, passes=passes, vacuum_held=held, vacuum_after=cleaned)


@dataclass(frozen=True)
class TwoReapers:
    """Two reapers at once over the same passed leases: what each handed back."""

    first: int  # the first reaper, its transaction still open
    second: int  # the second, meanwhile (SKIP LOCKED steps over the first's rows)
    after_both: int  # the second again, once the first has committed

    def __str__(self) -> str:
        return f"first reaper: {self.first}; second, meanwhile: {self.second}; after both: {self.after_both}"


def two_reapers(db: Database, expired: int = 10) -> TwoReapers:
    """`expired` more workers claim a job each and die (their leases moved into the
    past); then one reaper runs in an open transaction while a second, whose
    lock_timeout is 1 s, runs beside it; then the second runs again."""
    expired = checks.whole_number("expired", expired, 1, 1_000)
    with db.connection() as conn:
        died = queue.claim(conn, batch=expired, lease=timedelta(minutes=5))
        run(conn, "lab/expire_leases", {"ids": [job.id for job in died]})
    with db.connection() as first, db.connection(options="-c lock_timeout=1000") as second:
        with first.transaction():  # the first reaper has not committed yet
            first_reaped = queue.reap(first)
            second_reaped = queue.reap(second)  # a wait here would end in 55P03 after 1 s
        after_both = queue.reap(second)
    return TwoReapers(first_reaped, second_reaped, after_both)


# --- how often a Worker reaps -------------------------------------------------------------


@dataclass(kw_only=True)
class CadenceResult(Result):
    """One library Worker draining quick jobs for several seconds: how many
    reaper passes it made beside how many claims, and the bound its
    `reap_every` sets (one pass per interval, plus the first and the one
    before it calls the queue idle)."""

    jobs: int
    work_s: float
    claimed: int
    reaper_passes: int
    elapsed_s: float
    reap_every_s: float
    guide: GuideFigure = field(default_factory=lambda: GUIDE_REAPER)

    @property
    def most_passes(self) -> float:
        return self.elapsed_s / self.reap_every_s + 2

    def comparison(self) -> list[Comparison]:
        return [
            ("jobs claimed, one at a time", None, self.claimed, None),
            ("reaper passes", None, self.reaper_passes, f"at most {self.most_passes:.1f}"),
        ]

    def summary(self) -> str:
        lines = [
            f"one Worker, {self.jobs} jobs of {self.work_s * 1000:g} ms each, claimed one at a time, "
            f"in {self.elapsed_s:.1f} s" + self.stopped_note,
            f"  {self.claimed} claims, {self.reaper_passes} reaper passes "
            f"(reap_every {self.reap_every_s:g} s: at most {self.most_passes:.1f} in that time)",
        ]
        return "\n".join(lines + self.footer())


def reaper_cadence(db: Database, jobs: int = 200, work_s: float = 0.02) -> CadenceResult:
    """Seed `jobs` jobs and run one library Worker (default lease) until the
    queue is idle, each job taking `work_s` seconds; count its reaper passes."""
    jobs = checks.whole_number("jobs", jobs, 1, 10_000)
    work_s = checks.seconds("work_s", work_s, 0.0, 1.0)

    def work(job: queue.Job) -> None:
        time.sleep(work_s)

    with db.connection() as conn:
        seeding.reset_and_seed(conn, KIND, jobs)
    worker = Worker(db.dsn, {KIND: work})
    began = time.monotonic()
    report = worker.run(until_idle=True)
    return finish(
        CadenceResult,
        db,
        jobs=jobs,
        work_s=work_s,
        claimed=report.claimed,
        reaper_passes=report.reaper_passes,
        elapsed_s=time.monotonic() - began,
        reap_every_s=worker.reap_every,
    )
