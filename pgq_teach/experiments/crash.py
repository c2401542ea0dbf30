"""Lesson 04, the crashed worker: what happens to a job when its worker's
session ends, what a held transaction costs VACUUM, and the reaper's plan.

`CrashScene` is the lab: a hold-style worker (BEGIN, claim with FOR UPDATE SKIP
LOCKED, then "working" inside the transaction) and a lease-style worker (claim
with a lease, commit, then "working" with no transaction open), each on one
job, plus a third session that ends their sessions with pg_terminate_backend,
claims, reaps and reads the board. Each worker is a plain psycopg connection,
small enough to move onto the shared scripted sessions later.

`crash_both()` runs the guide's sequence (figure #8), `cleanup_held_back()`
the VACUUM experiment (figure #9) and `reaper_plan()` plans sql/reap.sql.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

import psycopg
from psycopg.rows import dict_row

from .. import checks, queue, seeding
from ..databases import Database
from ..errors import BadInput, PgqError
from ..guide import GuideFigure, figure
from ..statements import explain, run, run_one
from .bloat import VacuumReport, vacuum
from .results import tell

KIND = "send_receipt"
LAB_PREFIX = "pgq-crash"
HOLD_NAME = f"{LAB_PREFIX} hold worker"
LEASE_NAME = f"{LAB_PREFIX} lease worker"
THIRD_NAME = f"{LAB_PREFIX} third session"
# A lab lease is seconds long so the learner sees it run out. The library's
# default (queue.DEFAULT_LEASE, five minutes) must outlast the slowest real
# job with room to spare, or healthy workers would be reaped mid-job.
DEFAULT_LEASE_S = 2.0
LEASE_LIMITS = (0.5, 30.0)
GONE_TIMEOUT_S = 5.0  # how long a terminated session may take to disappear
OTHERS_LIMITS = (1, 100_000)

Progress = Callable[[int, int], None] | None


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


def board(conn: psycopg.Connection) -> list[BoardRow]:
    return [BoardRow(*row) for row in run(conn, "lab/crash_board").fetchall()]


def lock_holders(conn: psycopg.Connection) -> list[LockHolder]:
    return [LockHolder(*row) for row in run(conn, "lab/jobs_lock_holders", {"prefix": LAB_PREFIX}).fetchall()]


# --- the lab ------------------------------------------------------------------------


class CrashScene:
    """Two workers, two jobs, and a third session. Methods run at once on the
    caller's thread (none of them waits on a lock); `board()` and
    `lock_holders()` may be called from another thread at the same time."""

    def __init__(self, db: Database, lease_s: float = DEFAULT_LEASE_S):
        self.db = db
        self.lease_s = checks.seconds("lease_s", lease_s, *LEASE_LIMITS)
        self.hold: psycopg.Connection | None = None
        self.lease: psycopg.Connection | None = None
        self.hold_job: int | None = None
        self.lease_job: queue.Job | None = None
        self._third_lock = threading.Lock()
        self._monitor_lock = threading.Lock()
        self._third = db.connect(application_name=THIRD_NAME)
        self._monitor = db.connect(application_name="pgq-teach monitor")
        seeding.reset_and_seed(self._third, KIND, 2)

    # the two workers

    def start_hold_worker(self) -> int:
        """BEGIN and lock the oldest ready job; the transaction stays open while it "works"."""
        if self.hold is not None:
            raise BadInput("the hold-style worker has already started")
        self.hold = self.db.connect(autocommit=False, application_name=HOLD_NAME)
        run(self.hold, "lab/open_transaction")
        row = run(self.hold, "teaching/hold_skip_locked").fetchone()
        if row is None:
            raise PgqError("the hold-style worker found no ready job: start it before the lease-style worker")
        self.hold_job = row[0]
        return self.hold_job

    def start_lease_worker(self) -> queue.Job:
        """Claim one job with a lease; the claim commits at once and the worker
        "works" with no transaction."""
        if self.lease is not None:
            raise BadInput("the lease-style worker has already started")
        self.lease = self.db.connect(application_name=LEASE_NAME)
        jobs = queue.claim(self.lease, lease=self.lease_s)
        if not jobs:
            raise PgqError("the lease-style worker found no ready job")
        self.lease_job = jobs[0]
        return self.lease_job

    def end_session(self, worker: str) -> int:
        """End a worker's session with pg_terminate_backend, from the third
        session, as a crash or a lost network would; wait until the server
        has let it go. The number of sessions ended (0 if it was not running)."""
        names = {"hold": HOLD_NAME, "lease": LEASE_NAME}
        name = names[checks.one_of("worker", worker, names)]
        with self._third_lock:
            ended = run(self._third, "lab/terminate_sessions_named", {"name": name}).fetchall()
            deadline = time.monotonic() + GONE_TIMEOUT_S
            for pid, _ in ended:
                while run_one(self._third, "lab/session_alive", {"pid": pid})[0]:
                    if time.monotonic() > deadline:
                        raise PgqError(
                            f"session {pid} was still there {GONE_TIMEOUT_S:g} s after it was ended"
                        )
                    time.sleep(0.02)
        return len(ended)

    # the third session

    def third_claim(self) -> tuple[queue.Job | None, float]:
        """A third worker claims with the course's claim: the job, and how long it took."""
        with self._third_lock:
            started = time.monotonic()
            jobs = queue.claim(self._third, lease=self.lease_s)
            return (jobs[0] if jobs else None), time.monotonic() - started

    def reap(self) -> int:
        """Run the reaper (sql/reap.sql) once; the number of jobs it handed back."""
        with self._third_lock:
            return queue.reap(self._third)

    # what the server says

    def board(self) -> list[BoardRow]:
        with self._monitor_lock:
            return board(self._monitor)

    def lock_holders(self) -> list[LockHolder]:
        with self._monitor_lock:
            return lock_holders(self._monitor)

    def row(self, job_id: int) -> BoardRow:
        return next(r for r in self.board() if r.id == job_id)

    def close(self) -> None:
        """Close every connection; an open hold transaction rolls back."""
        for conn in (self.hold, self.lease, self._third, self._monitor):
            if conn is not None:
                try:
                    conn.close()
                except psycopg.Error:
                    pass  # already ended by the lab

    def __enter__(self) -> CrashScene:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- the guide's sequence (figure #8) -------------------------------------------------


@dataclass
class CrashResult:
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
    server_version: str
    guess: float | None = None
    guide: GuideFigure = field(default_factory=lambda: figure(8))
    stopped: bool = False

    @property
    def reaped_after_lease(self) -> bool:
        return self.leased_job_after.status == "ready" and self.leased_job_after.last_error == "lease expired"

    def summary(self) -> str:
        guess = f" (your guess: {self.guess:g} s)" if self.guess is not None else ""
        after = self.leased_job_after
        return "\n".join(
            [
                f"hold-style worker locked job {self.hold_job}; "
                f"lease-style worker claimed job {self.lease_job} "
                f"with a {self.lease_s:g} s lease (attempts {self.lease_attempts})",
                f"  a third worker, while both lived: {self.claim_before_crash or 'no job'}",
                f"  hold worker's session ended: the third worker claimed job {self.held_job_claimed} "
                f"in {self.held_job_claim_s * 1000:.1f} ms",
                f"  lease worker's session ended: job {self.lease_job} still {self.lease_status_after_end}, "
                f"{self.lease_left_at_end_s:.2f} s of lease left; "
                f"the reaper then handed back {self.reaped_at_once}",
                f"  the reaper handed job {self.lease_job} back {self.back_after_s:.2f} s after its worker's "
                f"session ended{guess}: {after.status}, attempts {after.attempts}, "
                f"last error {after.last_error!r}",
                f"  {self.guide}",
                f"  this server: PostgreSQL {self.server_version}",
            ]
        )

    def comparison(self) -> list[tuple[str, object, object, object]]:
        return [
            ("held job claimable after the crash", None, f"{self.held_job_claim_s * 1000:.1f} ms", "at once"),
            ("leased job right after the crash", None, self.lease_status_after_end, "running"),
            ("leased job back to ready after, s", self.guess, self.back_after_s, "when its lease ends"),
        ]


def crash_both(
    db: Database,
    lease_s: float = DEFAULT_LEASE_S,
    *,
    guess: float | None = None,
    progress: Progress = None,
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
        server_version=db.server.version,
        guess=guess,
        stopped=stop.is_set(),
    )


# --- cleanup held back (figure #9) ------------------------------------------------------


def tuples_line(report: VacuumReport) -> str:
    """The server's own "tuples: ... removed, ... remain, ... are dead but not
    yet removable" line from a VACUUM (VERBOSE) report."""
    return next((line.strip() for line in report.text.splitlines() if "tuples:" in line), str(report))


@dataclass
class CleanupResult:
    others: int  # jobs updated while the hold-style worker sat on job 1
    updated: int
    during: VacuumReport  # VACUUM while the worker's transaction was open (bloat.vacuum)
    after: VacuumReport  # VACUUM after it committed
    culprit: dict  # the worker's row from the guide's activity query (sql/stats_sessions.sql)
    server_version: str
    guess: int | None = None
    guide: GuideFigure = field(default_factory=lambda: figure(9))
    stopped: bool = False

    def summary(self) -> str:
        c = self.culprit
        guess = f" (your guess: {self.guess:,})" if self.guess is not None else ""
        return "\n".join(
            [
                f"a hold-style worker sat on job 1 while {self.updated:,} other jobs were updated",
                f"  the guide's activity query saw it: pid {c['pid']}, {c['state']}, transaction age "
                f"{c['xact_age'].total_seconds():.2f} s, backend_xid {c['backend_xid']}, "
                f"backend_xmin {c['backend_xmin']}",
                f"  VACUUM while it worked: {tuples_line(self.during)}{guess}",
                f"  VACUUM after it committed: {tuples_line(self.after)}",
                f"  {self.guide}",
                f"  this server: PostgreSQL {self.server_version}",
            ]
        )

    def comparison(self) -> list[tuple[str, object, object, object]]:
        return [
            ("removed while the worker held its transaction", None, self.during.removed, 0),
            (
                "dead but not yet removable then",
                self.guess,
                self.during.not_removable,
                self.guide.values["dead"],
            ),
            ("removed after it committed", None, self.after.removed, f"all {self.guide.values['dead']:,}"),
        ]


def cleanup_held_back(
    db: Database,
    others: int = 1_000,
    *,
    guess: int | None = None,
    progress: Progress = None,
    stop: threading.Event | None = None,
) -> CleanupResult:
    """A hold-style worker holds job 1 while `others` other jobs are updated
    once each; VACUUM runs while it works and again after it commits.

    Autovacuum is kept off the jobs table meanwhile, so the VACUUM run here is
    the one that finds the dead rows. Nothing reads the table between the
    commit and the second VACUUM: a read may prune dead rows on its own."""
    others = checks.whole_number("others", others, *OTHERS_LIMITS)
    stop = stop or threading.Event()
    total = 4
    with db.connection(application_name=f"{LAB_PREFIX} cleanup") as conn:
        seeding.reset_and_seed(conn, KIND, others + 1)
        run(conn, "lab/autovacuum_off")
        hold = db.connect(autocommit=False, application_name=HOLD_NAME)
        try:
            run(hold, "lab/open_transaction")
            job_id = run_one(hold, "teaching/hold_skip_locked")[0]
            updated = run(conn, "lab/touch_other_jobs", {"keep": job_id}).rowcount
            tell(progress, 1, total)
            pid = hold.info.backend_pid
            culprit = next(r for r in run(conn, "stats_sessions", row_factory=dict_row) if r["pid"] == pid)
            during = vacuum(db)
            tell(progress, 2, total)
            run(hold, "teaching/mark_done", {"id": job_id})  # the worker finishes its job
            hold.commit()
            tell(progress, 3, total)
        finally:
            hold.close()
        after = vacuum(db)
        run(conn, "lab/autovacuum_reset")
        tell(progress, 4, total)
    return CleanupResult(
        others=others,
        updated=updated,
        during=during,
        after=after,
        culprit=culprit,
        server_version=db.server.version,
        guess=guess,
        stopped=stop.is_set(),
    )


# --- the reaper's plan ------------------------------------------------------------------


@dataclass
class ReaperPlan:
    running: int
    ready: int
    plan: str
    reaped_now: int  # what the reaper found: none of the leases has passed yet
    server_version: str

    @property
    def uses_running_index(self) -> bool:
        return "jobs_running_idx" in self.plan


def reaper_plan(db: Database, running: int = 50, ready: int = 4_950) -> ReaperPlan:
    """Seed ready + running jobs, refresh statistics, and EXPLAIN sql/reap.sql."""
    running = checks.whole_number("running", running, *OTHERS_LIMITS)
    ready = checks.whole_number("ready", ready, *OTHERS_LIMITS)
    with db.connection() as conn:
        seeding.reset_and_seed(conn, KIND, running + ready)
        queue.claim(conn, batch=running, lease=timedelta(minutes=5))
        run(conn, "lab/analyze_jobs")
        plan = "\n".join(explain(conn, "reap"))
        reaped = queue.reap(conn)
    return ReaperPlan(
        running=running, ready=ready, plan=plan, reaped_now=reaped, server_version=db.server.version
    )
