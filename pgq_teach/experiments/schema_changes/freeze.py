"""Lesson 10d, labs 1 and 2: a migration on a live queue.

Workers (the library's `Worker`, through its public interface only) run jobs
longer than their lease, kept alive by heartbeats. A report session opens a
transaction that reads `jobs` and stays open (ACCESS SHARE, held). Then
`ALTER TABLE jobs ADD COLUMN` (a lab-only column, `sql/lab/add_column_constant.sql`)
asks for ACCESS EXCLUSIVE:

- plain (lab 1, `freeze`), the request waits behind the report, and every claim,
  completion and heartbeat queues behind the request: claims per second drop to
  0 until the report ends, leases run out while the heartbeats wait, and the
  reaper hands those jobs out again afterwards;
- through `pgq_teach.migrate` (lab 2, `fix`), each try gives up after
  `lock_timeout_ms` and tries again after a backoff: the queue waits at most one
  lock timeout at a time, and the migration lands on the first try after the
  report ends.

The lock queue is read from `pg_locks` and `pg_stat_activity` while it stands
(`sql/lab/jobs_lock_queue.sql`, from a session that takes no lock on `jobs`).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from ... import Worker, charts, checks, migrate, queue, seeding, tables  # Worker: its public interface
from ...databases import Database
from ...guide import GuideFigure
from ...statements import run, run_one
from ..results import Comparison, Progress, Result, finish, guess_text, note, tell
from ..sessions import LAB_PREFIX, Session
from .rules import GUIDE_LEASES, GUIDE_SILENT

MIGRATION = "lab/add_column_constant"
KIND = "send_receipt"
BIN_S = 0.25
WARM_UP_S = 1.5  # claims are counted in bins this long, and shown per second


@dataclass(frozen=True)
class QueuedLock:
    """One row of the lock queue on jobs, as pg_locks and pg_stat_activity showed it."""

    pid: int
    who: str
    mode: str
    granted: bool
    state: str | None
    query: str
    blocked_by: list[int]


@dataclass(kw_only=True)
class LiveMigration(Result):
    """One run of a migration under load: the knobs, when the freeze began and ended,
    every claim's time, the lock queue at its longest, and what the workers counted."""

    lock_timeout_ms: int | None  # None: the plain ALTER, with no lock timeout
    rows: int
    workers: int
    concurrency: int
    lease_s: float
    work_ms: int
    hold_s: float
    reaper_every_s: float | None
    report_pid: int = 0
    migration_pid: int = 0
    queued_at_s: float = 0.0  # the migration's first lock request
    released_at_s: float = 0.0  # the report's transaction ended
    landed_at_s: float = 0.0  # the migration committed
    ended_at_s: float = 0.0
    claim_times: list[float] = field(default_factory=list)
    lock_queue: list[QueuedLock] = field(default_factory=list)
    lock_queue_at_s: float = 0.0
    tries: list[migrate.MigrationTry] = field(default_factory=list)
    leases_lost: int = 0  # held jobs the workers gave up: their leases ran out unrenewed
    leases_expired: int = 0  # jobs the reaper took back ('lease expired')
    runs: Counter[int] = field(default_factory=Counter)  # job id -> times its handler ran
    fenced: int = 0
    done: int = 0
    guide: GuideFigure = GUIDE_LEASES

    @property
    def label(self) -> str:
        return "plain ALTER" if self.lock_timeout_ms is None else f"lock_timeout {self.lock_timeout_ms} ms"

    @property
    def reaper_text(self) -> str:
        if self.reaper_every_s is None:
            return "only the workers reap"
        return f"a scheduled reaper every {self.reaper_every_s:g} s"

    @property
    def run_again(self) -> int:
        """Jobs whose handler ran more than once."""
        return sum(1 for n in self.runs.values() if n > 1)

    def claims_between(self, start_s: float, end_s: float) -> int:
        return sum(1 for t in self.claim_times if start_s <= t < end_s)

    @property
    def claims_while_queued(self) -> int:
        """Claims that returned after the lock queue was read and before the report ended:
        none can while the plain ALTER waits."""
        return self.claims_between(self.lock_queue_at_s, self.released_at_s)

    @property
    def longest_gap_s(self) -> float:
        """The longest time with no claim at all, from the migration's first request to
        its landing."""
        inside = [t for t in self.claim_times if self.queued_at_s <= t <= self.landed_at_s]
        times = [self.queued_at_s, *inside, self.landed_at_s]
        return max(b - a for a, b in zip(times, times[1:], strict=False))

    def per_second(self) -> list[tuple[float, float]]:
        """(bin start, claims per second) over the whole run."""
        bins = Counter(int(t // BIN_S) for t in self.claim_times)
        last = int(self.ended_at_s // BIN_S)
        return [(i * BIN_S, bins.get(i, 0) / BIN_S) for i in range(last + 1)]

    def waiting_behind_migration(self) -> list[QueuedLock]:
        """Lock requests in the queue that wait for the migration."""
        return [q for q in self.lock_queue if not q.granted and self.migration_pid in q.blocked_by]

    def comparison(self) -> list[Comparison]:
        return [
            ("longest time with no claim, s", self.guess_cell, round(self.longest_gap_s, 2), None),
            ("claims while the report stayed open", None, self.claims_while_queued, None),
            ("leases that ran out (workers gave up)", None, self.leases_lost, None),
            ("jobs the reaper took back", None, self.leases_expired, None),
            ("jobs run again", None, self.run_again, "possible: a slow worker is not a dead one"),
        ]

    def queue_table(self) -> tables.Table:
        """The lock queue on jobs at its longest: who holds or waits for which lock, behind whom."""
        return tables.Table(
            tables.columns("pid", "session", "lock", "granted", "state", "blocked by"),
            [
                [
                    str(q.pid),
                    q.who,
                    q.mode,
                    "granted" if q.granted else "WAITING",
                    q.state,
                    ", ".join(map(str, q.blocked_by)) or None,
                ]
                for q in self.lock_queue
            ],
            css="pgq-lock-queue",
        )

    def report(self) -> list[str]:
        lines = [
            f"{self.label}: ALTER TABLE jobs ADD COLUMN under {self.workers} workers x {self.concurrency}"
            f"{self.stopped_note}",
            f"  knobs: lease {self.lease_s:g} s; jobs of {self.work_ms / 4:g} to {self.work_ms * 1.75:g} ms; "
            f"{self.rows:,} jobs queued; {self.reaper_text}; a report holds ACCESS SHARE for "
            f"{self.hold_s:g} s",
            f"  the migration asked at {self.queued_at_s:.2f} s, the report ended at "
            f"{self.released_at_s:.2f} s, the migration landed at {self.landed_at_s:.2f} s",
            f"  the lock queue on jobs at {self.lock_queue_at_s:.2f} s: "
            f"{tables.count(len(self.lock_queue), 'session')} holding or waiting, "
            f"{tables.count(len(self.waiting_behind_migration()), 'request')} waiting for the migration "
            "(queue_table() lists them)",
        ]
        head = [note(line) for line in lines[:3]] + lines[3:]  # the lock queue is its own table
        if self.tries:
            head += [note("  the migration's tries:"), *(note(f"    {t}") for t in self.tries)]
        lines = [
            f"  claims while the report stayed open: {self.claims_while_queued}; longest time with no "
            f"claim {self.longest_gap_s:.2f} s (your guess: {guess_text(self.guess, ' s')})",
            f"  leases that ran out (the workers gave the job up): {self.leases_lost}; jobs the reaper "
            f"took back: {self.leases_expired}; jobs run again: {self.run_again}; "
            f"completions fenced: {self.fenced}",
            note(f"  {tables.count(self.done, 'job')} done in {self.ended_at_s:.1f} s"),
        ]
        return head + lines + self.footer() + [note(f"  {GUIDE_SILENT}")]

    def chart(self) -> charts.Chart:
        """Claims per second over the run (the summary gives when the migration asked and landed)."""
        return claims_chart([self])


def claims_chart(runs: list[LiveMigration]) -> charts.Chart:
    """Claims per second, one line a run, with rules where each run's report ended."""
    rows = [
        {"time": t, "claims per second": rate, "run": r.label} for r in runs for t, rate in r.per_second()
    ]
    return charts.lines(
        rows,
        x="time",
        y="claims per second",
        series="run",
        heading="Claims per second; the report holds jobs open from 1.5 s",
        x_axis=charts.axis("time since the workers started", "s", fmt=",.1f"),
        y_axis=charts.axis("claims", "per second"),
    )


def job_seconds(job_id: int, work_ms: int) -> float:
    """How long job `job_id` takes: from a quarter to 1.75 times `work_ms`, spread by id (the golden
    ratio's fraction), so the executors finish at different times and claims come steadily."""
    return work_ms / 1000 * (0.25 + 1.5 * ((job_id * 0.618_034) % 1))


def scheduled_reaper(
    db: Database, every_s: float, stop: threading.Event, failures: list[BaseException]
) -> None:
    """The guide's reaper "every minute from a scheduler", every `every_s` here: like cron, it starts
    each run on a connection of its own whether or not the last one has finished."""
    runs: list[threading.Thread] = []

    def reap() -> None:
        try:
            with db.connection(application_name=f"{LAB_PREFIX} scheduled reaper") as conn:
                run(conn, "reap")
        except BaseException as exc:  # raised again by the lab  # noqa: BLE001
            failures.append(exc)

    while not stop.wait(every_s):
        runs.append(threading.Thread(target=reap, daemon=True))
        runs[-1].start()
    for t in runs:
        t.join(30)


def freeze(db: Database, **knobs: Any) -> LiveMigration:
    """Lab 1: the plain ALTER behind an open report (no lock timeout)."""
    return live_migration(db, lock_timeout_ms=None, **knobs)


def fix(
    db: Database, *, lock_timeout_ms: int = migrate.DEFAULT_LOCK_TIMEOUT_MS, **knobs: Any
) -> LiveMigration:
    """Lab 2: the same migration through `pgq_teach.migrate`, with a lock timeout and retries."""
    return live_migration(db, lock_timeout_ms=lock_timeout_ms, **knobs)


def live_migration(
    db: Database,
    *,
    lock_timeout_ms: int | None,
    rows: int = 5_000,
    workers: int = 2,
    concurrency: int = 8,
    lease_s: float = 1.0,
    work_ms: int = 800,
    hold_s: float = 3.0,
    reaper_every_s: float | None = 0.5,
    tries: int = 10,
    backoff_s: float = 0.2,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> LiveMigration:
    """Run `workers` Workers on `rows` queued jobs; after a second, hold a report's
    transaction open on jobs for `hold_s` and run the migration behind it, plainly
    (`lock_timeout_ms` None) or through `migrate`."""
    if lock_timeout_ms is not None:
        lock_timeout_ms = checks.whole_number("lock_timeout_ms", lock_timeout_ms, 10, 10_000)
    rows = checks.whole_number("rows", rows, 100, 1_000_000)
    workers = checks.whole_number("workers", workers, 1, 8)
    concurrency = checks.whole_number("concurrency", concurrency, 1, 32)
    lease_s = checks.seconds("lease_s", lease_s, 0.5, 60)
    work_ms = checks.whole_number("work_ms", work_ms, 0, 60_000)
    hold_s = checks.seconds("hold_s", hold_s, 0.5, 60)
    if reaper_every_s is not None:
        reaper_every_s = checks.seconds("reaper_every_s", reaper_every_s, 0.1, 60)
    tries = checks.whole_number("tries", tries, 1, 100)
    backoff_s = checks.seconds("backoff_s", backoff_s, 0, 10)
    result = finish(
        LiveMigration,
        db,
        guess=guess,
        lock_timeout_ms=lock_timeout_ms,
        rows=rows,
        workers=workers,
        concurrency=concurrency,
        lease_s=lease_s,
        work_ms=work_ms,
        hold_s=hold_s,
        reaper_every_s=reaper_every_s,
    )
    with db.connection() as conn:
        run(conn, "lab/drop_lab_columns")
        seeding.reset_and_seed(conn, KIND, rows)
    lock = threading.Lock()
    began = time.monotonic()

    def now() -> float:
        return time.monotonic() - began

    def on_event(name: str, job: queue.Job | None) -> None:
        if name == "claimed":
            with lock:
                result.claim_times.append(now())

    def handle(job: queue.Job) -> None:
        with lock:
            result.runs[job.id] += 1
        time.sleep(job_seconds(job.id, work_ms))

    pool = [
        Worker(
            make_conninfo(db.dsn, application_name=f"{LAB_PREFIX} worker {n + 1}"),
            {KIND: handle},
            concurrency=concurrency,
            lease=lease_s,
            poll=0.2,
            on_event=on_event,
        )
        for n in range(workers)
    ]
    failures: list[BaseException] = []

    def guard(fn: Any) -> Any:
        def body() -> None:
            try:
                fn()
            except BaseException as exc:  # raised again below  # noqa: BLE001
                failures.append(exc)

        return body

    threads = [threading.Thread(target=guard(w.run), daemon=True) for w in pool]
    reaper_stop = threading.Event()
    if reaper_every_s is not None:
        threads.append(
            threading.Thread(
                target=guard(lambda: scheduled_reaper(db, reaper_every_s, reaper_stop, failures)), daemon=True
            )
        )
    report = Session(db, "report")
    migration_session: Session | None = None
    migrating: threading.Thread | None = None
    total = 4
    try:
        for t in threads:
            t.start()
        tell(progress, 0, total)
        time.sleep(WARM_UP_S)  # the queue in its stride before the report opens
        report.begin()
        report.run("lab/count_jobs", label="the report reads jobs")  # ACCESS SHARE, kept till commit
        report.wait_done()
        result.report_pid = report.pid
        if lock_timeout_ms is None:
            migration_session = Session(db, "migration")
            result.migration_pid = migration_session.pid
            result.queued_at_s = now()
            migration_session.run(MIGRATION, label="ALTER TABLE jobs ADD COLUMN")
        else:
            timeout_ms = lock_timeout_ms

            def through_helper() -> None:  # its session sets migration_pid as it opens
                migrate_with_timeout(db, result, timeout_ms, tries, backoff_s, now)

            migrating = threading.Thread(target=guard(through_helper), daemon=True)
            result.queued_at_s = now()
            migrating.start()
        tell(progress, 1, total)
        watch_lock_queue(db, result, now, until_s=result.queued_at_s + hold_s, stop=stop)
        # The moment the report's COMMIT is sent: the ALTER can be granted as soon as the server
        # commits, which another thread may see before this one reads the clock after the reply.
        result.released_at_s = now()
        report.commit()
        report.wait_done()
        tell(progress, 2, total)
        if migration_session is not None:
            migration_session.wait_done(timeout=60)
            step = migration_session.timeline[-1]
            # The step's end on this run's clock (the session's times count from its opening).
            # queued_at_s + step.seconds came out early by the hop to the session's thread,
            # and so, once, before the report's release.
            result.landed_at_s = migration_session.opened + step.ended - began
        elif migrating is not None:
            migrating.join(120)
        tell(progress, 3, total)
        if not (stop is not None and stop.is_set()):
            time.sleep(max(2.0, 2 * lease_s))  # the reaper's turn: leases that ran out are taken back
    finally:
        reaper_stop.set()
        for w in pool:
            w.stop()
        for t in threads:
            t.join(30)
        result.ended_at_s = now()
        report.close()
        if migration_session is not None:
            migration_session.close()
    if failures:
        raise failures[0]
    result.stopped = bool(stop is not None and stop.is_set())
    result.leases_lost = sum(w.report.leases_lost for w in pool)
    result.fenced = sum(w.report.fenced for w in pool)
    result.done = sum(w.report.done for w in pool)
    with db.connection() as conn:
        result.leases_expired = run_one(conn, "lab/leases_expired")[0]
        run(conn, "lab/drop_lab_columns")
    tell(progress, total, total)
    return result


def migrate_with_timeout(
    db: Database, result: LiveMigration, lock_timeout_ms: int, tries: int, backoff_s: float, now: Any
) -> None:
    """The migration through the library's helper; records every try and the landing."""

    def on_try(attempt: migrate.MigrationTry) -> None:
        result.tries.append(attempt)

    with db.connection(autocommit=False, application_name=f"{LAB_PREFIX} session migration") as conn:
        result.migration_pid = conn.info.backend_pid
        outcome = migrate.migrate(
            db,
            MIGRATION,
            conn=conn,
            lock_timeout_ms=lock_timeout_ms,
            tries=tries,
            backoff_s=backoff_s,
            on_try=on_try,
        )
    result.landed_at_s = now()
    result.tries = outcome.tries


def watch_lock_queue(
    db: Database, result: LiveMigration, now: Any, *, until_s: float, stop: threading.Event | None
) -> None:
    """Read the lock queue on jobs every 0.1 s until `until_s`, keeping the reading
    with the most requests waiting for the migration."""
    with db.connection() as conn:
        while now() < until_s and not (stop is not None and stop.is_set()):
            rows = run(conn, "lab/jobs_lock_queue", row_factory=dict_row).fetchall()
            seen = [
                QueuedLock(
                    r["pid"],
                    who(r["application_name"]),
                    r["mode"],
                    r["granted"],
                    r["state"],
                    r["query"],
                    list(r["blocked_by"]),
                )
                for r in rows
            ]
            waiting = sum(1 for q in seen if not q.granted and result.migration_pid in q.blocked_by)
            if waiting >= len(result.waiting_behind_migration()):
                result.lock_queue, result.lock_queue_at_s = seen, now()
            time.sleep(0.1)


def who(application_name: str | None) -> str:
    """A lab session's short name ('worker 1', 'session report')."""
    name = application_name or ""
    return name[len(LAB_PREFIX) :].strip() if name.startswith(LAB_PREFIX) else name or "–"
