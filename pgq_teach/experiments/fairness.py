"""One tenant's flood (lesson 10b): `flood` jobs of one tenant enqueued a moment before a
trickle of `each` jobs for each of `tenants` others, drained by one claimer with the FIFO
claim (sql/claim.sql), then, on a fresh table, with the fair claim (sql/claim_fair_tenants.sql
then sql/claim_fair.sql, `queue.claim_fair`).

What it measures, from the server's own timestamps (sql/lab/tenant_waits.sql): the small
tenants' wait from enqueue to claim at p50 and p99, and how many jobs were claimed before
each of theirs. And what one claim costs on the full queue: the buffers its EXPLAIN (ANALYZE,
BUFFERS) read (the fair claim's two statements added up), and its execution time, which is
reported, never asserted. The knobs that make the result: `flood`, `tenants`, `each`,
`batch` and `per_tenant` (the fair claim's cap on a tenant's running jobs; every batch is
completed before the next claim, so it caps the tenant's jobs per claim).

The guide has no fair claim (its claim takes the oldest due job); River, Oban, pg-boss and
Graphile Worker's answers are compared in docs/beyond-fifo.md.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from psycopg.rows import dict_row

from .. import charts, checks, measurements, queue, seeding, tables
from ..databases import Database
from ..guide import GuideFigure
from ..statements import explain_analyze, run
from .results import Comparison, Progress, Result, advice, finish, note, tell

KIND = "webhook"  # the flood's kind in sql/lab/seed_tenant_flood.sql: one kind, two tenants' lines
FLOOD_TENANT = "big"  # sql/lab/seed_tenant_flood.sql names the flood's tenant so
GUIDE_NO_FAIRNESS = advice(
    "the claim", "the claim takes the oldest due job first (ORDER BY run_at); the guide has no fair claim"
)


@dataclass
class DrainRun:
    """One drain of the flooded queue with one claim: the small tenants' waits, and one
    claim's cost on the full queue."""

    claim: str  # "FIFO" or "fair"
    small_jobs: int  # the small tenants' jobs claimed (all of them, when not stopped)
    claims: int  # claims made until the last small tenant's job was claimed
    wait_p50_ms: float
    wait_p99_ms: float
    ahead_p50: int  # jobs claimed before a small tenant's job, at p50
    ahead_p99: int
    buffers: int  # one claim on the full queue, EXPLAIN (ANALYZE, BUFFERS): shared hit + read
    claim_ms: float  # that claim's execution time (reported, never asserted)


@dataclass(kw_only=True)
class FloodResult(Result):
    flood: int
    tenants: int
    each: int
    batch: int
    per_tenant: int
    fifo: DrainRun
    fair: DrainRun
    guide: GuideFigure = field(default_factory=lambda: GUIDE_NO_FAIRNESS)

    @property
    def runs(self) -> tuple[DrainRun, DrainRun]:
        return (self.fifo, self.fair)

    @property
    def small_total(self) -> int:
        return self.tenants * self.each

    def measured(self, r: DrainRun) -> bool:
        """Whether a drain claimed any small tenant's job: a run stopped before one has no wait
        to show (its percentiles would read 0, as if nobody had waited)."""
        return r.small_jobs > 0

    def quoted(self) -> dict[str, float]:
        """The figures the interview quotes, with the knobs that made them."""
        return {
            "flood": self.flood,
            "tenants": self.tenants,
            "batch": self.batch,
            "fifo_p99_ms": self.fifo.wait_p99_ms,
            "fair_p99_ms": self.fair.wait_p99_ms,
            "fifo_buffers": self.fifo.buffers,
            "fair_buffers": self.fair.buffers,
        }

    def comparison(self) -> list[Comparison]:
        f, r = self.fifo, self.fair

        def shown(drain: DrainRun, value: Any) -> Any:
            return value if self.measured(drain) else "none claimed (stopped)"

        return [
            ("jobs claimed before a small tenant's, p50, FIFO", self.guess_cell, shown(f, f.ahead_p50), "–"),
            ("jobs claimed before a small tenant's, p50, fair", "–", shown(r, r.ahead_p50), "–"),
            ("small tenants' wait p99, FIFO", "–", shown(f, tables.duration(f.wait_p99_ms / 1000)), "–"),
            ("small tenants' wait p99, fair", "–", shown(r, tables.duration(r.wait_p99_ms / 1000)), "–"),
            ("buffers per claim, FIFO", "–", f.buffers, "–"),
            ("buffers per claim, fair (both steps)", "–", r.buffers, "–"),
        ]

    def report(self) -> list[str]:
        lines = [
            f"{tables.count(self.flood, 'job')} of tenant '{FLOOD_TENANT}', then "
            f"{tables.count(self.each, 'job')} for each of {tables.count(self.tenants, 'other tenant')}; "
            f"batch {self.batch}, per_tenant {self.per_tenant}:{self.stopped_note}"
        ]
        for r in self.runs:
            lines.append(
                f"  {r.claim}: {self._waits(r)}; one claim read {tables.count(r.buffers, 'buffer')} "
                f"in {tables.duration(r.claim_ms / 1000)}"
            )
        return [note(line) for line in lines] + self.footer()

    def _waits(self, r: DrainRun) -> str:
        """The small tenants' waits in one drain, and how many of their jobs it claimed."""
        if not self.measured(r):  # no wait to show
            return "stopped before any small tenant's job was claimed"
        part = (
            ""
            if r.small_jobs == self.small_total
            else f" (the {r.small_jobs:,} of {self.small_total:,} claimed)"
        )
        return (
            f"small tenants waited {tables.duration(r.wait_p50_ms / 1000)} at p50, "
            f"{tables.duration(r.wait_p99_ms / 1000)} at p99{part} ({r.ahead_p50:,} and {r.ahead_p99:,} "
            f"jobs claimed before theirs)"
        )

    def chart(self) -> charts.Chart:
        """The small tenants' waits, p50 and p99, under each claim, on a log axis (they
        differ a hundredfold and more)."""
        rows = [
            {"claim and percentile": f"{r.claim}, {name}", "wait (ms)": max(value, 0.001), "claim": r.claim}
            for r in self.runs
            if self.measured(r)  # a drain stopped before any small job has no bar, not a 0 one
            for name, value in (("p50", r.wait_p50_ms), ("p99", r.wait_p99_ms))
        ]
        return charts.bars(
            rows,
            label="claim and percentile",
            value="wait (ms)",
            heading=f"The small tenants' wait behind a {self.flood:,}-job flood",
            value_axis=charts.axis("wait from enqueue to claim", "ms"),
            colour="claim",
            fmt=",.1f",
            log=True,
        )


def flood(
    db: Database,
    *,
    flood: int = 20_000,
    tenants: int = 50,
    each: int = 4,
    batch: int = 50,
    per_tenant: int = 1,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> FloodResult:
    """Drain the flooded queue with the FIFO claim, then the fair claim; see the module."""
    settings = {
        "flood": checks.whole_number("flood", flood, 1, 200_000),
        "tenants": checks.whole_number("tenants", tenants, 1, 1_000),
        "each": checks.whole_number("each", each, 1, 100),
        "batch": checks.whole_number("batch", batch, 1, 1_000),
        "per_tenant": checks.whole_number("per_tenant", per_tenant, 1, 1_000),
    }
    stop = stop or threading.Event()
    total = 2 * settings["flood"] + 2 * settings["tenants"] * settings["each"]
    fifo = _drain(db, "FIFO", settings, stop, lambda done: tell(progress, done, total))
    offset = settings["flood"] + settings["tenants"] * settings["each"]
    fair = _drain(db, "fair", settings, stop, lambda done: tell(progress, offset + done, total))
    result = finish(FloodResult, db, guess=guess, stopped=stop, fifo=fifo, fair=fair, **settings)
    if not result.stopped and all(result.measured(r) for r in result.runs):
        measurements.record(measurements.FLOOD_WAITS_10B, result.quoted())
    return result


def _drain(db: Database, claim: str, settings: dict[str, int], stop: threading.Event, told: Any) -> DrainRun:
    """Seed the flood and the trickle, read one claim's cost on the full queue, seed them again,
    then claim and complete batch after batch until every small tenant's job was claimed."""
    small_total = settings["tenants"] * settings["each"]
    with db.connection() as conn:
        _seed(conn, settings)
        run(conn, "lab/analyze_jobs")
        buffers, claim_ms = (_fair_cost if claim == "fair" else _fifo_cost)(conn, settings)
        _seed(conn, settings)  # afresh, so the waits count no time spent measuring the cost
        claims = small = done = 0
        turn: str | None = None
        while small < small_total and not stop.is_set():
            if claim == "fair":
                jobs = queue.claim_fair(
                    conn, batch=settings["batch"], per_tenant=settings["per_tenant"], after=turn
                )
                turn = queue.next_turn(turn, jobs)
                small += sum(job.tenant != FLOOD_TENANT for job in jobs)
            else:  # the FIFO claim returns no tenant, and the trickle is last in its order: drain it all
                jobs = queue.claim(conn, batch=settings["batch"])
            if not jobs:
                break
            queue.complete_many(conn, jobs)
            claims += 1
            done += len(jobs)
            told(done)
        params = {"flood_tenant": FLOOD_TENANT}
        [waits] = run(conn, "lab/tenant_waits", params, row_factory=dict_row).fetchall()
    return DrainRun(
        claim=claim,
        small_jobs=int(waits["jobs"]),
        claims=claims,
        wait_p50_ms=float(waits["wait_p50_s"] or 0) * 1000,
        wait_p99_ms=float(waits["wait_p99_s"] or 0) * 1000,
        ahead_p50=int(waits["ahead_p50"] or 0),
        ahead_p99=int(waits["ahead_p99"] or 0),
        buffers=buffers,
        claim_ms=claim_ms,
    )


def _seed(conn: Any, settings: dict[str, int]) -> None:
    """The flood in one statement (sql/lab/seed_tenant_flood.sql, due an hour ago), then the
    trickle, one enqueue per small tenant, due now: the small tenants' waits start when their
    own jobs were enqueued, after the flood's."""
    seeding.reset_jobs(conn)
    run(conn, "lab/seed_tenant_flood", {"flood": settings["flood"], "tenants": 0})
    for n in range(1, settings["tenants"] + 1):
        queue.enqueue_many(
            conn, KIND, [{"n": i} for i in range(settings["each"])], tenant=f"t{n}", notify=False
        )


def _plan_cost(plan: dict[str, Any]) -> tuple[int, float]:
    return int(plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]), float(plan["Actual Total Time"])


def _fifo_cost(conn: Any, settings: dict[str, int]) -> tuple[int, float]:
    return _plan_cost(
        explain_analyze(conn, "claim", {"batch": settings["batch"], "lease": queue.DEFAULT_LEASE})
    )


def _fair_cost(conn: Any, settings: dict[str, int]) -> tuple[int, float]:
    """Both steps of the fair claim, added up: step 1 as it runs, step 2 with the tenants
    step 1 locked (read in a transaction rolled back, as EXPLAIN ANALYZE's are)."""
    ranking = {
        "batch": settings["batch"],
        "per_tenant": settings["per_tenant"],
        "after": None,
        "min_priority": 0,
    }
    first = _plan_cost(explain_analyze(conn, "claim_fair_tenants", ranking))
    with conn.transaction(force_rollback=True):
        locked = run(conn, "claim_fair_tenants", ranking).fetchall()
    claiming = {
        "tenants": [row[0] for row in locked],
        "ranked_running": [row[2] for row in locked],
        "priority": locked[0][1],
        "per_tenant": settings["per_tenant"],
        "batch": settings["batch"],
        "lease": queue.DEFAULT_LEASE,
    }
    second = _plan_cost(explain_analyze(conn, "claim_fair", claiming))
    return first[0] + second[0], first[1] + second[1]
