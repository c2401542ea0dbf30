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
from .results import Comparison, Result, finish, guess_text, note
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

    def report(self) -> list[str]:
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
        return [
            note(
                f"{CLAUSES[self.clause]}: A locked job {self.a_job} with FOR UPDATE and held it; "
                f"B ran the claim with {CLAUSES[self.clause]}"
            ),
            note(seen),
            f"  B {b_got}  (your guess: {guess_text(self.guess, ' s')})",
            note(f"  A marked job {self.a_job} done and committed after {self.a_held:.2f} s"),
            *self.footer(),
        ]

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
    return finish(
        ReplayResult,
        db,
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
        stopped=stop,
        guide=figure(GUIDE_FIGURE[clause]),
    )


# --- a line of waiters: the first on the transaction, the next on the tuple ---------


WAITER_NAMES = ("B", "C", "D", "E", "F")


@dataclass(kw_only=True)
class WaitersResult(Result):
    """A holds job 1; B, C, D (in that order) claim it with FOR UPDATE while A holds it."""

    a_pid: int
    pids: dict[str, int]  # each waiter's pid, by name, in the order they queued
    rows: dict[str, ActivityRow | None]  # each waiter in pg_stat_activity while all of them waited
    jobs: dict[str, int | None]  # what each waiter's claim returned once A committed
    served_first: str  # the waiter whose claim returned first: the first in line is not promised it
    timeline: dict[str, list[Step]]
    guide: GuideFigure = field(default_factory=lambda: figure(2))

    # B and C by name, as lesson 02 and the lock tests read them
    @property
    def b_pid(self) -> int:
        return self.pids["B"]

    @property
    def c_pid(self) -> int:
        return self.pids["C"]

    @property
    def b_row(self) -> ActivityRow | None:
        return self.rows["B"]

    @property
    def c_row(self) -> ActivityRow | None:
        return self.rows["C"]

    @property
    def b_job(self) -> int | None:
        return self.jobs["B"]

    @property
    def c_job(self) -> int | None:
        return self.jobs["C"]

    def blockers(self, name: str) -> tuple[str, ...]:
        """pg_blocking_pids() of one waiter, as session names (A, B, ...)."""
        names = {self.a_pid: "A"} | {pid: who for who, pid in self.pids.items()}
        row = self.rows[name]
        return tuple(names.get(pid, str(pid)) for pid in row.blocking_pids) if row else ()

    @property
    def c_waits_behind_b(self) -> bool:
        """C's blocker is B, the first waiter, not A who holds the row."""
        return self.blockers("C") == ("B",)

    def comparison(self) -> list[Comparison]:
        rows: list[Comparison] = []
        for n, name in enumerate(self.pids):
            row = self.rows[name]
            rows.append(
                (
                    f"{name} (waiter {n + 1}) waited on; blocked by",
                    None,
                    f"{row.wait_event_text if row else 'none'}; {', '.join(self.blockers(name)) or 'none'}",
                    " / ".join(self.guide.values["wait_event"]) + "; A" if n == 0 else "not measured",
                )
            )
        return rows

    def report(self) -> list[str]:
        lines: list[str] = [note(f"A held job 1; {', then '.join(self.pids)} claimed it with FOR UPDATE")]
        for name, row in self.rows.items():  # the table's rows
            lines.append(
                f"  {name} waited on {row.wait_event_text if row else 'none'}, "
                f"blocked by {', '.join(self.blockers(name)) or 'nobody'}"
            )
        got = ", ".join(
            f"{name} got " + (f"job {job}" if job else "no job") for name, job in self.jobs.items()
        )
        lines.append(note(f"  after A's COMMIT {self.served_first} was served first: {got}"))
        return lines + self.footer()


def line_of_waiters(db: Database, *, waiters: int = 3, settle_s: float = 15.0) -> WaitersResult:
    """A locks job 1 and holds it. B claims with FOR UPDATE and waits; then C,
    then D, each once the one before is seen waiting. We read pg_stat_activity
    while all wait, then A commits (job 1 done); the waiters finish one at a
    time, each committing as soon as its claim returns: one gets job 2, the
    others find no ready job."""
    waiters = checks.whole_number("waiters", waiters, 2, len(WAITER_NAMES))
    prepare(db)
    names = ("A", *WAITER_NAMES[:waiters])
    opened: list[LockSession] = []
    try:
        for name in names:
            opened.append(LockSession(db, name, prefix=f"{LAB_PREFIX} waiters"))
        a, *line = opened
        for s in opened:
            s.begin()
            s.wait_done()
        a.claim("for_update")
        a.wait_done()
        rows: list[ActivityRow] = []
        for s in line:
            s.claim("for_update")
            rows = wait_seen(db, s, settle_s)
        seen = {s.name: row_of(rows, s) for s in line}
        a.commit()
        # Who is served first is not promised: the first waiter re-reads job 1
        # first, but A changed it, so all of them move on and race for the next
        # ready row, which has no queue. So finish them in the order their
        # claims return, each committing (ending its transaction) at once.
        got: dict[str, int | None] = {}
        order: list[str] = []
        deadline = time.monotonic() + settle_s
        pending = list(line)
        while pending:
            done = next((s for s in pending if not s.busy), None)
            if done is None:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"the waiters had not all finished within {settle_s:g} s of A's COMMIT"
                    )
                time.sleep(0.01)
                continue
            got[done.name] = done.wait_done(timeout=settle_s).job_id
            order.append(done.name)
            done.commit()
            done.wait_done()
            pending.remove(done)
    finally:
        for s in opened:
            s.close()
    return finish(
        WaitersResult,
        db,
        a_pid=a.pid,
        pids={s.name: s.pid for s in line},
        rows=seen,
        jobs={s.name: got[s.name] for s in line},
        served_first=order[0],
        timeline={s.name: list(s.timeline) for s in opened},
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
