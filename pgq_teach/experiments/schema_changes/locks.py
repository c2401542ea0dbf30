"""Lesson 10d, lab 3: what each kind of schema change locks, and how long it holds it.

For each table size, `jobs` is filled with that many done jobs and each change runs
in a transaction of its own (CREATE INDEX CONCURRENTLY on a session of its own, as
it must). While the change's transaction is still open, a second session reads the
locks it holds on `jobs` (`sql/lab/locks_held_on.sql`), and two probes, each with
a short lock timeout, try a read (`lab/count_jobs`) and a write (`enqueue`, what a
claim, a completion or a heartbeat also needs: ROW EXCLUSIVE): whichever times
out is what the queue would wait for. The changes:

- ADD COLUMN with a constant default (`lab/add_column_constant`): since PostgreSQL 11
  the default is stored in the catalog, no row is rewritten (same relfilenode);
- ADD COLUMN with a volatile default (`lab/add_column_volatile`): every row is
  rewritten into a new file (a new relfilenode), under ACCESS EXCLUSIVE;
- CREATE INDEX (`lab/create_lab_index`): SHARE, which stops every write;
- CREATE INDEX CONCURRENTLY (`lab/create_lab_index_concurrently`): SHARE UPDATE
  EXCLUSIVE, which stops none; its lock is read while it waits for an older writer
  (a transaction that enqueued a job and stays open), and it is timed on a second
  build with no writer. A concurrent build that fails
  (`lab/create_lab_unique_concurrently`) leaves an INVALID index;
- ADD CONSTRAINT ... CHECK, validated at once (`lab/add_check`), beside NOT VALID
  (`lab/add_check_not_valid`) then VALIDATE CONSTRAINT (`lab/validate_lab_check`).
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field

import psycopg

from ... import charts, checks, seeding, tables
from ...databases import Database
from ...errors import BadInput
from ...guide import GuideFigure
from ...statements import run, run_one
from ..results import Comparison, Progress, Result, finish, guess_text, note, tell
from ..sessions import LAB_PREFIX
from .rules import GUIDE_DOCS, GUIDE_SILENT

PROBE_TIMEOUT = "100ms"  # the probes' lock timeout: long enough to queue, short enough to give up
KIND = "send_receipt"

# (what the lesson calls it, the statement, runs in a transaction)
CHANGES = (
    ("ADD COLUMN, constant default", "lab/add_column_constant"),
    ("ADD COLUMN, volatile default", "lab/add_column_volatile"),
    ("CREATE INDEX", "lab/create_lab_index"),
    ("CREATE INDEX CONCURRENTLY", "lab/create_lab_index_concurrently"),
    ("ADD CONSTRAINT CHECK", "lab/add_check"),
    ("ADD CONSTRAINT CHECK NOT VALID", "lab/add_check_not_valid"),
    ("VALIDATE CONSTRAINT", "lab/validate_lab_check"),
)
CONCURRENT = "lab/create_lab_index_concurrently"
INDEX = "lab_kind_idx"
FAILED_INDEX = "lab_kind_key"


# PostgreSQL's table lock modes, weakest first (each conflicts with more modes than the one before).
MODES = (
    "AccessShareLock",
    "RowShareLock",
    "RowExclusiveLock",
    "ShareUpdateExclusiveLock",
    "ShareLock",
    "ShareRowExclusiveLock",
    "ExclusiveLock",
    "AccessExclusiveLock",
)


@dataclass
class Change:
    """One change at one table size: the lock it held on jobs, whether a read and a
    write had to wait for it, how long it took, and whether it rewrote the table."""

    change: str
    statement: str
    rows: int
    locks: list[str]
    read_waits: bool
    write_waits: bool
    took_ms: float
    rewrote: bool

    def __str__(self) -> str:
        read = "waits" if self.read_waits else "passes"
        write = "waits" if self.write_waits else "passes"
        rewrote = ", rewrote jobs" if self.rewrote else ""
        return (
            f"{self.change} at {self.rows:,} rows: {self.lock}, a read {read}, a write {write}, "
            f"{tables.milliseconds(self.took_ms)}{rewrote}"
        )

    @property
    def lock(self) -> str:
        """The strongest lock it held on jobs (a rewrite also takes SHARE as it rebuilds the indexes)."""
        return max(self.locks, key=MODES.index) if self.locks else "–"


@dataclass(kw_only=True)
class LockSurvey(Result):
    """Every change at every size, and what the failed concurrent build left."""

    sizes: list[int]
    probe_timeout: str = PROBE_TIMEOUT
    changes: list[Change] = field(default_factory=list)
    invalid_after_failed_build: list[str] = field(default_factory=list)
    failed_build_error: str = ""
    guess: float | None = None  # ms the volatile default takes at the larger size
    guide: GuideFigure = GUIDE_DOCS

    def at(self, change: str, rows: int) -> Change:
        return next(c for c in self.changes if c.change == change and c.rows == rows)

    def took_ms(self, change: str, rows: int) -> int | str:
        """The change's time at `rows`, or why there is none: Stop can end the survey first."""
        found = [c for c in self.changes if c.change == change and c.rows == rows]
        return round(found[0].took_ms) if found else "not run: stopped before it"

    def comparison(self) -> list[Comparison]:
        big = max(self.sizes)
        return [
            (
                f"volatile default at {big:,} rows, ms",
                self.guess_cell,
                self.took_ms("ADD COLUMN, volatile default", big),
                None,
            ),
            (
                f"constant default at {big:,} rows, ms",
                None,
                self.took_ms("ADD COLUMN, constant default", big),
                "metadata only since PostgreSQL 11 (ALTER TABLE, Notes)",
            ),
        ]

    def table(self) -> tables.Table:
        """One row a change and size: its strongest lock on jobs, whether a read and a
        write had to wait for it, how long it took, whether it rewrote the table."""
        return tables.Table(
            tables.columns(
                "change",
                tables.Column("jobs", tables.COUNT, "row"),
                "strongest lock held",
                "a read",
                "a write",
                tables.Column("took", tables.MILLISECONDS),
                "rewrote jobs",
            ),
            [
                [
                    c.change,
                    c.rows,
                    lock_words(c.lock),
                    "waits" if c.read_waits else "passes",
                    "waits" if c.write_waits else "passes",
                    c.took_ms,
                    "yes" if c.rewrote else "no",
                ]
                for c in self.changes
            ],
            css="pgq-lock-survey",
        )

    def report(self) -> list[str]:
        big = max(self.sizes)
        return [
            note(
                f"what each change locks on jobs (probes: a read and a write, lock_timeout "
                f"{self.probe_timeout}), and how long it took{self.stopped_note}:"
            ),
            *(note(f"  {c}") for c in self.changes),
            note(
                f"  a failed CREATE UNIQUE INDEX CONCURRENTLY ({self.failed_build_error}) left: "
                f"{', '.join(self.invalid_after_failed_build) or 'nothing'} (INVALID)"
            ),
            f"  your guess for the volatile default at {big:,} rows: {guess_text(self.guess, ' ms')}",
            *self.footer(),
            note(f"  {GUIDE_SILENT}"),
        ]

    def chart(self) -> charts.Chart:
        """How long each change took, one bar a change and size."""
        rows = [
            {"change": f"{c.change} · {c.rows:,} rows", "ms": c.took_ms, "lock": c.lock} for c in self.changes
        ]
        return charts.bars(
            rows,
            label="change",
            value="ms",
            heading="How long each change held its lock",
            value_axis=charts.axis("time", "ms", fmt=",.0f"),
            tooltip=charts.tips(rows),
        )


def which_locks(
    db: Database,
    *,
    sizes: tuple[int, ...] | list[int] = (20_000, 200_000),
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> LockSurvey:
    """Run every change in CHANGES on jobs filled with each of `sizes` done jobs (the
    lesson's size, and 10x), reading the lock it holds while its transaction is open."""
    if not isinstance(sizes, (tuple, list)) or not sizes:
        raise BadInput(f"sizes must be a list of table sizes, got {sizes!r}")
    sizes = [checks.whole_number("sizes", n, 2, 5_000_000) for n in sizes]
    survey = finish(LockSurvey, db, guess=guess, sizes=sizes)
    total = len(sizes) * (len(CHANGES) + 1)
    done = 0
    with db.connection(application_name=f"{LAB_PREFIX} observer") as watcher:
        for rows in sizes:
            for change, name in CHANGES:
                if stop is not None and stop.is_set():
                    survey.stopped = True
                    return survey
                if name == CHANGES[0][1] or name in ("lab/add_check",):
                    fill(db, rows)  # a fresh table before the column changes and before the constraints
                if name == "lab/add_check_not_valid":
                    run(watcher, "lab/drop_lab_columns")  # the plain CHECK's constraint goes first
                survey.changes.append(
                    concurrent_build(db, watcher, change, rows)
                    if name == CONCURRENT
                    else in_transaction(db, watcher, change, name, rows)
                )
                if name in ("lab/create_lab_index", CONCURRENT):
                    run(watcher, "lab/drop_index", idents={"name": INDEX})
                done += 1
                tell(progress, done, total)
            survey.failed_build_error, survey.invalid_after_failed_build = failed_build(db, watcher)
            done += 1
            tell(progress, done, total)
        run(watcher, "lab/drop_lab_columns")
        run(watcher, "lab/reset_jobs")
    return survey


def fill(db: Database, rows: int) -> None:
    """jobs emptied, without the lab's columns, and `rows` done jobs in it."""
    with db.connection() as conn:
        run(conn, "lab/drop_lab_columns")
        seeding.reset_and_seed(conn, KIND, 0)
        run(conn, "lab/seed_done_jobs", {"count": rows, "distinct": True})
        run(conn, "lab/analyze_jobs")


def probes(db: Database) -> tuple[bool, bool]:
    """Whether a read and a write on jobs had to wait (each gave up after PROBE_TIMEOUT)."""
    waits = []
    for name, params in (("lab/count_jobs", None), ("enqueue", ENQUEUE)):
        named = {"application_name": f"{LAB_PREFIX} probe", "options": f"-c lock_timeout={PROBE_TIMEOUT}"}
        with db.connection(autocommit=False, **named) as probe:
            try:
                run(probe, name, params)
                waits.append(False)
            except psycopg.errors.LockNotAvailable:
                waits.append(True)
            probe.rollback()  # the probe's job is not kept
    return waits[0], waits[1]


ENQUEUE = {"kind": KIND, "payload": "{}", "run_at": None, "max_attempts": 5}


def in_transaction(db: Database, watcher: psycopg.Connection, change: str, name: str, rows: int) -> Change:
    """Run one change in a transaction; before it commits, read its locks and probe."""
    before = run_one(watcher, "lab/jobs_filenode")[0]
    with db.connection(autocommit=False, application_name=f"{LAB_PREFIX} migration") as conn:
        started = time.monotonic()
        run(conn, name)
        took = time.monotonic() - started
        held = granted_locks(watcher, conn.info.backend_pid)
        read_waits, write_waits = probes(db)
        conn.commit()
    after = run_one(watcher, "lab/jobs_filenode")[0]
    return Change(change, name, rows, held, read_waits, write_waits, took * 1000, after != before)


def granted_locks(watcher: psycopg.Connection, pid: int) -> list[str]:
    return [row[0] for row in run(watcher, "lab/locks_held_on", {"pid": pid, "table": "jobs"})]


def concurrent_build(db: Database, watcher: psycopg.Connection, change: str, rows: int) -> Change:
    """CREATE INDEX CONCURRENTLY twice: once behind an open writer, to read the lock it
    holds while it waits and probe beside it; then, dropped, once more with no one in
    its way, timed."""
    failures: list[BaseException] = []
    with (
        db.connection(autocommit=False, application_name=f"{LAB_PREFIX} writer") as writer,
        db.connection(autocommit=True, application_name=f"{LAB_PREFIX} migration") as conn,
    ):
        run(writer, "enqueue", ENQUEUE)  # an open transaction that wrote to jobs: the build waits for it
        pid = conn.info.backend_pid

        def build() -> None:
            try:
                run(conn, CONCURRENT)
            except BaseException as exc:  # raised again below  # noqa: BLE001
                failures.append(exc)

        builder = threading.Thread(target=build, daemon=True)
        builder.start()
        held: list[str] = []
        deadline = time.monotonic() + 30
        while not held and time.monotonic() < deadline and builder.is_alive():
            held = granted_locks(watcher, pid)
            time.sleep(0.01)
        read_waits, write_waits = probes(db)
        writer.rollback()
        builder.join(120)
        if failures:
            raise failures[0]
        run(conn, "lab/drop_index", idents={"name": INDEX})
        before = run_one(watcher, "lab/jobs_filenode")[0]
        started = time.monotonic()
        run(conn, CONCURRENT)
        took = time.monotonic() - started
    after = run_one(watcher, "lab/jobs_filenode")[0]
    return Change(change, CONCURRENT, rows, held, read_waits, write_waits, took * 1000, after != before)


def failed_build(db: Database, watcher: psycopg.Connection) -> tuple[str, list[str]]:
    """A concurrent unique build over a column many jobs share: its error, and the
    invalid indexes it left on jobs (dropped afterwards)."""
    error = ""
    with db.connection(autocommit=True, application_name=f"{LAB_PREFIX} migration") as conn:
        try:
            run(conn, "lab/create_lab_unique_concurrently")
        except psycopg.errors.UniqueViolation as exc:
            error = f"{exc.sqlstate}, {(exc.diag.message_primary or '').strip()}"
    left = [row[0] for row in run(watcher, "lab/invalid_indexes")]
    run(watcher, "lab/drop_index", idents={"name": FAILED_INDEX})
    return error, left


def lock_words(mode: str) -> str:
    """A lock mode as the PostgreSQL documentation names it ("SHARE UPDATE EXCLUSIVE", section
    13.3.1 of the PostgreSQL 18 docs), where pg_locks says "ShareUpdateExclusiveLock": the
    words wrap in a narrow window's table, the one long word did not."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", mode.removesuffix("Lock")).upper()
