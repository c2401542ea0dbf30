"""Lesson 04, the crashed worker: what happens to a job when its worker's
session ends, what a held transaction costs VACUUM, and the reaper's plan.

`CrashScene` is the lab: a hold-style worker (BEGIN, claim with FOR UPDATE SKIP
LOCKED, then "working" inside the transaction) and a lease-style worker (claim
with a lease, commit, then "working" with no transaction open), each on one
job, plus a third session that ends their sessions with pg_terminate_backend,
claims, reaps and reads the board. All three are scripted `Session`s, and a
`LabMonitor` reads the board, pg_locks and pg_stat_activity on its own
connection (pgq_teach.experiments.sessions).

`crash_both()` runs the guide's sequence (figure #8), `cleanup_held_back()`
the VACUUM experiment (figure #9) and what the held transaction does to another
database, `reaper_plan()` plans sql/reap.sql and runs it once on a few passed
leases, `reaper_backlog()` measures an empty reaper pass as jobs run beside a
held transaction and after VACUUM, and `reaper_cadence()` counts how often one
library Worker reaps over several seconds of work.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta

import psycopg
from psycopg.rows import dict_row

from .. import checks, queue, seeding, tables
from ..databases import Database
from ..errors import BadInput, PgqError
from ..guide import GuideFigure, figure
from ..statements import explain, explain_analyze, record, records, run, run_one
from ..worker import Worker
from .bloat import VacuumReport, vacuum
from .results import Comparison, Progress, Result, advice, guess_text, server_fields, tell
from .sessions import ActivityRow, ClosesOnExit, LabMonitor, Session, Step, run_and_wait, wait_gone

KIND = "send_receipt"
LAB_PREFIX = "pgq-crash"
HOLD, LEASE, THIRD = "hold worker", "lease worker", "third session"
CONTRAST = "idle reader"  # READ COMMITTED, idle in transaction after one statement: no ID, no snapshot
ONE_ROW_UPDATES = 1_000  # single-row updates in the other database, while held and after
# The other database's single-row updates commit without waiting for the disk:
# what they measure is pruning, and a thousand flushes would cost seconds.
RELAXED_COMMIT = "-c synchronous_commit=off"
# A lab lease is seconds long so the learner sees it run out. The library's
# default (queue.DEFAULT_LEASE, five minutes) must outlast the slowest real
# job with room to spare, or healthy workers would be reaped mid-job.
# The guide's scripted sequence needs no one to click, so its lease is short;
# by hand a person reads the board and makes three clicks (end the session,
# claim, reap) before the lease passes, which takes well over 2 s: the
# hands-on lease starts at 20 s, and the learner may set it (HANDS_ON_LIMITS).
DEFAULT_LEASE_S = 2.0
HANDS_ON_LEASE_S = 20.0
HANDS_ON_LIMITS = (2.0, 60.0)
LEASE_LIMITS = (0.5, 60.0)
GONE_TIMEOUT_S = 5.0  # how long a terminated session may take to disappear
OTHERS_LIMITS = (1, 100_000)


# --- what the board shows -----------------------------------------------------------


@dataclass(frozen=True)
class BoardRow:
    """One job as the board shows it. `lease_left_s` is negative once the lease has passed."""

    id: int
    status: str
    attempts: int
    lease_left_s: float | None
    last_error: str | None


@dataclass(frozen=True)
class LockHolder:
    """A session holding a lock on the jobs table (pg_locks)."""

    pid: int
    application_name: str
    mode: str
    state: str | None

    @property
    def worker(self) -> str:
        return self.application_name.removeprefix(f"{LAB_PREFIX} ")


def lab_session(db: Database, name: str) -> Session:
    """One of the lab's scripted sessions, named 'pgq-crash <name>' on the server."""
    return Session(db, name, prefix=LAB_PREFIX)


def answer(step: Step) -> tuple[tuple, ...]:
    """The rows a step returned; the server's error, plainly, if it failed."""
    if step.failed:
        raise PgqError(f"{step.statement} failed with error {step.sqlstate}: {step.message}")
    return step.rows


def claim_one(session: Session, lease_s: float) -> tuple[queue.Job | None, float]:
    """The course's claim (sql/claim.sql) on one session, outside BEGIN, so it
    commits at once: the job (or None) and the seconds it took."""
    step = run_and_wait(session, "claim", {"batch": 1, "lease": checks.lease(lease_s)})
    answer(step)
    named = step.named()
    return (record(queue.Job, named[0]) if named else None), step.seconds


# --- the lab ------------------------------------------------------------------------


class CrashScene(ClosesOnExit):
    """Two workers, two jobs, and a third session. Methods return once their
    statement has (none of them waits on a lock); `board()`, `lock_holders()`
    and `sessions()` may be called from another thread at the same time."""

    def __init__(self, db: Database, lease_s: float = DEFAULT_LEASE_S):
        self.db = db
        self.lease_s = checks.seconds("lease_s", lease_s, *LEASE_LIMITS)
        self.hold: Session | None = None
        self.lease: Session | None = None
        self.hold_job: int | None = None
        self.lease_job: queue.Job | None = None
        with db.connection(application_name=f"{LAB_PREFIX} reset") as conn:
            seeding.reset_and_seed(conn, KIND, 2)
        self.monitor = LabMonitor(db, LAB_PREFIX)
        self.third = lab_session(db, THIRD)

    # the two workers

    def start_hold_worker(self) -> int:
        """BEGIN and lock the oldest ready job; the transaction stays open while it "works"."""
        if self.hold is not None:
            raise BadInput("the hold-style worker has already started")
        self.hold = lab_session(self.db, HOLD)
        self.hold.begin()
        rows = answer(run_and_wait(self.hold, "teaching/hold_skip_locked"))
        if not rows:
            raise PgqError("the hold-style worker found no ready job: start it before the lease-style worker")
        self.hold_job = rows[0][0]
        return rows[0][0]

    def start_lease_worker(self) -> queue.Job:
        """Claim one job with a lease; the claim commits at once and the worker
        "works" with no transaction."""
        if self.lease is not None:
            raise BadInput("the lease-style worker has already started")
        self.lease = lab_session(self.db, LEASE)
        job, _ = claim_one(self.lease, self.lease_s)
        if job is None:
            raise PgqError("the lease-style worker found no ready job")
        self.lease_job = job
        return job

    def end_session(self, worker: str) -> int:
        """End a worker's session with pg_terminate_backend, from the third
        session, as a crash or a lost network would; wait until the server
        has let it go. The number of sessions ended (0 if it was not running).

        The worker is idle (the hold worker idle in its transaction), so its
        Session's thread is waiting for a command, not for the server: the
        session ends under it and its next command would fail, as a psql
        window's does."""
        names = {"hold": self.hold, "lease": self.lease}
        session = names[checks.one_of("worker", worker, names)]
        if session is None:
            return 0
        name = session.application_name
        ended = answer(run_and_wait(self.third, "lab/terminate_sessions_named", {"name": name}))
        wait_gone(self.monitor, [pid for pid, _ in ended], GONE_TIMEOUT_S)
        return len(ended)

    # the third session

    def third_claim(self) -> tuple[queue.Job | None, float]:
        """A third worker claims with the course's claim: the job, and how long it took."""
        return claim_one(self.third, self.lease_s)

    def reap(self) -> int:
        """Run the reaper (sql/reap.sql) once; the number of jobs it handed back."""
        return len(answer(run_and_wait(self.third, "reap")))

    # what the server says

    def board(self) -> list[BoardRow]:
        return self.monitor.look("lab/crash_board", row_factory=records(BoardRow))

    def lock_holders(self) -> list[LockHolder]:
        holders = records(LockHolder)
        return self.monitor.look("lab/jobs_lock_holders", {"prefix": LAB_PREFIX}, row_factory=holders)

    def sessions(self) -> list[ActivityRow]:
        """The lab's sessions in pg_stat_activity: an ended one is gone."""
        return self.monitor.read()

    def row(self, job_id: int) -> BoardRow:
        return next(r for r in self.board() if r.id == job_id)

    def close(self) -> None:
        """Close every session; an open hold transaction rolls back."""
        for session in (self.hold, self.lease, self.third):
            if session is not None:
                session.close()
        self.monitor.close()


# --- the guide's sequence (figure #8) -------------------------------------------------


@dataclass(kw_only=True)
class CrashResult(Result):
    lease_s: float
    hold_job: int
    lease_job: int
    lease_attempts: int  # what the lease worker's claim returned
    claim_before_crash: int | None  # a third worker's claim while both workers live
    held_job_claimed: int | None  # its claim right after the hold worker's session ended
    held_job_claim_s: float
    lease_status_after_end: str  # the leased job, right after its worker's session ended
    reaped_at_once: int  # the reaper, run right then
    lease_left_at_end_s: float  # how much of the lease was left then
    back_after_s: float  # from the end of the session to the reaper handing the job back
    leased_job_after: BoardRow
    guide: GuideFigure = field(default_factory=lambda: figure(8))

    @property
    def reaped_after_lease(self) -> bool:
        return self.leased_job_after.status == "ready" and self.leased_job_after.last_error == "lease expired"

    def summary(self) -> str:
        after = self.leased_job_after
        lines = [
            f"hold-style worker locked job {self.hold_job}; "
            f"lease-style worker claimed job {self.lease_job} "
            f"with a {self.lease_s:g} s lease (attempts {self.lease_attempts})" + self.stopped_note,
            f"  a third worker, while both lived: {self.claim_before_crash or 'no job'}",
            f"  hold worker's session ended: the third worker claimed job {self.held_job_claimed} "
            f"in {self.held_job_claim_s * 1000:.1f} ms",
            f"  lease worker's session ended: job {self.lease_job} still {self.lease_status_after_end}, "
            f"{self.lease_left_at_end_s:.2f} s of lease left; "
            f"the reaper then handed back {self.reaped_at_once}",
            f"  the reaper handed job {self.lease_job} back {self.back_after_s:.2f} s after its worker's "
            f"session ended (your guess: {guess_text(self.guess, ' s')}): {after.status}, "
            f"attempts {after.attempts}, last error {after.last_error!r}",
        ]
        return "\n".join(lines + self.footer())

    def comparison(self) -> list[Comparison]:
        return [
            ("held job claimable after the crash", None, f"{self.held_job_claim_s * 1000:.1f} ms", "at once"),
            ("leased job right after the crash", None, self.lease_status_after_end, "running"),
            ("leased job back to ready after, s", self.guess_cell, self.back_after_s, "when its lease ends"),
        ]


def crash_both(
    db: Database,
    lease_s: float = DEFAULT_LEASE_S,
    *,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> CrashResult:
    """Start both workers, end each one's session, and watch their jobs."""
    lease_s = checks.seconds("lease_s", lease_s, *LEASE_LIMITS)
    stop = stop or threading.Event()
    total = 5
    with CrashScene(db, lease_s) as scene:
        hold_job = scene.start_hold_worker()
        lease_job = scene.start_lease_worker()
        before, _ = scene.third_claim()
        tell(progress, 1, total)

        scene.end_session("hold")
        held, held_s = scene.third_claim()
        tell(progress, 2, total)

        scene.end_session("lease")
        ended_at = time.monotonic()
        right_after = scene.row(lease_job.id)
        reaped_at_once = scene.reap()
        tell(progress, 3, total)

        # The reaper, run every 50 ms, as a worker would before each claim.
        deadline = ended_at + lease_s + 10
        while not stop.is_set() and scene.reap() == 0:
            if time.monotonic() > deadline:
                raise PgqError(
                    f"the reaper had not handed job {lease_job.id} back 10 s after its lease ended"
                )
            stop.wait(0.05)
        back_after = time.monotonic() - ended_at
        tell(progress, 4, total)
        after = scene.row(lease_job.id)
        tell(progress, 5, total)
    return CrashResult(
        lease_s=lease_s,
        hold_job=hold_job,
        lease_job=lease_job.id,
        lease_attempts=lease_job.attempts,
        claim_before_crash=before.id if before else None,
        held_job_claimed=held.id if held else None,
        held_job_claim_s=held_s,
        lease_status_after_end=right_after.status,
        reaped_at_once=reaped_at_once,
        lease_left_at_end_s=right_after.lease_left_s or 0.0,
        back_after_s=back_after,
        leased_job_after=after,
        guess=guess,
        stopped=stop.is_set(),
        **server_fields(db),
    )


# --- cleanup held back (figure #9) ------------------------------------------------------


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

    def summary(self) -> str:
        c, r = self.culprit, self.contrast
        lines = [
            f"a hold-style worker sat on job 1 while {self.updated:,} other jobs were updated"
            + self.stopped_note,
            f"  the course's activity query saw it: pid {c['pid']}, {c['state']}, transaction age "
            f"{tables.duration(c['xact_age'])}, backend_xid {tables.human(c['backend_xid'])}, "
            f"backend_xmin {tables.human(c['backend_xmin'])}",
            f"  the idle reader, open since before the worker: {r['state']}, "
            f"backend_xid {tables.human(r['backend_xid'])}, backend_xmin {tables.human(r['backend_xmin'])}",
            f"  VACUUM while it worked: {tuples_line(self.during)} (your guess: {guess_text(self.guess)})",
        ]
        if self.elsewhere is not None:
            lines.append(f"  meanwhile, in another database, VACUUM alone: {tuples_line(self.elsewhere)}")
        if self.elsewhere_xmin is not None:
            lines.append(f"  meanwhile, a snapshot taken there had xmin {self.elsewhere_xmin}")
        if self.churn is not None:
            lines.append(
                f"  meanwhile, one job there updated {self.churn.updates:,} times: "
                f"{tables.count(self.churn.pages_held, 'page')} (after the commit: "
                f"{tables.count(self.churn.pages_clear, 'page')})"
            )
        lines.append(f"  VACUUM after it committed, the idle reader still open: {tuples_line(self.after)}")
        return "\n".join(lines + self.footer())

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
    return CleanupResult(
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
        stopped=stop.is_set(),
        **server_fields(db),
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


# --- the reaper's plan ------------------------------------------------------------------


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
    return ReaperPlan(
        running=running,
        ready=ready,
        expired=expired,
        plan=plan,
        reaped_now=reaped,
        still_running=still_running,
        **server_fields(db),
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
    return ReaperBacklog(
        jobs=jobs, passes=passes, vacuum_held=held, vacuum_after=cleaned, **server_fields(db)
    )


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
    return CadenceResult(
        jobs=jobs,
        work_s=work_s,
        claimed=report.claimed,
        reaper_passes=report.reaper_passes,
        elapsed_s=time.monotonic() - began,
        reap_every_s=worker.reap_every,
        **server_fields(db),
    )
