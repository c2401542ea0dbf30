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
the shared session helpers later. Results are plain dataclasses with
`server_version`, `guess`, `guide` and `stopped`.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from .. import queue
from ..databases import Database
from ..errors import BadInput
from ..statements import run, run_one
from ..worker import Worker

Progress = Callable[[int, int], None]
LAB_ROLE = "pgq_lab_idle_worker"  # a lab role, never the real queue_worker
GUIDE_CLEANUP = "delete done jobs in batches, e.g. 5,000 at a time; small batches keep each transaction short"
GUIDE_PARTITION = "dropping a whole partition avoids the VACUUM cost of a bulk DELETE (the partitioning docs)"
GUIDE_TIMEOUT = "ALTER ROLE queue_worker SET idle_in_transaction_session_timeout = '1min' (default 0, off)"


def check_count(name: str, value: Any, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise BadInput(f"{name} must be a whole number from {low:,} to {high:,}, got {value!r}")
    return value


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
    def oldest_session_s(self) -> float:
        ages = [s["xact_age"].total_seconds() for s in self.stats.sessions if s.get("xact_age") is not None]
        return max(ages, default=0.0)


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
        self.rate = check_count("rate", rate, 1, 5_000)
        self.workers_wanted = check_count("workers", workers, 1, 16)
        self.work_ms = check_count("work_ms", work_ms, 0, 10_000)
        self.stuck_session = stuck_session
        self.stop_event = threading.Event()
        self.threads: list[threading.Thread] = []
        self.workers: list[Worker] = []
        self.enqueued = 0
        self.stuck: psycopg.Connection | None = None
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


# --- cleanup in batches against one big DELETE ------------------------------------


@dataclass
class DeleteRun:
    way: str
    rows: int
    seconds: float
    longest_transaction_s: float
    transactions: int
    dead_rows: int
    transaction_ms: list[float] = field(default_factory=list)

    @property
    def median_transaction_ms(self) -> float:
        ms = sorted(self.transaction_ms)
        return ms[len(ms) // 2] if ms else 0.0


@dataclass
class CleanupComparison:
    rows: int
    batch: int
    batched: DeleteRun
    bulk: DeleteRun
    server_version: str
    guess: int | None = None
    guide: str = GUIDE_CLEANUP
    stopped: bool = False

    def summary(self) -> str:
        lines = [f"{self.rows:,} done jobs deleted two ways (PostgreSQL {self.server_version}):"]
        for r in (self.batched, self.bulk):
            lines.append(
                f"  {r.way:<22} {r.seconds:6.2f} s, {r.transactions:>3} transaction(s), longest "
                f"{r.longest_transaction_s * 1000:7.1f} ms, median {r.median_transaction_ms:7.1f} ms, "
                f"dead rows left {r.dead_rows:,}"
            )
        lines.append(f"guide: {self.guide}")
        return "\n".join(lines)


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


def timed_cleanup(conn, batch: int) -> tuple[int, list[float]]:
    """queue.cleanup's loop, timing each batch's transaction: (rows, ms of each transaction)."""
    total, times = 0, []
    while True:
        began = time.perf_counter()
        with conn.transaction():
            n = run(conn, "cleanup_done", {"batch": batch}).rowcount
        times.append((time.perf_counter() - began) * 1000)
        total += n
        if n < batch:
            return total, times


def cleanup_vs_bulk_delete(
    db: Database,
    *,
    rows: int = 200_000,
    batch: int = 5_000,
    guess: int | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> CleanupComparison:
    """Delete `rows` done jobs with cleanup (batches) and again with one DELETE.
    Autovacuum is turned off for the run, so dead rows are counted, not raced."""
    check_count("rows", rows, 1_000, 1_000_000)
    check_count("batch", batch, 1, rows)
    progress = progress or (lambda d, t: None)
    results = []
    with db.connection() as conn:
        run(conn, "lab/jobs_autovacuum", {"enabled": False, "scale_factor": 0.2, "threshold": 50})
        try:
            for n, way in enumerate(("cleanup in batches", "one big DELETE")):
                if stop is not None and stop.is_set():
                    break
                run(conn, "lab/reset_jobs")
                run(conn, "lab/seed_done_jobs", {"count": rows, "distinct": True})
                run(conn, "lab/vacuum_jobs")  # start both runs with no dead rows
                run(conn, "lab/flush_stats")
                before = wait_for_dead(conn, "jobs", 0)
                began = time.perf_counter()
                if way == "cleanup in batches":
                    deleted, times = timed_cleanup(conn, batch)
                else:
                    with conn.transaction():
                        deleted = run(conn, "lab/delete_all_done").rowcount
                    times = [(time.perf_counter() - began) * 1000]
                seconds = time.perf_counter() - began
                run(conn, "lab/flush_stats")
                dead = wait_for_dead(conn, "jobs", before + deleted) - before
                results.append(DeleteRun(way, deleted, seconds, max(times) / 1000, len(times), dead, times))
                progress(n + 1, 2)
        finally:
            run(conn, "lab/jobs_autovacuum", {"enabled": True, "scale_factor": 0.2, "threshold": 50})
    stopped = len(results) < 2
    empty = DeleteRun("not run", 0, 0.0, 0.0, 0, 0, [])
    return CleanupComparison(
        rows,
        batch,
        results[0] if results else empty,
        results[1] if len(results) > 1 else empty,
        db.server.version,
        guess,
        stopped=stopped,
    )


# --- partitioned history: drop a day, or delete it --------------------------------


@dataclass
class PartitionComparison:
    rows_per_day: int
    delete_s: float
    drop_s: float
    dead_after_delete: int
    dead_after_drop: int
    partitions_left: list[str]
    server_version: str
    guess: int | None = None
    guide: str = GUIDE_PARTITION
    stopped: bool = False
    drop_locks_on_parent: list[str] = field(default_factory=list)  # what the DROP held on jobs_history

    def summary(self) -> str:
        return "\n".join(
            [
                (
                    f"one day of history, {self.rows_per_day:,} rows, removed two ways "
                    f"(PostgreSQL {self.server_version}):"
                ),
                (
                    f"  DELETE the day's rows : {self.delete_s * 1000:8.1f} ms, "
                    f"dead rows left {self.dead_after_delete:,}"
                ),
                (
                    f"  DROP the day's table  : {self.drop_s * 1000:8.1f} ms, "
                    f"dead rows left {self.dead_after_drop:,}"
                ),
                f"  until it commits, the DROP holds on jobs_history: {', '.join(self.drop_locks_on_parent)}",
                f"partitions left: {', '.join(self.partitions_left)}",
                f"guide: {self.guide}",
            ]
        )


def partition_name(day: date) -> str:
    return f"jobs_history_{day:%Y%m%d}"


def partition_drop_vs_delete(
    db: Database,
    *,
    rows_per_day: int = 50_000,
    guess: int | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> PartitionComparison:
    """Three days of history in day partitions; delete day 1's rows, drop day 2's partition."""
    check_count("rows_per_day", rows_per_day, 1_000, 1_000_000)
    progress = progress or (lambda d, t: None)
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
        progress(1, 3)
        run(conn, "lab/flush_stats")
        deleted_day, dropped_day = days[0], days[1]
        began = time.perf_counter()
        run(
            conn,
            "lab/history_delete_day",
            {"day": deleted_day.isoformat(), "next_day": (deleted_day + timedelta(days=1)).isoformat()},
        )
        delete_s = time.perf_counter() - began
        progress(2, 3)
        began = time.perf_counter()
        with conn.transaction(), db.connection() as other:
            run(conn, "lab/history_drop_day", idents={"name": partition_name(dropped_day)})
            drop_s = time.perf_counter() - began
            # asked from another session before the DROP commits: the parent's lock it holds
            held = run(other, "lab/locks_held_on", {"pid": conn.info.backend_pid, "table": "jobs_history"})
            parent_locks = [mode for (mode,) in held.fetchall()]
        run(conn, "lab/flush_stats")
        wait_for_dead(conn, partition_name(deleted_day), rows_per_day)
        tables = dead_rows(conn, "jobs_history")
        progress(3, 3)
    left = sorted(t for t in tables if t != "jobs_history")
    dead_deleted = tables.get(partition_name(deleted_day), (0, 0))[1]
    dead_dropped = tables.get(partition_name(dropped_day), (0, 0))[1]  # gone: nothing left to count
    return PartitionComparison(
        rows_per_day,
        delete_s,
        drop_s,
        dead_deleted,
        dead_dropped,
        left,
        db.server.version,
        guess,
        drop_locks_on_parent=parent_locks,
    )


# --- idle_in_transaction_session_timeout on the worker role ------------------------


@dataclass
class TimeoutDemo:
    timeout_s: float
    role: str
    setting_seen: str
    ended_after_s: float
    sqlstate: str | None
    error: str
    session_gone: bool
    server_version: str
    guess: int | None = None
    guide: str = GUIDE_TIMEOUT
    stopped: bool = False
    skipped: str = ""

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
                f"guide: {self.guide}",
            ]
        )


def idle_timeout(db: Database, *, timeout_s: float = 1.0, guess: int | None = None) -> TimeoutDemo:
    """Make a lab worker role with sql/roles.sql and a short timeout, open a
    transaction as that role and forget it; the server ends the session and
    the client sees 25P03."""
    if not isinstance(timeout_s, (int, float)) or not 0.2 <= timeout_s <= 10:
        raise BadInput(f"timeout_s must be from 0.2 to 10 seconds, got {timeout_s!r}")
    password = secrets.token_hex(12)
    with db.connection() as admin:
        drop_lab_role(admin)
        try:
            # the production statement, sql/roles.sql, for a lab role with a short timeout
            params = {"password": password, "idle_timeout": f"{int(timeout_s * 1000)}ms"}
            run(admin, "roles", params, idents={"role": LAB_ROLE})
        except psycopg.errors.InsufficientPrivilege as exc:
            drop_lab_role(admin)
            return TimeoutDemo(
                timeout_s,
                LAB_ROLE,
                "",
                0.0,
                None,
                "",
                False,
                db.server.version,
                guess,
                skipped=f"this server's user may not create roles ({exc.diag.message_primary})",
            )
        try:
            with psycopg.connect(make_conninfo(db.dsn, user=LAB_ROLE, password=password)) as worker:
                setting = run_one(worker, "lab/session_settings")[1]
                pid = worker.info.backend_pid
                worker.commit()
                run(worker, "lab/open_transaction")  # BEGIN ... and the worker forgets it
                began = time.monotonic()
                time.sleep(timeout_s + 0.5)
                sqlstate, error = None, ""
                try:
                    run(worker, "lab/count_jobs")
                except psycopg.Error as exc:
                    sqlstate, error = exc.sqlstate, (exc.diag.message_primary or str(exc)).strip()
                ended = time.monotonic() - began
            alive = run_one(admin, "lab/session_alive", {"pid": pid})[0]
        finally:
            drop_lab_role(admin)
    return TimeoutDemo(
        timeout_s, LAB_ROLE, setting, ended, sqlstate, error, not alive, db.server.version, guess
    )


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
GUIDE_AUTOVACUUM = (
    "ALTER TABLE jobs SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000)"
)
LAB_NAPTIME = "1s"


@dataclass
class ChurnRun:
    settings: str
    scale_factor: float
    threshold: int
    samples: list[tuple[float, int]]  # (seconds, n_dead_tup)
    autovacuums: int
    jobs: int
    vacuums_so_far: list[int] = field(default_factory=list)  # autovacuums this run, at each sample

    @property
    def dead_before_first_autovacuum(self) -> int:
        """The most dead rows seen before autovacuum first finished on jobs in this run."""
        first = next((i for i, n in enumerate(self.vacuums_so_far) if n > 0), len(self.samples))
        return max((d for _, d in self.samples[:first]), default=0)

    @property
    def peak_dead(self) -> int:
        return max((d for _, d in self.samples), default=0)

    @property
    def mean_dead(self) -> float:
        """Dead rows averaged over the run: less sensitive than the peak to one
        late autovacuum worker on a busy machine."""
        return sum(d for _, d in self.samples) / len(self.samples) if self.samples else 0.0

    def starts_at(self, rows: int) -> float:
        return self.threshold + self.scale_factor * rows


@dataclass
class AutovacuumComparison:
    base_rows: int
    seconds: float
    jobs_per_tick: int
    runs: list[ChurnRun]
    naptime: str
    server_version: str
    guess: int | None = None
    guide: str = GUIDE_AUTOVACUUM
    stopped: bool = False
    skipped: str = ""

    def run(self, settings: str) -> ChurnRun:
        return next(r for r in self.runs if r.settings == settings)

    def summary(self) -> str:
        if self.skipped:
            return f"skipped: {self.skipped}"
        lines = [
            (
                f"{self.seconds:g} s of churn on a jobs table of {self.base_rows:,} done rows, "
                f"autovacuum_naptime {self.naptime} (PostgreSQL {self.server_version}):"
            )
        ]
        for r in self.runs:
            lines.append(
                f"  {r.settings:<8} (threshold {r.threshold:,} + {r.scale_factor:g} x rows = starts at "
                f"{r.starts_at(self.base_rows):,.0f} dead): {r.jobs:,} jobs, {r.autovacuums} autovacuum(s), "
                f"peak n_dead_tup {r.peak_dead:,}"
            )
        lines.append(f"guide: {self.guide}")
        return "\n".join(lines)

    def chart_svg(self, width: int = 720, height: int = 260) -> str:
        """n_dead_tup over time, one line per setting."""
        left, right, top, bottom = 70, 110, 24, 30
        plot_w, plot_h = width - left - right, height - top - bottom
        peak = max([r.peak_dead for r in self.runs] + [1])
        span = max([t for r in self.runs for t, _ in r.samples] + [1e-9])
        body = [
            f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#999"/>',
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#999"/>',
        ]
        for i in range(5):
            y = top + plot_h - plot_h * i / 4
            body.append(f'<text x="{left - 4}" y="{y + 4:.0f}" text-anchor="end">{peak * i / 4:,.0f}</text>')
            x = left + plot_w * i / 4
            body.append(
                f'<text x="{x:.0f}" y="{height - 12}" text-anchor="middle">{span * i / 4:.0f} s</text>'
            )
        for r, colour in zip(self.runs, ("#d62728", "#1f77b4"), strict=False):
            points = " ".join(
                f"{left + plot_w * t / span:.1f},{top + plot_h - plot_h * d / peak:.1f}" for t, d in r.samples
            )
            body.append(
                f'<polyline class="pgq-line" points="{points}" fill="none" '
                f'stroke="{colour}" stroke-width="1.5"/>'
            )
            if r.samples:
                y = top + plot_h - plot_h * r.samples[-1][1] / peak
                body.append(f'<text x="{left + plot_w + 4}" y="{y:.0f}" fill="{colour}">{r.settings}</text>')
        title = "n_dead_tup on jobs under the same churn"
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" class="pgq-chart" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11"><title>{title}</title>'
            f'<text x="4" y="14" font-size="12">{title}</text>' + "".join(body) + "</svg>"
        )


def churn(
    conn,
    jobs_per_tick: int,
    seconds: float,
    stop: threading.Event | None,
    progress: Progress,
    done_before: int,
    total_ticks: int,
) -> tuple[list[tuple[float, int]], int, int, list[int]]:
    """Enqueue, claim and complete `jobs_per_tick` jobs every 0.1 s; sample n_dead_tup
    and how many autovacuums have finished on jobs so far."""
    samples, counts, jobs, ticks = [], [], 0, 0
    first = run(conn, "stats_vacuum").fetchone()
    runs_before = first[3] if first else 0
    began = time.monotonic()
    while time.monotonic() - began < seconds and not (stop is not None and stop.is_set()):
        run(conn, "lab/seed_jobs", {"kind": "send_receipt", "count": jobs_per_tick})
        queue.claim(conn, batch=jobs_per_tick)
        run(conn, "lab/complete_running")
        run(conn, "lab/flush_stats")
        jobs += jobs_per_tick
        row = run(conn, "stats_vacuum").fetchone()
        samples.append((time.monotonic() - began, row[1] if row else 0))
        counts.append((row[3] if row else 0) - runs_before)
        ticks += 1
        progress(done_before + ticks, total_ticks)
        time.sleep(max(0.0, began + ticks * 0.1 - time.monotonic()))
    row = run(conn, "stats_vacuum").fetchone()
    return samples, jobs, (row[3] if row else 0) - runs_before, counts


def autovacuum_per_table(
    db: Database,
    *,
    base_rows: int = 100_000,
    seconds: float = 15.0,
    jobs_per_tick: int = 200,
    guess: int | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> AutovacuumComparison:
    """The same churn twice on `jobs`: with the server's defaults, then with the
    guide's per-table settings, sampling n_dead_tup. Autovacuum looks at a
    database once a minute by default, too rarely to see in a lesson, so the
    lab shortens autovacuum_naptime to 1 s, only on a server the course started
    itself, and resets it afterwards. On another server it skips, saying why."""
    check_count("base_rows", base_rows, 1_000, 1_000_000)
    check_count("jobs_per_tick", jobs_per_tick, 1, 5_000)
    if not isinstance(seconds, (int, float)) or not 1 <= seconds <= 120:
        raise BadInput(f"seconds must be from 1 to 120, got {seconds!r}")
    progress = progress or (lambda d, t: None)
    if not owns_server(db):
        return AutovacuumComparison(
            base_rows,
            seconds,
            jobs_per_tick,
            [],
            "",
            db.server.version,
            guess,
            skipped="autovacuum_naptime is a server-wide setting, and this is your own server "
            "(PGQ_DSN), so the lab does not change it; at the default of 1min, a run of "
            f"{seconds:g} s may see no autovacuum at all",
        )
    ticks = int(seconds / 0.1) * 2
    runs = []
    with db.connection() as conn:
        run(conn, "lab/set_autovacuum_naptime", {"naptime": LAB_NAPTIME})
        run(conn, "lab/reload_conf")
        try:
            time.sleep(0.2)  # the launcher picks up the reload
            naptime = run_one(conn, "lab/show_naptime")[0]
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
                samples, jobs, autovacuums, counts = churn(
                    conn, jobs_per_tick, seconds, stop, progress, n * ticks // 2, ticks
                )
                runs.append(
                    ChurnRun(
                        name,
                        settings["scale_factor"],
                        int(settings["threshold"]),
                        samples,
                        autovacuums,
                        jobs,
                        counts,
                    )
                )
        finally:
            run(conn, "lab/reset_autovacuum_naptime")
            run(conn, "lab/reload_conf")
            run(conn, "lab/jobs_autovacuum", {"enabled": True, **DEFAULTS})
    return AutovacuumComparison(
        base_rows, seconds, jobs_per_tick, runs, naptime, db.server.version, guess, stopped=len(runs) < 2
    )
