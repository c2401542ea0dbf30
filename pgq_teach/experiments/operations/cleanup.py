"""Lesson 10: `cleanup` (the library's keyset batches of 5,000) against one big
DELETE of the same rows, and the same batches written id IN (SELECT ... LIMIT):
duration, the longest transaction, dead rows left, and each form's plan."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from ... import checks, measurements, queue, tables
from ...databases import Database
from ...guide import GuideFigure
from ...statements import explain, explain_analyze, run
from ..indexes import shape
from ..results import Comparison, Progress, Result, finish, guess_text, tell
from .autovacuum import DEFAULTS
from .rules import GUIDE_CLEANUP


@dataclass
class DeleteRun:
    """One of the two ways's measurements (a part of `CleanupComparison`, not a result)."""

    way: str
    rows: int
    elapsed_s: float
    longest_transaction_s: float
    transactions: int
    dead_rows: int
    transaction_ms: list[float] = field(default_factory=list)

    @property
    def median_transaction_ms(self) -> float:
        ms = sorted(self.transaction_ms)
        return ms[len(ms) // 2] if ms else 0.0

    @property
    def elapsed_ms(self) -> float:
        return self.elapsed_s * 1000

    @property
    def longest_transaction_ms(self) -> float:
        return self.longest_transaction_s * 1000


NOT_RUN = DeleteRun("not run", 0, 0.0, 0.0, 0, 0, [])


@dataclass(kw_only=True)
class CleanupComparison(Result):
    rows: int
    batch: int
    batched: DeleteRun
    bulk: DeleteRun
    in_subquery: DeleteRun  # the same batches written id IN (SELECT ... LIMIT): the slow form
    # each form's first batch under EXPLAIN (ANALYZE, BUFFERS), rolled back: "keyset" is
    # cleanup_done.sql, the library's; "in" is teaching/cleanup_in_subquery.sql
    plans: dict[str, BatchPlan] = field(default_factory=dict)
    library_plan: list[str] = field(default_factory=list)  # EXPLAIN of sql/cleanup_done.sql itself
    guess: float | None = None  # how many ms the one big DELETE lasts
    guide: GuideFigure = GUIDE_CLEANUP

    def comparison(self) -> list[Comparison]:
        b, one = self.batched, self.bulk
        return [
            ("one big DELETE, ms", self.guess_cell, one.elapsed_ms, None),
            ("cleanup in batches, ms", None, b.elapsed_ms, None),
            ("the same batches as id IN (SELECT ... LIMIT), ms", None, self.in_subquery.elapsed_ms, None),
            ("longest transaction, one DELETE, ms", None, one.longest_transaction_ms, None),
            (
                f"longest transaction, batches of {self.batch:,}, ms",
                None,
                b.longest_transaction_ms,
                "short: batches of e.g. 5,000",
            ),
            ("dead rows left, one DELETE", None, one.dead_rows, None),
            ("dead rows left, batches", None, b.dead_rows, None),
        ]

    def summary(self) -> str:
        lines = [f"{self.rows:,} done jobs deleted three ways" + self.stopped_note + ":"]
        for r in (self.batched, self.in_subquery, self.bulk):
            lines.append(
                f"  {r.way:<24} {r.elapsed_s:6.2f} s, "
                f"{tables.count(r.transactions, 'transaction'):>16}, longest "
                f"{r.longest_transaction_ms:7.1f} ms, median {r.median_transaction_ms:7.1f} ms, "
                f"dead rows left {r.dead_rows:,}"
            )
        lines.append(
            f"  one big DELETE: {self.bulk.elapsed_ms:,.0f} ms (your guess: {guess_text(self.guess, ' ms')})"
        )
        for form, plan in self.plans.items():
            lines.append(
                f"  one batch as {PLAN_FORMS[form][0]}: {plan.buffers:,} buffers, "
                f"{plan.seq_scan_rows:,} rows read by Seq Scans; plan:"
            )
            lines += ["      " + line for line in plan.shape.splitlines()]
        return "\n".join(lines + self.footer())


def dead_rows(conn, prefix: str) -> dict[str, tuple[int, int]]:
    """{table: (live, dead)} as the statistics system reports them now."""
    return {
        name: (live, dead)
        for name, live, dead in run(conn, "lab/table_dead_rows", {"prefix": prefix}).fetchall()
    }


def wait_for_dead(conn, table: str, at_least: int, timeout: float = 5.0) -> int:
    """Statistics arrive a moment after a transaction ends: wait for them."""
    deadline = time.monotonic() + timeout
    while True:
        dead = dead_rows(conn, table).get(table, (0, 0))[1]
        if dead >= at_least or time.monotonic() > deadline:
            return dead
        time.sleep(0.1)


@dataclass(frozen=True)
class BatchPlan:
    """One batch's DELETE under EXPLAIN (ANALYZE, BUFFERS) (a part of `CleanupComparison`)."""

    buffers: int  # every buffer the statement touched, the deleting included
    ms: float
    shape: str  # one line per plan node
    seq_scan_rows: int  # rows the plan's Seq Scans returned: the whole table, or one batch


def seq_scan_rows(node: dict) -> int:
    """Rows returned by every Seq Scan in a plan node and its children."""
    own = node["Actual Rows"] if node["Node Type"] == "Seq Scan" else 0
    return int(own + sum(seq_scan_rows(child) for child in node.get("Plans", [])))


def batch_plan(top: dict) -> BatchPlan:
    return BatchPlan(
        int(top["Shared Hit Blocks"] + top["Shared Read Blocks"]),
        float(top["Actual Total Time"]),
        shape(top),
        seq_scan_rows(top),
    )


# the two ways to write one batch: (how the summary names it, the statement, its first batch's values)
PLAN_FORMS = {
    "keyset": (
        "id = ANY(ARRAY(SELECT ... id > :after ORDER BY id LIMIT))",
        "cleanup_done",
        {"after": 0},
    ),
    "in": ("id IN (SELECT ... LIMIT)", "teaching/cleanup_in_subquery", {}),
}


def seq_scan_buffers(node: dict) -> int:
    """Buffers read by every Seq Scan in a plan node and its children."""
    own = (
        node.get("Shared Hit Blocks", 0) + node.get("Shared Read Blocks", 0)
        if node["Node Type"] == "Seq Scan"
        else 0
    )
    return int(own + sum(seq_scan_buffers(child) for child in node.get("Plans", [])))


def limit_scan_buffers(conn, batch: int) -> int:
    """Buffers the next batch's LIMIT subquery reads when it has no keyset
    (teaching/cleanup_from_first_page.sql: a Seq Scan of jobs), run once and
    rolled back. It grows batch by batch while the scan starts at the table's
    first page, past the rows earlier batches left dead; a synchronized scan (a
    table over a quarter of shared_buffers) starts where the last one reached."""
    return seq_scan_buffers(explain_analyze(conn, "teaching/cleanup_from_first_page", {"batch": batch}))


def batch_plans(conn, batch: int) -> dict[str, BatchPlan]:
    """Each form's first batch under EXPLAIN (ANALYZE, BUFFERS), each rolled back."""
    return {
        form: batch_plan(explain_analyze(conn, name, {"batch": batch, **values}))
        for form, (_, name, values) in PLAN_FORMS.items()
    }


def statement_batches(conn, name: str, batch: int) -> Iterator[tuple[int, int]]:
    """A teaching form's loop, one committed batch per step, as queue.cleanup_batches
    yields them, with no keyset to carry (0)."""
    while True:
        with conn.transaction():
            n = run(conn, name, {"batch": batch}).rowcount
        yield n, 0
        if n < batch:
            return


def fresh_done_jobs(conn, rows: int) -> None:
    """A jobs table of `rows` done jobs and nothing else, vacuumed (no dead rows) and
    analyzed (statistics, as a live table has them)."""
    run(conn, "lab/reset_jobs")
    run(conn, "lab/seed_done_jobs", {"count": rows, "distinct": True})
    run(conn, "lab/vacuum_jobs")
    run(conn, "lab/analyze_jobs")


def timed_batches(batches: Iterator[tuple[int, int]]) -> tuple[int, list[float]]:
    """Run a cleanup loop to its end, timing each batch's transaction: (rows, ms of each)."""
    total = 0
    times: list[float] = []
    while True:
        began = time.perf_counter()
        step = next(batches, None)
        if step is None:
            return total, times
        times.append((time.perf_counter() - began) * 1000)
        total += step[0]


def cleanup_vs_bulk_delete(
    db: Database,
    *,
    rows: int = 200_000,
    batch: int = 5_000,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> CleanupComparison:
    """Delete `rows` done jobs with cleanup (batches) and again with one DELETE.
    Autovacuum is turned off for the run, so dead rows are counted, not raced."""
    checks.whole_number("rows", rows, 1_000, 1_000_000)
    checks.whole_number("batch", batch, 1, rows)
    results = []
    plans: dict[str, BatchPlan] = {}
    library_plan: list[str] = []
    ways = ("cleanup in batches", "batches, IN (subquery)", "one big DELETE")
    with db.connection() as conn:
        run(conn, "lab/jobs_autovacuum", {"enabled": False, "scale_factor": 0.2, "threshold": 50})
        try:
            for n, way in enumerate(ways):
                if stop is not None and stop.is_set():
                    break
                fresh_done_jobs(conn, rows)
                run(conn, "lab/flush_stats")
                before = wait_for_dead(conn, "jobs", 0)
                if n == 0:
                    plans = batch_plans(conn, batch)
                    library_plan = explain(conn, "cleanup_done", {"batch": batch, "after": 0})
                began = time.perf_counter()
                if way == "one big DELETE":
                    with conn.transaction():
                        deleted = run(conn, "exercise/wrong/cleanup_all_at_once").rowcount
                    times = [(time.perf_counter() - began) * 1000]
                else:
                    loop = (
                        queue.cleanup_batches(conn, batch)
                        if n == 0
                        else statement_batches(conn, PLAN_FORMS["in"][1], batch)
                    )
                    deleted, times = timed_batches(loop)
                elapsed_s = time.perf_counter() - began
                run(conn, "lab/flush_stats")
                dead = wait_for_dead(conn, "jobs", before + deleted) - before
                results.append(DeleteRun(way, deleted, elapsed_s, max(times) / 1000, len(times), dead, times))
                tell(progress, n + 1, len(ways))
        finally:
            run(conn, "lab/jobs_autovacuum", {"enabled": True, **DEFAULTS})
    results += [NOT_RUN] * (len(ways) - len(results))
    if results[2] is not NOT_RUN:  # lesson 12 quotes it
        measurements.record(measurements.BULK_DELETE_DEAD_ROWS, results[2].dead_rows)
    return finish(
        CleanupComparison,
        db,
        rows=rows,
        batch=batch,
        batched=results[0],
        in_subquery=results[1],
        bulk=results[2],
        plans=plans,
        library_plan=library_plan,
        guess=guess,
        stopped=NOT_RUN in results,
    )
