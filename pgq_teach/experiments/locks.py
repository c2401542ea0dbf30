"""The lock lab: sessions A, B (and C) claiming the same two jobs.

A `LockSession` is one side of the lab: a `sessions.Session` that claims the
oldest ready job with one of three locking clauses (sql/teaching/hold_<clause>.sql)
and, on COMMIT, marks the jobs it claimed done, as a hold-style worker
finishing its work would.

`replay()` runs the guide's scripted sequence (figures #2, #3 and #4) and
returns a `ReplayResult`; `line_of_waiters()` adds a third session and shows
that only the first waiter queues on the holder's transaction
(`Lock / transactionid`); the next waits on `Lock / tuple`, behind the first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg

from .. import checks, seeding
from ..databases import Database
from ..errors import PgqError
from ..guide import GuideFigure, figure
from ..statements import run
from .results import Comparison, Result, guess_text, server_fields
from .sessions import (
    CLOSED,
    DONE,
    ERROR,
    GOT_JOB,
    IDLE,
    IN_TRANSACTION,
    LAB_PREFIX,
    NO_JOB,
    PHASES,
    WAITING,
    ActivityRow,
    Session,
    SessionState,
    Step,
    activity,
)

__all__ = [
    "CLAUSES",
    "CLOSED",
    "DONE",
    "ERROR",
    "GOT_JOB",
    "IDLE",
    "IN_TRANSACTION",
    "LAB_PREFIX",
    "NO_JOB",
    "PHASES",
    "WAITING",
    "ActivityRow",
    "JobsBusy",
    "LockSession",
    "ReplayResult",
    "Session",
    "SessionState",
    "WaitersResult",
    "activity",
    "line_of_waiters",
    "prepare",
    "replay",
]

# The three locking clauses, each a file sql/teaching/hold_<clause>.sql, and
# the words that end the statement (also the lab's button labels).
CLAUSES = {"for_update": "FOR UPDATE", "nowait": "NOWAIT", "skip_locked": "SKIP LOCKED"}
GUIDE_FIGURE = {"for_update": 2, "nowait": 3, "skip_locked": 4}
KIND = "send_receipt"
PREPARE_LOCK_TIMEOUT_MS = 5_000  # how long a reset may wait for other sessions' locks
HOLD_LIMITS = (0.5, 30.0)  # seconds A may hold job 1 in a replay


def check_clause(clause: Any) -> None:
    checks.one_of("the locking clause", clause, CLAUSES)


class JobsBusy(PgqError):
    """The jobs table could not be reset: another session holds locks on it."""


def prepare(db: Database, jobs: int = 2, *, lock_timeout_ms: int = PREPARE_LOCK_TIMEOUT_MS) -> None:
    """Empty the jobs table and add `jobs` ready jobs, ids 1, 2, ... oldest first.

    Emptying the table must wait for every open transaction that locked a job,
    so it gives up after a few seconds with advice instead of hanging."""
    try:
        with db.connection(options=f"-c lock_timeout={int(lock_timeout_ms)}") as conn:
            seeding.reset_and_seed(conn, KIND, jobs)
    except psycopg.errors.LockNotAvailable:
        raise JobsBusy(
            "Could not reset the jobs table: another session still holds a transaction with "
            "locked jobs. End it first: in the lock lab press Reset (or ROLLBACK in each session); "
            "in psql type ROLLBACK."
        ) from None


class LockSession(Session):
    """A session that claims with a locking clause; COMMIT marks its claimed jobs done.

    As in psql, a claim outside BEGIN is a transaction of its own: it commits
    at once, so its row lock is gone as soon as it returns. `rollback()`
    leaves the claimed jobs ready for someone else."""

    def __init__(self, *args, **kwargs):
        self.claimed: list[int] = []  # jobs this transaction claimed
        super().__init__(*args, **kwargs)

    def claim(self, clause: str) -> None:
        """Run sql/teaching/hold_<clause>.sql: lock the oldest ready job."""
        check_clause(clause)
        self.submit(self.do_claim, clause)

    def do_claim(self, clause: str) -> None:
        step = self.execute(f"teaching/hold_{clause}", None, CLAUSES[clause])
        if step.failed:
            self.set(
                SessionState(
                    ERROR,
                    label=CLAUSES[clause],
                    took=step.seconds,
                    sqlstate=step.sqlstate,
                    message=step.message,
                    in_transaction=self.in_transaction,
                )
            )
            return
        job_id = step.rows[0][0] if step.rows else None
        if step.in_transaction and job_id is not None:
            self.claimed.append(job_id)
        self.set(
            SessionState(
                GOT_JOB if job_id is not None else NO_JOB,
                label=CLAUSES[clause],
                job_id=job_id,
                took=step.seconds,
                in_transaction=step.in_transaction,
            )
        )

    def before_commit(self) -> str:
        for job_id in self.claimed:  # the worker finished its job: mark it done
            run(self.conn, "teaching/mark_done", {"id": job_id})
        done = ", ".join(f"job {j}" for j in self.claimed)
        return f"committed; {done} marked done" if done else "committed"

    def after_end(self) -> str:
        released = ", ".join(f"job {j}" for j in self.claimed)
        self.claimed.clear()
        return f"{released} ready again" if released else ""


# --- the guide's scripted sequence ---------------------------------------------------


@dataclass(kw_only=True)
class ReplayResult(Result):
    clause: str
    hold_seconds: float
    a_job: int | None  # the job A locked: 1
    b_job: int | None  # what B's claim returned: None for no row or an error
    b_seconds: float  # how long B's claim took, waiting included
    still_waiting_at_sample: bool  # was B's claim still running when we looked?
    b_row: ActivityRow | None  # B's row in pg_stat_activity then
    a_pid: int
    b_pid: int
    sqlstate: str | None
    message: str | None
    a_held: float  # seconds from the start of B's claim to A's COMMIT
    guide: GuideFigure = field(default_factory=lambda: figure(2))

    @property
    def wait_event(self) -> tuple[str | None, str | None] | None:
        """B's (wait_event_type, wait_event) when we looked."""
        return (self.b_row.wait_event_type, self.b_row.wait_event) if self.b_row else None

    @property
    def b_blocked_by(self) -> tuple[int, ...]:
        return self.b_row.blocking_pids if self.b_row else ()

    @property
    def blocked_by_a(self) -> bool:
        return self.a_pid in self.b_blocked_by

    @property
    def wait_event_text(self) -> str:
        return self.b_row.wait_event_text if self.b_row else "none"

    def summary(self) -> str:
        if self.sqlstate:
            b_got = f"failed after {self.b_seconds:.3f} s with {self.sqlstate}: {self.message}"
        elif self.b_job is None:
            b_got = f"got no job after {self.b_seconds:.3f} s"
        else:
            b_got = f"got job {self.b_job} after {self.b_seconds:.3f} s"
        if self.still_waiting_at_sample:
            seen = f"  B was waiting on {self.wait_event_text}" + (
                ", blocked by A" if self.blocked_by_a else ""
            )
        else:
            state = self.b_row.state if self.b_row else None
            seen = (
                f"  B had already finished when we looked: {state} "
                f"({self.wait_event_text}), waiting for nothing but its client"
            )
        lines = [
            f"{CLAUSES[self.clause]}: A locked job {self.a_job} with FOR UPDATE and held it; "
            f"B ran the claim with {CLAUSES[self.clause]}",
            seen,
            f"  B {b_got}  (your guess: {guess_text(self.guess, ' s')})",
            f"  A marked job {self.a_job} done and committed after {self.a_held:.2f} s",
        ]
        return "\n".join(lines + self.footer())

    def comparison(self) -> list[Comparison]:
        values = self.guide.values
        if self.clause == "nowait":
            return [
                ("B's error (SQLSTATE)", None, self.sqlstate or "none", values["sqlstate"]),
                ("B's answer came after, s", self.guess_cell, self.b_seconds, "at once"),
            ]
        if self.clause == "skip_locked":
            return [
                ("B's job", None, self.b_job, values["job"]),
                ("B's wait, s", self.guess_cell, self.b_seconds, f"under {values['under_s']:g}"),
            ]
        return [
            ("B waited on", None, self.wait_event_text, " / ".join(values["wait_event"])),
            ("B's job", None, self.b_job, values["job"]),
            ("B's wait, s", self.guess_cell, self.b_seconds, values["waited_s"]),
        ]


def check_hold(hold_seconds: Any) -> None:
    checks.seconds("hold_seconds", hold_seconds, *HOLD_LIMITS)


def row_of(rows: list[ActivityRow], session: Session) -> ActivityRow | None:
    return next((r for r in rows if r.pid == session.pid), None)


def replay(
    db: Database,
    clause: str = "for_update",
    hold_seconds: float = 2.0,
    *,
    guess: float | None = None,
    look_after_s: float = 1.0,
    progress: Callable[[int, int], None] | None = None,
    stop: threading.Event | None = None,
) -> ReplayResult:
    """The guide's two-session sequence on two ready jobs (ids 1 and 2).

    A begins and locks job 1 with FOR UPDATE. B begins and runs the claim with
    `clause`. After `look_after_s` seconds (at most half the hold) we read B's
    row in pg_stat_activity. A marks job 1 done (sql/teaching/mark_done.sql)
    and commits once `hold_seconds` have passed since B started (or at once
    when `stop` is set). B then rolls back.
    """
    check_clause(clause)
    check_hold(hold_seconds)
    prepare(db)
    a = LockSession(db, "A", prefix=f"{LAB_PREFIX} replay")
    b = None
    try:
        b = LockSession(db, "B", prefix=f"{LAB_PREFIX} replay")
        a.begin()
        a.claim("for_update")
        a_job = a.wait_done().job_id
        b.begin()
        b.wait_done()

        started = time.monotonic()
        b.claim(clause)
        time.sleep(max(0.0, started + min(look_after_s, hold_seconds / 2) - time.monotonic()))
        still_waiting = b.busy
        b_row = row_of(activity(db), b)

        if progress:
            progress(1, 2)
        stop = stop or threading.Event()
        stop.wait(max(0.0, started + hold_seconds - time.monotonic()))
        commit_at = time.monotonic()  # A's COMMIT goes out at this moment or a little later
        a.commit()
        a.wait_done()

        b_state = b.wait_done(timeout=hold_seconds + 30)
        b_claim = b.timeline[-1]  # B's claim, the last statement it ran
        # How long A held the lock after B's claim began, on the same clock as B's
        # own timing, so "B waited at least as long as A held" is a fair comparison.
        a_held = commit_at - (b.opened + b_claim.started)
        b.rollback()
        b.wait_done()
        if progress:
            progress(2, 2)
    finally:
        a.close()  # A first: its transaction ending frees B if B still waits
        if b is not None:
            b.close()
    return ReplayResult(
        clause=clause,
        hold_seconds=hold_seconds,
        a_job=a_job,
        b_job=b_state.job_id,
        b_seconds=b_claim.seconds,
        still_waiting_at_sample=still_waiting,
        b_row=b_row,
        a_pid=a.pid,
        b_pid=b.pid,
        sqlstate=b_state.sqlstate,
        message=b_state.message,
        a_held=a_held,
        guess=guess,
        stopped=stop.is_set(),
        guide=figure(GUIDE_FIGURE[clause]),
        **server_fields(db),
    )


# --- a line of waiters: the first on the transaction, the next on the tuple ---------


@dataclass(kw_only=True)
class WaitersResult(Result):
    """A holds job 1; B, then C, claim with FOR UPDATE while A holds it."""

    a_pid: int
    b_pid: int
    c_pid: int
    b_row: ActivityRow | None
    c_row: ActivityRow | None
    b_job: int | None  # what B's claim returned once A committed
    c_job: int | None  # what C's claim returned
    served_first: str  # "B" or "C": the first waiter is not promised to be served first
    timeline: dict[str, list[Step]]
    guide: GuideFigure = field(default_factory=lambda: figure(2))

    @property
    def c_blocker_text(self) -> str:
        if self.c_waits_behind_b:
            return "B"
        return str(self.c_row.blocking_pids) if self.c_row else "none"

    @property
    def c_waits_behind_b(self) -> bool:
        """C's blocker is B, the first waiter, not A who holds the row."""
        return self.c_row is not None and self.c_row.blocking_pids == (self.b_pid,)

    def comparison(self) -> list[Comparison]:
        return [
            (
                "B (first waiter) waited on",
                None,
                self.b_row.wait_event_text if self.b_row else "none",
                " / ".join(self.guide.values["wait_event"]),
            ),
            (
                "C (second waiter) waited on",
                None,
                self.c_row.wait_event_text if self.c_row else "none",
                "not measured",
            ),
            ("pg_blocking_pids(C)", None, self.c_blocker_text, "not measured"),
        ]

    def summary(self) -> str:
        lines = [
            "A held job 1; B, then C, claimed with FOR UPDATE",
            f"  B waited on {self.b_row.wait_event_text if self.b_row else 'none'}, "
            f"blocked by {self.b_row.blocking_pids if self.b_row else ()} (A is {self.a_pid})",
            f"  C waited on {self.c_row.wait_event_text if self.c_row else 'none'}, "
            f"blocked by {self.c_row.blocking_pids if self.c_row else ()} (B is {self.b_pid})",
            f"  after A's COMMIT {self.served_first} was served first: B got "
            + (f"job {self.b_job}" if self.b_job else "no job")
            + ", C got "
            + (f"job {self.c_job}" if self.c_job else "no job"),
        ]
        return "\n".join(lines + self.footer())


def line_of_waiters(db: Database, *, settle_s: float = 15.0) -> WaitersResult:
    """A locks job 1 and holds it. B claims with FOR UPDATE and waits; then C
    does the same. We read pg_stat_activity while both wait, then A commits
    (job 1 done); one of B and C gets job 2 and commits, the other finds no
    ready job."""
    prepare(db)
    names = ("A", "B", "C")
    opened: list[LockSession] = []
    try:
        for name in names:
            opened.append(LockSession(db, name, prefix=f"{LAB_PREFIX} waiters"))
        a, b, c = opened
        for s in opened:
            s.begin()
            s.wait_done()
        a.claim("for_update")
        a.wait_done()
        b.claim("for_update")
        wait_seen(db, b, settle_s)
        c.claim("for_update")
        rows = wait_seen(db, c, settle_s)
        a.commit()
        # Who is served first is not fixed: when A's lock goes, C can lock the
        # new row version before B does, and then B waits on C. So wait for
        # whichever finishes first, commit it, and let the other finish.
        deadline = time.monotonic() + settle_s
        while b.busy and c.busy:
            if time.monotonic() > deadline:
                raise TimeoutError(f"neither B nor C finished within {settle_s:g} s of A's COMMIT")
            time.sleep(0.01)
        first, second = (b, c) if not b.busy else (c, b)
        got = {first.name: first.wait_done(timeout=settle_s).job_id}
        first.commit()
        got[second.name] = second.wait_done(timeout=settle_s).job_id
        second.rollback()
        second.wait_done()
    finally:
        for s in opened:
            s.close()
    return WaitersResult(
        a_pid=a.pid,
        b_pid=b.pid,
        c_pid=c.pid,
        b_row=row_of(rows, b),
        c_row=row_of(rows, c),
        b_job=got["B"],
        c_job=got["C"],
        served_first=first.name,
        timeline={s.name: list(s.timeline) for s in opened},
        **server_fields(db),
    )


def wait_seen(db: Database, session: Session, timeout: float) -> list[ActivityRow]:
    """Look until pg_stat_activity shows `session` waiting for a lock."""
    deadline = time.monotonic() + timeout
    while True:
        rows = activity(db, f"{LAB_PREFIX} waiters")
        mine = row_of(rows, session)
        if mine is not None and mine.waits_for_lock:
            return rows
        if time.monotonic() > deadline:
            raise TimeoutError(f"session {session.name} was not seen waiting for a lock within {timeout:g} s")
        time.sleep(0.05)
