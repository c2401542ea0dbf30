"""Lesson 10's experiments: running the queue day to day.

- `Load`: a background load (a producer and the library's `Worker`s on
  threads, and optionally one forgotten transaction) for the dashboard to watch.
- `snapshot`: the guide's three monitoring queries at one moment.
- `cleanup_vs_bulk_delete`: `cleanup` in batches of 5,000 against one big
  DELETE of the same rows: duration, the longest transaction, dead rows left.
- `partition_drop_vs_delete`: a day of history dropped as a partition against
  the same day deleted row by row.
- `idle_timeout`: idle_in_transaction_session_timeout on a worker role ending
  a forgotten transaction; the client sees 25P03.

Sessions here are plain psycopg connections, kept small so they can move onto
the shared session helpers later. Every result is a `results.Result`: the
server, the learner's guess, the guide's advice (`results.advice`: these rules
come from the guide's prose, not its numbered figures), and the comparison rows
its widget draws. `Snapshot` is not an experiment's result but one reading of
the monitoring queries, so it stays a plain record.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from .. import charts, checks, measurements, queue, tables
from ..databases import Database
from ..guide import GuideFigure
from ..statements import explain, run, run_one
from ..worker import Worker
from .indexes import plan_cost
from .results import Comparison, Progress, Result, advice, guess_text, server_fields, tell

LAB_ROLE = "pgq_lab_idle_worker"  # a lab role, never the real queue_worker
SECTION = "operations"
GUIDE_CLEANUP = advice(
    SECTION, "delete done jobs in batches, e.g. 5,000 at a time; small batches keep each transaction short"
)
GUIDE_PARTITION = advice(
    SECTION, "dropping a whole partition avoids the VACUUM cost of a bulk DELETE (the partitioning docs)"
)
GUIDE_TIMEOUT = advice(
    SECTION, "ALTER ROLE queue_worker SET idle_in_transaction_session_timeout = '1min' (default 0, off)"
)


def owns_server(db: Database) -> bool:
    """True when the course started this server itself (the embedded one, also
    when JupyterLab hands it to kernels as a DSN), so server-wide settings may
    change; never on a learner's own PGQ_DSN server."""
    return db.server.backend == "embedded" or db.server.origin.startswith("embedded")


# --- the three monitoring queries ------------------------------------------------


@dataclass
class Snapshot:
    at_s: float
    stats: queue.Stats

    @property
    def oldest_session(self) -> dict | None:
        """The row of the session whose transaction has been open longest (None if none is)."""
        timed = [s for s in self.stats.sessions if s.get("xact_age") is not None]
        return max(timed, key=xact_age_s, default=None)

    @property
    def oldest_session_s(self) -> float:
        oldest = self.oldest_session
        return xact_age_s(oldest) if oldest else 0.0


def xact_age_s(session: dict) -> float:
    """How long a session's transaction has been open, in seconds."""
    return session["xact_age"].total_seconds()


def snapshot(conn, began: float | None = None) -> Snapshot:
    """Status counts with the oldest due wait; sessions holding a transaction
    ID or snapshot; dead tuples and autovacuum on jobs (queue.stats runs all three)."""
    return Snapshot(time.monotonic() - (began or time.monotonic()), queue.stats(conn))


# --- a background load for the dashboard -------------------------------------------


class Load:
    """A producer enqueuing `rate` jobs a second, `workers` library Workers on
    threads (each job takes `work_ms`), and, if asked, one session that opens
    a transaction and forgets it. `start()`, then `stop()`; threads never print."""

    def __init__(
        self, db: Database, *, rate: int = 200, workers: int = 2, work_ms: int = 5, stuck_session: bool = True
    ):
        self.db = db
        self.rate = checks.whole_number("rate", rate, 1, 5_000)
        self.workers_wanted = checks.whole_number("workers", workers, 1, 16)
        self.work_ms = checks.whole_number("work_ms", work_ms, 0, 10_000)
        self.stuck_session = stuck_session
        self.stop_event = threading.Event()
        self.threads: list[threading.Thread] = []
        self.workers: list[Worker] = []
        self.enqueued = 0
        self.stuck: psycopg.Connection | None = None
        self.stuck_pid: int | None = None  # its server process, kept after Stop to ask about
        self.errors: list[BaseException] = []

    def start(self) -> None:
        self.stop_event.clear()

        def handle(job: Any) -> None:
            time.sleep(self.work_ms / 1000)

        self.workers = [
            Worker(self.db.dsn, {"send_receipt": handle}, poll=0.5) for _ in range(self.workers_wanted)
        ]
        self.threads = [threading.Thread(target=self.guard(w.run), daemon=True) for w in self.workers]
        self.threads.append(threading.Thread(target=self.guard(self.produce), daemon=True))
        if self.stuck_session:
            # REPEATABLE READ keeps its snapshot while idle, as in guide #18
            self.stuck = self.db.connect(autocommit=False)
            self.stuck.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            self.stuck_pid = self.stuck.info.backend_pid
            run(self.stuck, "lab/open_transaction")  # BEGIN, then nothing: idle in transaction
        for t in self.threads:
            t.start()

    def guard(self, fn: Callable[[], Any]) -> Callable[[], None]:
        def body() -> None:
            try:
                fn()
            except BaseException as exc:  # kept and raised again by stop()  # noqa: BLE001
                self.errors.append(exc)

        return body

    def produce(self) -> None:
        with self.db.connection() as conn:
            tick = 0.1
            while not self.stop_event.wait(tick):
                with conn.transaction():
                    for _ in range(max(1, int(self.rate * tick))):
                        queue.enqueue(conn, "send_receipt", {"n": self.enqueued}, notify=False)
                        self.enqueued += 1

    def release_stuck(self) -> None:
        if self.stuck is not None:
            self.stuck.rollback()
            self.stuck.close()
            self.stuck = None

    def stop(self) -> None:
        self.stop_event.set()
        for w in self.workers:
            w.stop()
        for t in self.threads:
            t.join(10)
        self.release_stuck()
        if self.errors:
            raise self.errors[0]

    @property
    def done(self) -> int:
        return sum(w.report.done for w in self.workers)

    def forgotten_session_gone(self, wait_s: float = 5.0) -> bool:
        """Whether the server no longer has the forgotten transaction's session, asked of
        pg_stat_activity: its process exits a moment after the client lets go, so this
        asks again for up to `wait_s`. False if no such session was ever opened."""
        if self.stuck_pid is None:
            return False
        with self.db.connection() as conn:
            return session_ends(conn, self.stuck_pid, wait_s)


# --- cleanup in batches against one big DELETE ------------------------------------


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
    # each form's first batch under EXPLAIN (ANALYZE, BUFFERS), rolled back: "any" is
    # cleanup_done.sql, id = ANY(ARRAY(SELECT ... LIMIT)); "in" is teaching/cleanup_in_subquery.sql
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


def batch_plan(explained: list) -> BatchPlan:
    cost = plan_cost(explained)
    return BatchPlan(cost.buffers, cost.ms, cost.shape, seq_scan_rows(explained[0]["Plan"]))


# the two ways to write one batch: (how the summary names it, the statement, its EXPLAIN)
PLAN_FORMS = {
    "any": ("id = ANY(ARRAY(SELECT ... LIMIT))", "cleanup_done", "lab/explain_cleanup_done"),
    "in": ("id IN (SELECT ... LIMIT)", "teaching/cleanup_in_subquery", "lab/explain_cleanup_in_subquery"),
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
    """Buffers the next cleanup batch's LIMIT subquery reads (its Seq Scan of jobs),
    under EXPLAIN (ANALYZE, BUFFERS), rolled back. It grows batch by batch while
    the scan starts at the table's first page, past the rows earlier batches left
    dead; a synchronized scan (a table over a quarter of shared_buffers) starts
    where the last one reached instead."""
    with conn.transaction(force_rollback=True):
        explained = run_one(conn, "lab/explain_cleanup_done", {"batch": batch})[0]
    return seq_scan_buffers(explained[0]["Plan"])


def batch_plans(conn, batch: int) -> dict[str, BatchPlan]:
    """Each form's next batch under EXPLAIN (ANALYZE, BUFFERS), each rolled back."""
    plans = {}
    for form, (_, _, explain_name) in PLAN_FORMS.items():
        with conn.transaction(force_rollback=True):
            plans[form] = batch_plan(run_one(conn, explain_name, {"batch": batch})[0])
    return plans


def timed_cleanup(conn, batch: int, statement: str = "cleanup_done") -> tuple[int, list[float]]:
    """queue.cleanup's loop, timing each batch's transaction: (rows, ms of each transaction)."""
    total, times = 0, []
    while True:
        began = time.perf_counter()
        with conn.transaction():
            n = run(conn, statement, {"batch": batch}).rowcount
        times.append((time.perf_counter() - began) * 1000)
        total += n
        if n < batch:
            return total, times


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
                run(conn, "lab/reset_jobs")
                run(conn, "lab/seed_done_jobs", {"count": rows, "distinct": True})
                run(conn, "lab/vacuum_jobs")  # start every run with no dead rows
                run(conn, "lab/analyze_jobs")  # and with statistics, as a live table has them
                run(conn, "lab/flush_stats")
                before = wait_for_dead(conn, "jobs", 0)
                if n == 0:
                    plans = batch_plans(conn, batch)
                    library_plan = explain(conn, "cleanup_done", {"batch": batch})
                began = time.perf_counter()
                if way == "one big DELETE":
                    with conn.transaction():
                        deleted = run(conn, "lab/delete_all_done").rowcount
                    times = [(time.perf_counter() - began) * 1000]
                else:
                    deleted, times = timed_cleanup(conn, batch, PLAN_FORMS["any" if n == 0 else "in"][1])
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
    return CleanupComparison(
        rows=rows,
        batch=batch,
        batched=results[0],
        in_subquery=results[1],
        bulk=results[2],
        plans=plans,
        library_plan=library_plan,
        guess=guess,
        stopped=NOT_RUN in results,
        **server_fields(db),
    )


# --- partitioned history: drop a day, or delete it --------------------------------


@dataclass(kw_only=True)
class PartitionComparison(Result):
    rows_per_day: int
    delete_s: float
    drop_s: float
    dead_after_delete: int
    dead_after_drop: int  # dead rows across all of history after the DROP, less before it
    partitions_left: list[str]
    # bytes on disk: the deleted day's before and just after its DELETE, the dropped day's just
    # before its DROP (lab/history_bytes.sql), and the whole database's just before the DROP and
    # just after it committed (lab/database_bytes.sql)
    deleted_day_bytes: tuple[int, int] = (0, 0)
    dropped_day_bytes: int = 0
    database_bytes_around_drop: tuple[int, int] = (0, 0)
    drop_locks_on_parent: list[str] = field(default_factory=list)  # what the DROP held on jobs_history
    guess: float | None = None  # dead rows left by dropping a day
    guide: GuideFigure = GUIDE_PARTITION

    def comparison(self) -> list[Comparison]:
        return [
            ("dead rows left, DROP the day's table", self.guess_cell, self.dead_after_drop, "none to VACUUM"),
            ("dead rows left, DELETE the day's rows", None, self.dead_after_delete, None),
            ("DELETE the day's rows, ms", None, self.delete_s * 1000, None),
            ("DROP the day's table, ms", None, self.drop_s * 1000, None),
        ]

    def summary(self) -> str:
        return "\n".join(
            [
                f"one day of history, {self.rows_per_day:,} rows, removed two ways:",
                (
                    f"  DELETE the day's rows : {self.delete_s * 1000:8.1f} ms, "
                    f"dead rows left {self.dead_after_delete:,}"
                ),
                (
                    f"  DROP the day's table  : {self.drop_s * 1000:8.1f} ms, "
                    f"dead rows left {self.dead_after_drop:,} (your guess: {guess_text(self.guess)})"
                ),
                (
                    f"  on disk: the deleted day {tables.size(self.deleted_day_bytes[0])} before its DELETE, "
                    f"{tables.size(self.deleted_day_bytes[1])} after; the database "
                    f"{tables.size(self.database_bytes_around_drop[0])} before the DROP, "
                    f"{tables.size(self.database_bytes_around_drop[1])} once it committed "
                    f"(the dropped day was {tables.size(self.dropped_day_bytes)})"
                ),
                f"  until it commits, the DROP holds on jobs_history: {', '.join(self.drop_locks_on_parent)}",
                f"  partitions left: {', '.join(self.partitions_left)}",
            ]
            + self.footer()
        )


def total_dead(conn) -> int:
    """Dead row versions across every table of jobs_history, as the statistics report them."""
    return sum(dead for _, dead in dead_rows(conn, "jobs_history").values())


def wait_for_total_dead(conn, at_least: int, timeout: float = 1.0) -> int:
    """total_dead, waiting up to `timeout` s for it to reach `at_least` (statistics lag)."""
    deadline = time.monotonic() + timeout
    while (dead := total_dead(conn)) < at_least and time.monotonic() < deadline:
        time.sleep(0.1)
    return dead


def history_bytes(conn) -> dict[str, int]:
    """{table: bytes on disk} for jobs_history and each of its partitions."""
    return dict(run(conn, "lab/history_bytes").fetchall())


def partition_name(day: date) -> str:
    return f"jobs_history_{day:%Y%m%d}"


def partition_drop_vs_delete(
    db: Database,
    *,
    rows_per_day: int = 50_000,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> PartitionComparison:
    """Three days of history in day partitions; delete day 1's rows, drop day 2's
    partition. Short enough that `stop` is not checked; it is taken for the panel."""
    checks.whole_number("rows_per_day", rows_per_day, 1_000, 1_000_000)
    days = [date(2026, 11, 1) + timedelta(days=n) for n in range(3)]
    with db.connection() as conn:
        run(conn, "lab/history_drop")
        run(conn, "lab/history_create")
        for day in days:
            run(
                conn,
                "lab/history_partition",
                {"day": day.isoformat(), "next_day": (day + timedelta(days=1)).isoformat()},
                idents={"name": partition_name(day)},
            )
            run(conn, "lab/history_fill_day", {"day": day.isoformat(), "count": rows_per_day})
        tell(progress, 1, 3)
        run(conn, "lab/flush_stats")
        deleted_day, dropped_day = days[0], days[1]
        deleted_before = history_bytes(conn)[partition_name(deleted_day)]
        began = time.perf_counter()
        run(
            conn,
            "lab/history_delete_day",
            {"day": deleted_day.isoformat(), "next_day": (deleted_day + timedelta(days=1)).isoformat()},
        )
        delete_s = time.perf_counter() - began
        deleted_after = history_bytes(conn)[partition_name(deleted_day)]  # before any VACUUM could come
        run(conn, "lab/flush_stats")
        dead_deleted = wait_for_dead(conn, partition_name(deleted_day), rows_per_day)
        dead_before_drop = total_dead(conn)
        tell(progress, 2, 3)
        dropped_bytes = history_bytes(conn)[partition_name(dropped_day)]
        database_before = run_one(conn, "lab/database_bytes")[0]
        began = time.perf_counter()
        with conn.transaction(), db.connection() as other:
            run(conn, "lab/history_drop_day", idents={"name": partition_name(dropped_day)})
            drop_s = time.perf_counter() - began
            # asked from another session before the DROP commits: the parent's lock it holds
            held = run(other, "lab/locks_held_on", {"pid": conn.info.backend_pid, "table": "jobs_history"})
            parent_locks = [mode for (mode,) in held.fetchall()]
        database_after = run_one(conn, "lab/database_bytes")[0]  # committed: the file is cut to zero
        run(conn, "lab/flush_stats")
        # dead rows across all of history, after the drop less before it: what the drop left
        # behind (a DELETE of the same day would add rows_per_day here; wait long enough to see them)
        dead_added_by_drop = wait_for_total_dead(conn, dead_before_drop + 1) - dead_before_drop
        history = dead_rows(conn, "jobs_history")
        tell(progress, 3, 3)
    left = sorted(t for t in history if t != "jobs_history")
    return PartitionComparison(
        rows_per_day=rows_per_day,
        delete_s=delete_s,
        drop_s=drop_s,
        dead_after_delete=dead_deleted,
        dead_after_drop=dead_added_by_drop,
        partitions_left=left,
        drop_locks_on_parent=parent_locks,
        deleted_day_bytes=(deleted_before, deleted_after),
        dropped_day_bytes=dropped_bytes,
        database_bytes_around_drop=(database_before, database_after),
        guess=guess,
        **server_fields(db),
    )


# --- idle_in_transaction_session_timeout on the worker role ------------------------


@dataclass(kw_only=True)
class TimeoutDemo(Result):
    timeout_s: float
    role: str
    setting_seen: str = ""
    ended_after_s: float = 0.0
    sqlstate: str | None = None
    error: str = ""
    session_gone: bool = False
    skipped: str = ""
    # the same forgotten transaction opened by the admin role, which has no timeout: still open?
    other_role_survived: bool = False
    # a statement kept active (pg_sleep) past the timeout, in a transaction, under each setting:
    # the SQLSTATE it ended with (None: it ran to the end), "not on this server" where unknown
    active_statement: dict[str, str | None] = field(default_factory=dict)
    guess: float | None = None  # seconds until the server ends the forgotten transaction
    guide: GuideFigure = GUIDE_TIMEOUT

    def comparison(self) -> list[Comparison]:
        if self.skipped:
            return []
        return [
            ("idle_in_transaction_session_timeout", None, self.setting_seen, "1min (default 0, off)"),
            ("the next statement failed after, s", self.guess_cell, self.ended_after_s, None),
            ("SQLSTATE the client saw", None, self.sqlstate, None),
            ("session gone from pg_stat_activity", None, "yes" if self.session_gone else "no", None),
        ]

    def summary(self) -> str:
        if self.skipped:
            return f"skipped: {self.skipped}"
        return "\n".join(
            [
                f"role {self.role}: idle_in_transaction_session_timeout = {self.setting_seen}",
                (
                    f"a forgotten transaction was ended; the client's next statement failed after "
                    f"{self.ended_after_s:.1f} s with SQLSTATE {self.sqlstate}: {self.error}"
                ),
                f"the session is gone from pg_stat_activity: {self.session_gone}",
                f"the same forgotten transaction, as the admin role (no timeout set), is still open: "
                f"{self.other_role_survived}",
                f"a statement active for {self.timeout_s + 1:g} s in a transaction, under each setting:",
            ]
            + [
                f"  {setting:<36} {ending or 'ran to the end'}"
                for setting, ending in self.active_statement.items()
            ]
            + self.footer()
        )


def idle_timeout(db: Database, *, timeout_s: float = 1.0, guess: float | None = None) -> TimeoutDemo:
    """Make a lab worker role with sql/roles.sql and a short timeout, open a
    transaction as that role and forget it; the server ends the session and
    the client sees 25P03."""
    timeout_s = checks.seconds("timeout_s", timeout_s, 0.2, 10)
    demo = {"timeout_s": timeout_s, "role": LAB_ROLE, "guess": guess, **server_fields(db)}
    password = secrets.token_hex(12)
    with db.connection() as admin:
        drop_lab_role(admin)
        try:
            # the production statement, sql/roles.sql, for a lab role with a short timeout
            params = {"password": password, "idle_timeout": f"{int(timeout_s * 1000)}ms"}
            run(admin, "roles", params, idents={"role": LAB_ROLE})
        except psycopg.errors.InsufficientPrivilege as exc:
            drop_lab_role(admin)
            why = f"this server's user may not create roles ({exc.diag.message_primary})"
            return TimeoutDemo(skipped=why, **demo)
        try:
            with psycopg.connect(make_conninfo(db.dsn, user=LAB_ROLE, password=password)) as worker:
                setting = run_one(worker, "lab/session_settings")[1]
                pid = worker.info.backend_pid
                worker.commit()
                run(worker, "lab/open_transaction")  # BEGIN ... and the worker forgets it
                began = time.monotonic()
                time.sleep(timeout_s + 0.5)
                # Asked before the client sends anything, so the server alone can have ended it.
                gone = session_ends(admin, pid, within_s=2.0)
                sqlstate, error = None, ""
                try:
                    run(worker, "lab/count_jobs")
                except psycopg.Error as exc:
                    sqlstate, error = exc.sqlstate, (exc.diag.message_primary or str(exc)).strip()
                ended = time.monotonic() - began
            other_survived = admin_transaction_survives(db, timeout_s)
            conninfo = make_conninfo(db.dsn, user=LAB_ROLE, password=password)
            active = {name: active_statement_ends(conninfo, name, timeout_s) for name in TIMEOUTS}
        finally:
            drop_lab_role(admin)
    return TimeoutDemo(
        other_role_survived=other_survived,
        active_statement=active,
        setting_seen=setting,
        ended_after_s=ended,
        sqlstate=sqlstate,
        error=error,
        session_gone=gone,
        **demo,
    )


# the three timeouts, each set on the lab role's session: how each treats a long active statement
TIMEOUTS = {
    "idle_in_transaction_session_timeout": None,  # already set on the role by sql/roles.sql
    "statement_timeout": "lab/set_statement_timeout",
    "transaction_timeout": "lab/set_transaction_timeout",  # PostgreSQL 17 and later
}


def active_statement_ends(conninfo: str, timeout: str, timeout_s: float) -> str | None:
    """In a fresh session of the lab role, with `timeout` set to timeout_s, open a
    transaction and run one statement that stays active for timeout_s + 1 s: the
    SQLSTATE it ended with, or None if it ran to the end."""
    setter = TIMEOUTS[timeout]
    with psycopg.connect(conninfo) as conn:
        if setter is not None:
            try:
                run(conn, setter, {"timeout": f"{int(timeout_s * 1000)}ms"})
            except psycopg.errors.UndefinedObject:
                return "not on this server (PostgreSQL 17+)"
            conn.commit()
        try:
            run(conn, "lab/sleep", {"seconds": timeout_s + 1})
            conn.commit()
        except psycopg.Error as exc:
            return exc.sqlstate
    return None


def session_ends(admin: psycopg.Connection, pid: int, within_s: float) -> bool:
    """Whether the server process `pid` is gone, or goes within `within_s` (a session the
    server ends exits a moment after its timeout fires)."""
    deadline = time.monotonic() + within_s
    while run_one(admin, "lab/session_alive", {"pid": pid})[0]:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def admin_transaction_survives(db: Database, timeout_s: float) -> bool:
    """Whether a transaction the admin role opens and forgets is still usable
    after the lab role's timeout has passed: the timeout is on the role, not the server."""
    with db.connection(autocommit=False) as other:
        run(other, "lab/open_transaction")
        time.sleep(timeout_s + 0.5)
        try:
            run(other, "lab/count_jobs")
        except psycopg.Error:  # 25P03 arrives as an InternalError, a lost server as an OperationalError
            return False
        other.rollback()
        return True


def drop_lab_role(admin) -> None:
    try:
        run(admin, "lab/drop_owned", idents={"name": LAB_ROLE})
    except psycopg.errors.UndefinedObject:
        pass  # not there: nothing to revoke
    run(admin, "lab/terminate_sessions_of_role", {"name": LAB_ROLE})
    run(admin, "lab/drop_role", idents={"name": LAB_ROLE})


# --- autovacuum per table: the defaults against the guide's settings ---------------

DEFAULTS = {"scale_factor": 0.2, "threshold": 50}  # the server's defaults (guide: 50 rows plus 20%)
GUIDE_SETTINGS = {"scale_factor": 0.01, "threshold": 1000}  # the guide's starting point for jobs
GUIDE_AUTOVACUUM = advice(
    SECTION,
    "ALTER TABLE jobs SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000)",
)
LAB_NAPTIME = "1s"  # the lab's naptime, so a run of seconds sees autovacuum at work
DEFAULT_NAPTIME = "1min"  # the server's default: the stored run below uses it
NAPTIMES = (LAB_NAPTIME, DEFAULT_NAPTIME)
# The run with the default naptime takes minutes, too long for Run All: it is made once with
# `python tools/record_default_naptime_run.py` and stored here, and the lesson shows it as stored.
STORED_DEFAULT_NAPTIME_RUN = Path(__file__).resolve().parent.parent / "data" / "autovacuum_naptime_1min.json"
TICK_S = 0.1
FREE_WORKER_WAIT_S = 20.0  # how long a run waits for autovacuum workers busy in other databases
# The launcher spreads its visits to the N databases over the naptime (rebuild_database_list in
# autovacuum.c), but never closer than 100 ms (MIN_AUTOVAC_SLEEPTIME): when naptime / N would be
# that short it spaces them 110 ms apart, so it comes back to any one only every N x 0.11 s. It
# counts only the databases with statistics, which every database a session has used has.
LAUNCHER_MIN_SLEEP_S = 0.1
LAUNCHER_SPACING_S = 0.11
NAPTIME_UNITS_S = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}


def naptime_seconds(text: str) -> float:
    """autovacuum_naptime as the server shows it ("1s", "1min") in seconds."""
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    return float(number) * NAPTIME_UNITS_S.get(text[len(number) :], 1.0)


@dataclass
class ChurnRun:
    """One setting's churn (a part of `AutovacuumComparison`, not a result)."""

    settings: str
    scale_factor: float
    threshold: int
    samples: list[tuple[float, int]]  # (seconds, n_dead_tup)
    autovacuums: int
    jobs: int
    vacuums_so_far: list[int] = field(default_factory=list)  # autovacuums this run, at each sample
    # autovacuum workers busy in other databases at each sample, and how many the server may run:
    # when all of them are busy elsewhere, none can come to this table, whatever its settings
    busy_elsewhere: list[int] = field(default_factory=list)
    max_workers: int = 3
    waited_for_workers_s: float = 0.0  # before the run, for workers busy elsewhere to finish

    @property
    def first_autovacuum_sample(self) -> int:
        """The index of the first sample after autovacuum first finished on jobs (len(samples) if never)."""
        return next((i for i, n in enumerate(self.vacuums_so_far) if n > 0), len(self.samples))

    @property
    def dead_before_first_autovacuum(self) -> int:
        """The most dead rows seen before autovacuum first finished on jobs in this run:
        the count at which the first autovacuum fired, to within a tick's churn."""
        return max((d for _, d in self.samples[: self.first_autovacuum_sample]), default=0)

    @property
    def starved_before_first_autovacuum(self) -> bool:
        """Whether every autovacuum worker was busy in another database at some
        sample before the first autovacuum here: then the first one may have come
        late for a reason no table setting controls."""
        busy = self.busy_elsewhere[: self.first_autovacuum_sample]
        return any(n >= self.max_workers for n in busy)

    @property
    def peak_dead(self) -> int:
        return max((d for _, d in self.samples), default=0)

    def starts_at(self, rows: int) -> float:
        return self.threshold + self.scale_factor * rows


@dataclass(kw_only=True)
class AutovacuumComparison(Result):
    base_rows: int
    churn_s: float
    jobs_per_tick: int
    runs: list[ChurnRun]
    naptime: str
    skipped: str = ""
    # the server-wide knobs behind the result, as the server had them during the run
    # (autovacuum_naptime, max_workers, the cost limit and delay, the insert threshold and
    # scale factor; lab/autovacuum_knobs.sql)
    knobs: dict[str, str] = field(default_factory=dict)
    databases: int = 0  # databases the launcher visits in turn (lab/database_count.sql)
    recorded_on: str = ""  # a stored run's UTC date; empty for a run made just now
    guess: float | None = None  # peak n_dead_tup with the defaults
    guide: GuideFigure = GUIDE_AUTOVACUUM

    def footer(self) -> list[str]:
        """A stored run names the server and the day it was measured, not this server."""
        if not self.recorded_on:
            return super().footer()
        recorded = f"recorded {self.recorded_on} on PostgreSQL {self.server_version}"
        return [f"  {self.guide}", f"  stored run: {recorded}, not this server"]

    def run(self, settings: str) -> ChurnRun:
        return next(r for r in self.runs if r.settings == settings)

    @property
    def visit_every_s(self) -> float:
        """How often the launcher comes back to this database: every naptime, or every
        0.11 s per database when the naptime would space them 0.1 s or less apart."""
        naptime = naptime_seconds(self.naptime or "60s")
        if not self.databases or naptime / self.databases > LAUNCHER_MIN_SLEEP_S:
            return naptime
        return LAUNCHER_SPACING_S * self.databases

    @property
    def dead_per_visit(self) -> float:
        """Dead rows the churn adds between two visits (a claim and a completion per job)."""
        return 2 * self.jobs_per_tick / TICK_S * self.visit_every_s

    @property
    def visits_in_time(self) -> bool:
        """Whether the guide's settings can show here: a visit comes before the dead rows
        one visit adds carry the table from the guide's start past the defaults' start."""
        if len(self.runs) < 2:
            return False
        defaults, guide = self.run("defaults"), self.run("guide")
        return guide.starts_at(self.base_rows) + self.dead_per_visit < defaults.starts_at(self.base_rows)

    def comparison(self) -> list[Comparison]:
        if self.skipped or len(self.runs) < 2:
            return []
        defaults, guide = self.run("defaults"), self.run("guide")
        return [
            (
                "peak n_dead_tup, defaults",
                self.guess_cell,
                defaults.peak_dead,
                f"starts at 50 + 20% of rows = {defaults.starts_at(self.base_rows):,.0f}",
            ),
            (
                "peak n_dead_tup, guide's settings",
                None,
                guide.peak_dead,
                f"starts at 1000 + 1% of rows = {guide.starts_at(self.base_rows):,.0f}",
            ),
            (
                "n_dead_tup at the first autovacuum, defaults",
                None,
                defaults.dead_before_first_autovacuum,
                None,
            ),
            ("n_dead_tup at the first autovacuum, guide's", None, guide.dead_before_first_autovacuum, None),
            ("autovacuum runs, defaults", None, defaults.autovacuums, None),
            ("autovacuum runs, guide's settings", None, guide.autovacuums, None),
        ]

    def summary(self) -> str:
        if self.skipped:
            return f"skipped: {self.skipped}"
        lines = [
            (
                f"{self.churn_s:g} s of churn on a jobs table of {self.base_rows:,} done rows, "
                f"autovacuum_naptime {self.naptime}" + self.stopped_note + ":"
            )
        ]
        for r in self.runs:
            lines.append(
                f"  {r.settings:<8} (threshold {r.threshold:,} + {r.scale_factor:g} x rows = starts at "
                f"{r.starts_at(self.base_rows):,.0f} dead): {r.jobs:,} jobs, "
                f"{tables.count(r.autovacuums, 'autovacuum')}, "
                f"first at n_dead_tup {r.dead_before_first_autovacuum:,}, peak {r.peak_dead:,}"
            )
            if r.waited_for_workers_s >= 0.5:
                lines.append(
                    f"    (it first waited {r.waited_for_workers_s:.1f} s for autovacuum workers busy in "
                    "other databases)"
                )
            if r.starved_before_first_autovacuum:
                lines.append(
                    f"    (all {r.max_workers} autovacuum workers were busy in other databases "
                    "before its first autovacuum)"
                )
        if self.databases:
            lines.append(
                f"  the launcher visits this server's {self.databases} databases in turn, never closer "
                f"than 0.1 s apart, so this one about every {self.visit_every_s:.1f} s "
                f"({self.dead_per_visit:,.0f} dead rows of churn)"
                + ("" if self.visits_in_time else ": too seldom for the guide's settings to show")
            )
        lines.append(f"  your guess for the defaults' peak: {guess_text(self.guess)}")
        if self.knobs:
            lines.append(
                "  server-wide: " + ", ".join(f"{name} {value}" for name, value in self.knobs.items())
            )
        return "\n".join(lines + self.footer())

    def chart(self) -> charts.Chart:
        """n_dead_tup over time, one line per setting, beside the dead-row count
        at which each setting's autovacuum should start (guide: 1000 + 1%)."""
        rows = [
            {"time": t, "n_dead_tup": dead, "settings": r.settings}
            for r in self.runs
            for t, dead in charts.thin(r.samples)
        ]
        return charts.lines(
            rows,
            x="time",
            y="n_dead_tup",
            series="settings",
            heading="n_dead_tup on jobs under the same churn",
            x_axis=charts.axis("time since the start", "s"),
            y_axis=charts.axis("n_dead_tup", "rows"),
            refs=[
                charts.Reference(
                    f"{r.settings}: autovacuum starts at {r.starts_at(self.base_rows):,.0f}",
                    r.starts_at(self.base_rows),
                )
                for r in self.runs
            ],
        )


def autovacuum_workers(conn) -> tuple[int, int, int]:
    """(busy in other databases, busy in this one, autovacuum_max_workers)."""
    busy_elsewhere, busy_here, max_workers = run_one(conn, "lab/autovacuum_workers")
    return int(busy_elsewhere), int(busy_here), int(max_workers)


def wait_for_free_workers(conn, timeout: float = FREE_WORKER_WAIT_S) -> float:
    """Wait (at most `timeout` s) until no autovacuum worker is busy in another
    database, so the run starts with every worker free to come here; the seconds waited."""
    began = time.monotonic()
    while autovacuum_workers(conn)[0] > 0 and time.monotonic() - began < timeout:
        time.sleep(0.05)
    return time.monotonic() - began


def churn(
    conn,
    run_record: ChurnRun,
    jobs_per_tick: int,
    churn_s: float,
    stop: threading.Event | None,
    progress: Progress | None,
    done_before: int,
    total_ticks: int,
) -> None:
    """Enqueue, claim and complete `jobs_per_tick` jobs every tick (0.1 s); at each
    tick record n_dead_tup, how many autovacuums have finished on jobs so far, and
    how many autovacuum workers are busy in other databases, into `run_record`."""
    first = run(conn, "stats_vacuum").fetchone()
    runs_before = first[3] if first else 0
    began = time.monotonic()
    ticks = 0
    while time.monotonic() - began < churn_s and not (stop is not None and stop.is_set()):
        run(conn, "lab/seed_jobs", {"kind": "send_receipt", "count": jobs_per_tick})
        queue.claim(conn, batch=jobs_per_tick)
        run(conn, "lab/complete_running")
        run(conn, "lab/flush_stats")
        run_record.jobs += jobs_per_tick
        row = run(conn, "stats_vacuum").fetchone()
        run_record.samples.append((time.monotonic() - began, row[1] if row else 0))
        run_record.vacuums_so_far.append((row[3] if row else 0) - runs_before)
        busy_elsewhere, _, run_record.max_workers = autovacuum_workers(conn)
        run_record.busy_elsewhere.append(busy_elsewhere)
        ticks += 1
        tell(progress, done_before + ticks, total_ticks)
        time.sleep(max(0.0, began + ticks * TICK_S - time.monotonic()))
    row = run(conn, "stats_vacuum").fetchone()
    run_record.autovacuums = (row[3] if row else 0) - runs_before


def autovacuum_per_table(
    db: Database,
    *,
    base_rows: int = 100_000,
    churn_s: float = 15.0,
    jobs_per_tick: int = 200,
    naptime: str = LAB_NAPTIME,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> AutovacuumComparison:
    """The same churn twice on `jobs`: with the server's defaults, then with the
    guide's per-table settings, sampling n_dead_tup. Autovacuum looks at a
    database once per autovacuum_naptime (1 min by default), too rarely to see
    in a lesson, so the lab sets `naptime` (1 s unless asked for 1min), only on
    a server the course started itself, and resets it afterwards. On another
    server it skips, saying why.
    Each run first waits for autovacuum workers busy in other databases (the
    server has only autovacuum_max_workers, 3 by default) and records how many
    were busy at every tick."""
    checks.whole_number("base_rows", base_rows, 1_000, 1_000_000)
    checks.whole_number("jobs_per_tick", jobs_per_tick, 1, 5_000)
    churn_s = checks.seconds("churn_s", churn_s, 1, 600)
    naptime = checks.one_of("naptime", naptime, NAPTIMES)
    comparison = {
        "base_rows": base_rows,
        "churn_s": churn_s,
        "jobs_per_tick": jobs_per_tick,
        "guess": guess,
        **server_fields(db),
    }
    if not owns_server(db):
        return AutovacuumComparison(
            runs=[],
            naptime="",
            skipped="autovacuum_naptime is a server-wide setting, and this is your own server "
            "(PGQ_DSN), so the lab does not change it; at the default of 1min, a run of "
            f"{churn_s:g} s may see no autovacuum at all",
            **comparison,
        )
    ticks = int(churn_s / TICK_S) * 2
    runs: list[ChurnRun] = []
    with db.connection() as conn:
        run(conn, "lab/set_autovacuum_naptime", {"naptime": naptime})
        run(conn, "lab/reload_conf")
        try:
            time.sleep(0.2)  # the launcher picks up the reload
            naptime_seen = run_one(conn, "lab/show_naptime")[0]
            knobs = dict(run(conn, "lab/autovacuum_knobs").fetchall())
            databases = int(run_one(conn, "lab/database_count")[0])
            for n, (name, settings) in enumerate((("defaults", DEFAULTS), ("guide", GUIDE_SETTINGS))):
                if stop is not None and stop.is_set():
                    break
                run(conn, "lab/reset_jobs")
                run(conn, "lab/seed_done_jobs", {"count": base_rows, "distinct": True})
                # the seed's insert counts must reach the statistics before VACUUM and ANALYZE
                # reset them; sent later, they would count as 100,000 fresh inserts, and the
                # insert trigger would start an autovacuum at once, whatever the dead rows
                run(conn, "lab/flush_stats")
                run(conn, "lab/vacuum_jobs")
                run(conn, "lab/analyze_jobs")  # autovacuum's trigger reads the row estimate
                run(conn, "lab/jobs_autovacuum", {"enabled": True, **settings})
                record = ChurnRun(name, settings["scale_factor"], int(settings["threshold"]), [], 0, 0)
                record.waited_for_workers_s = wait_for_free_workers(conn)
                churn(conn, record, jobs_per_tick, churn_s, stop, progress, n * ticks // 2, ticks)
                runs.append(record)
        finally:
            run(conn, "lab/reset_autovacuum_naptime")
            run(conn, "lab/reload_conf")
            run(conn, "lab/jobs_autovacuum", {"enabled": True, **DEFAULTS})
    return AutovacuumComparison(
        runs=runs, naptime=naptime_seen, knobs=knobs, databases=databases, stopped=len(runs) < 2, **comparison
    )


def store_autovacuum_run(result: AutovacuumComparison, path: Path = STORED_DEFAULT_NAPTIME_RUN) -> Path:
    """Keep a run's measurements as JSON (what tools/record_default_naptime_run.py does)."""
    fields = asdict(result)
    fields.pop("guide")
    fields.pop("guess")
    fields["recorded_on"] = fields["recorded_on"] or datetime.now(timezone.utc).date().isoformat()
    for run_fields in fields["runs"]:  # a sample's time to the hundredth of a second is plenty
        run_fields["samples"] = [[round(t, 2), dead] for t, dead in run_fields["samples"]]
        run_fields["waited_for_workers_s"] = round(run_fields["waited_for_workers_s"], 2)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(fields, separators=(",", ":")) + "\n")
    return path


def stored_autovacuum_run(path: Path = STORED_DEFAULT_NAPTIME_RUN) -> AutovacuumComparison:
    """The stored run with the default naptime, as measured when it was recorded."""
    fields = json.loads(path.read_text())
    fields["runs"] = [ChurnRun(**{**r, "samples": [tuple(s) for s in r["samples"]]}) for r in fields["runs"]]
    return AutovacuumComparison(**fields)
