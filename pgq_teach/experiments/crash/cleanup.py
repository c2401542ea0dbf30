"""Cleanup held back (figure #9): `cleanup_held_back`, VACUUM while a
hold-style worker holds its transaction and after, and what the held
transaction does to another database; `older_id_commits_later`, a writer whose
ID is older than the worker's committing after it began."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import psycopg
from psycopg.rows import dict_row

from ... import checks, seeding, tables
from ...databases import Database
from ...errors import BadInput, PgqError
from ...guide import GuideFigure, figure
from ...statements import run, run_one
from ..bloat import VacuumReport, vacuum
from ..results import Comparison, Progress, Result, finish, guess_text, note, tell
from ..sessions import run_and_wait
from .scene import HOLD, KIND, LAB_PREFIX, OTHERS_LIMITS, answer, lab_session

CONTRAST = "idle reader"  # READ COMMITTED, idle in transaction after one statement: no ID, no snapshot
ONE_ROW_UPDATES = 1_000  # single-row updates in the other database, while held and after
# The other database's single-row updates commit without waiting for the disk:
# what they measure is pruning, and a thousand flushes would cost seconds.
RELAXED_COMMIT = "-c synchronous_commit=off"


def tuples_line(report: VacuumReport) -> str:
    """The server's own "tuples: ... removed, ... remain, ... are dead but not
    yet removable" line from a VACUUM (VERBOSE) report."""
    return next((line.strip() for line in report.text.splitlines() if "tuples:" in line), str(report))


@dataclass(frozen=True)
class OneRowChurn:
    """One job updated `updates` times in the other database, one transaction
    each: the table's pages while the worker held its transaction, and after."""

    updates: int
    pages_held: int
    pages_clear: int


@dataclass(kw_only=True)
class CleanupResult(Result):
    others: int  # jobs updated while the hold-style worker sat on job 1
    updated: int
    during: VacuumReport  # VACUUM while the worker's transaction was open (bloat.vacuum)
    after: VacuumReport  # VACUUM after it committed (the idle reader still open)
    culprit: dict  # the worker's row from the course's activity query (sql/stats_sessions.sql)
    contrast: dict  # the idle reader's state, backend_xid and backend_xmin (sql/lab/session_horizon.sql)
    elsewhere: VacuumReport | None = None  # the same updates and VACUUM in another database, meanwhile
    elsewhere_xmin: str | None = None  # a snapshot's xmin taken there meanwhile
    churn: OneRowChurn | None = None  # one row updated many times there, held and after
    guide: GuideFigure = field(default_factory=lambda: figure(9))

    def report(self) -> list[str]:
        c, r = self.culprit, self.contrast
        lines: list[str] = [
            note(
                f"a hold-style worker sat on job 1 while {self.updated:,} other jobs were updated"
                + self.stopped_note
            ),
            note(
                f"  the course's activity query saw it: pid {c['pid']}, {c['state']}, transaction age "
                f"{tables.duration(c['xact_age'])}, backend_xid {tables.human(c['backend_xid'])}, "
                f"backend_xmin {tables.human(c['backend_xmin'])}"
            ),
            note(
                f"  the idle reader, open since before the worker: {r['state']}, backend_xid "
                f"{tables.human(r['backend_xid'])}, backend_xmin {tables.human(r['backend_xmin'])}"
            ),
            # the remaining count: the table has what VACUUM removed and could not
            note(
                f"  VACUUM while it worked: {tuples_line(self.during)} (your guess: {guess_text(self.guess)})"
            ),
        ]
        if self.elsewhere is not None:
            lines.append(f"  meanwhile, in another database, VACUUM alone: {tuples_line(self.elsewhere)}")
        if self.elsewhere_xmin is not None:
            lines.append(note(f"  meanwhile, a snapshot taken there had xmin {self.elsewhere_xmin}"))
        if self.churn is not None:
            lines.append(
                note(
                    f"  meanwhile, one job there updated {self.churn.updates:,} times: "
                    f"{tables.count(self.churn.pages_held, 'page')} (after the commit: "
                    f"{tables.count(self.churn.pages_clear, 'page')})"
                )
            )
        lines.append(f"  VACUUM after it committed, the idle reader still open: {tuples_line(self.after)}")
        return lines + self.footer()

    def comparison(self) -> list[Comparison]:
        dead = self.guide.values["dead"]
        return [
            ("removed while the worker held its transaction", None, self.during.removed, 0),
            ("dead but not yet removable then", self.guess_cell, self.during.not_removable, dead),
            ("removed after it committed", None, self.after.removed, f"all {dead:,}"),
        ] + (
            [("removed meanwhile in another database, by VACUUM alone", None, self.elsewhere.removed, None)]
            if self.elsewhere is not None
            else []
        )


def churn_and_vacuum(db: Database, others: int) -> VacuumReport:
    """Seed `others` + 1 jobs, update all but job 1 once, and VACUUM (VERBOSE),
    with autovacuum kept off the table meanwhile."""
    with db.connection(application_name=f"{LAB_PREFIX} cleanup") as conn:
        seeding.reset_and_seed(conn, KIND, others + 1)
        run(conn, "lab/autovacuum_off")
        run(conn, "lab/touch_other_jobs", {"keep": 1})
        report = vacuum(db)
        run(conn, "lab/autovacuum_reset")
    return report


def one_row_churn(db: Database, updates: int) -> int:
    """One job, updated `updates` times, one transaction each, with autovacuum
    kept off the table: how many pages the table then holds. Each update's
    snapshot lets it prune the page of versions no one can still see, so with
    nothing held back the table stays at one page."""
    with db.connection(application_name=f"{LAB_PREFIX} one row", options=RELAXED_COMMIT) as conn:
        seeding.reset_and_seed(conn, KIND, 1)
        run(conn, "lab/autovacuum_off")
        for n in range(updates):
            run(conn, "lab/set_attempts", {"id": 1, "attempts": n})
        pages = int(run_one(conn, "lab/jobs_table_pages")[0])
        run(conn, "lab/autovacuum_reset")
    return pages


def snapshot_xmin(db: Database) -> str | None:
    """The xmin of a snapshot taken now, by a new session in `db`."""
    with db.connection() as conn:
        return run_one(conn, "lab/own_backend_xmin")[0]


def cleanup_held_back(
    db: Database,
    others: int = 1_000,
    *,
    elsewhere: Database | None = None,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> CleanupResult:
    """A hold-style worker holds job 1 while `others` other jobs are updated
    once each; VACUUM runs while it works and again after it commits. An idle
    reader (READ COMMITTED, idle in transaction after one statement, so with no
    transaction ID and no snapshot) opens before the worker and stays open to
    the end, so the second VACUUM runs beside it. With `elsewhere` (another
    database on the same server), while the worker still holds its
    transaction: the same updates and VACUUM there, alone; a new session's
    snapshot xmin there; and one job there updated ONE_ROW_UPDATES times, one
    transaction each, whose table's pages are counted, and counted again after
    the worker committed.

    Autovacuum is kept off the jobs table meanwhile, so the VACUUM run here is
    the one that finds the dead rows. Nothing reads the table between the
    commit and the second VACUUM: a read may prune dead rows on its own."""
    others = checks.whole_number("others", others, *OTHERS_LIMITS)
    if elsewhere is not None and (not isinstance(elsewhere, Database) or elsewhere.name == db.name):
        raise BadInput(f"elsewhere must be another database on the same server, got {elsewhere!r}")
    stop = stop or threading.Event()
    total = 5
    meanwhile = xmin_there = None
    pages_held = 0
    with db.connection(application_name=f"{LAB_PREFIX} cleanup") as conn:
        seeding.reset_and_seed(conn, KIND, others + 1)
        run(conn, "lab/autovacuum_off")
        with lab_session(db, CONTRAST) as reader, lab_session(db, HOLD) as hold:
            reader.begin()
            answer(run_and_wait(reader, "lab/open_transaction"))
            hold.begin()
            job_id = answer(run_and_wait(hold, "teaching/hold_skip_locked"))[0][0]
            updated = run(conn, "lab/touch_other_jobs", {"keep": job_id}).rowcount
            tell(progress, 1, total)
            sessions = run(conn, "stats_sessions", row_factory=dict_row).fetchall()
            culprit = next(r for r in sessions if r["pid"] == hold.pid)
            contrast = run(conn, "lab/session_horizon", {"pid": reader.pid}, row_factory=dict_row).fetchone()
            if contrast is None:
                raise PgqError(f"the idle reader's session (pid {reader.pid}) is gone")
            during = vacuum(db)
            if elsewhere is not None:
                meanwhile = churn_and_vacuum(elsewhere, others)
                xmin_there = snapshot_xmin(elsewhere)
                pages_held = one_row_churn(elsewhere, ONE_ROW_UPDATES)
            tell(progress, 2, total)
            answer(run_and_wait(hold, "teaching/mark_done", {"id": job_id}))  # the worker finishes its job
            hold.commit()
            hold.wait_done()
            tell(progress, 3, total)
            after = vacuum(db)  # the idle reader is still open
            tell(progress, 4, total)
            reader.rollback()
            reader.wait_done()
        run(conn, "lab/autovacuum_reset")
    churn = None
    if elsewhere is not None:
        churn = OneRowChurn(ONE_ROW_UPDATES, pages_held, one_row_churn(elsewhere, ONE_ROW_UPDATES))
    tell(progress, 5, total)
    return finish(
        CleanupResult,
        db,
        others=others,
        updated=updated,
        during=during,
        after=after,
        culprit=culprit,
        contrast=contrast,
        elsewhere=meanwhile,
        elsewhere_xmin=xmin_there,
        churn=churn,
        guess=guess,
        stopped=stop,
    )


@dataclass(frozen=True)
class IdOrder:
    """A transaction that got its ID before a hold-style worker's, and committed
    after the worker began: what VACUUM removed of its rows with the worker open."""

    rows: int
    writer_xid: int  # the writer's transaction ID, taken first
    holder_xid: int  # the hold-style worker's, taken after
    vacuum: VacuumReport  # VACUUM after the writer committed, the worker still open

    def __str__(self) -> str:
        return (
            f"writer: xid {self.writer_xid}, updated {self.rows:,} jobs; hold-style worker: xid "
            f"{self.holder_xid}, began before the writer committed; VACUUM then, the worker still open: "
            f"{tuples_line(self.vacuum)}"
        )


def session_xid(conn: psycopg.Connection, pid: int) -> int:
    """One session's transaction ID, as pg_stat_activity shows it (it must have one)."""
    row = run(conn, "lab/session_horizon", {"pid": pid}, row_factory=dict_row).fetchone()
    if row is None or row["backend_xid"] is None:
        raise PgqError(f"session {pid} holds no transaction ID")
    return int(row["backend_xid"])


def older_id_commits_later(db: Database, rows: int = 500) -> IdOrder:
    """A writer updates `rows` jobs in an open transaction (so it takes its ID
    first); a hold-style worker then locks job 1 (a later ID); the writer
    commits, and VACUUM runs with the worker still open. Autovacuum is kept
    off the table meanwhile."""
    rows = checks.whole_number("rows", rows, *OTHERS_LIMITS)
    with db.connection(application_name=f"{LAB_PREFIX} id order") as conn:
        seeding.reset_and_seed(conn, KIND, rows + 1)
        run(conn, "lab/autovacuum_off")
        with lab_session(db, "writer") as writer, lab_session(db, HOLD) as hold:
            writer.begin()
            answer(run_and_wait(writer, "lab/touch_other_jobs", {"keep": 1}))
            hold.begin()
            answer(run_and_wait(hold, "teaching/hold_skip_locked"))  # job 1: the writer holds the rest
            writer_xid, holder_xid = session_xid(conn, writer.pid), session_xid(conn, hold.pid)
            writer.commit()
            writer.wait_done()
            report = vacuum(db)
            hold.rollback()
            hold.wait_done()
        run(conn, "lab/autovacuum_reset")
    return IdOrder(rows, writer_xid, holder_xid, report)
