"""The lock lab: two sessions, A and B, claiming the same two jobs.

A `Session` is one side of the lab, like one psql window: it owns one
connection and runs its statements on its own background thread, so a claim
that blocks on a row lock never blocks the caller (a notebook cell, a button).
The caller reads `session.state` at any time: idle, in transaction, waiting
(and since when), got job N (after how long), no job, or an error with its
SQLSTATE.

`activity()` shows the lab's sessions as the server sees them, from
pg_stat_activity, and `replay()` runs the guide's scripted sequence (figures
#2, #3 and #4) and returns a `ReplayResult`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from queue import SimpleQueue
from typing import Callable

import psycopg
from psycopg.pq import TransactionStatus

from ..databases import Database
from ..errors import BadInput, PgqError
from ..guide import GuideFigure, figure
from ..statements import run

# The three ways to claim, each a file sql/teaching/hold_<mode>.sql, and the
# words that end the statement (also the lab's button labels).
MODES = {"for_update": "FOR UPDATE", "nowait": "NOWAIT", "skip_locked": "SKIP LOCKED"}
GUIDE_FIGURE = {"for_update": 2, "nowait": 3, "skip_locked": 4}
LAB_PREFIX = "pgq-lab"  # every lab session's application_name starts with this
KIND = "send_receipt"
PREPARE_LOCK_TIMEOUT_MS = 5_000  # how long a reset may wait for other sessions' locks
HOLD_LIMITS = (0.5, 30.0)  # seconds A may hold job 1 in a replay

IDLE, IN_TRANSACTION, WAITING, GOT_JOB, NO_JOB, ERROR, CLOSED = (
    "idle", "in transaction", "waiting", "got job", "no job", "error", "closed")
PHASES = (IDLE, IN_TRANSACTION, WAITING, GOT_JOB, NO_JOB, ERROR, CLOSED)


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise BadInput(f"mode must be one of {', '.join(MODES)}; got {mode!r}")


class JobsBusy(PgqError):
    """The jobs table could not be reset: another session holds locks on it."""


def prepare(db: Database, jobs: int = 2, *, lock_timeout_ms: int = PREPARE_LOCK_TIMEOUT_MS) -> None:
    """Empty the jobs table and add `jobs` ready jobs, ids 1, 2, ... oldest first.

    Emptying the table must wait for every open transaction that locked a job,
    so it gives up after a few seconds with advice instead of hanging."""
    try:
        with db.connection(options=f"-c lock_timeout={int(lock_timeout_ms)}") as conn:
            run(conn, "lab/reset_jobs")
            run(conn, "lab/seed_jobs", {"kind": KIND, "count": jobs})
    except psycopg.errors.LockNotAvailable:
        raise JobsBusy(
            "Could not reset the jobs table: another session still holds a transaction with "
            "locked jobs. End it first: in the lock lab press Reset (or ROLLBACK in each session); "
            "in psql type ROLLBACK."
        ) from None


# --- what a session is doing ---------------------------------------------------


@dataclass(frozen=True)
class SessionState:
    """A snapshot of one session. `since` is on the time.monotonic() clock."""

    phase: str = IDLE
    since: float = field(default_factory=time.monotonic)
    mode: str | None = None  # the claim in flight, or the last one run
    job_id: int | None = None
    took: float | None = None  # seconds the last claim took, waiting included
    sqlstate: str | None = None
    message: str | None = None
    in_transaction: bool = False
    note: str = ""  # what the last COMMIT, ROLLBACK or BEGIN did

    def elapsed(self, now: float | None = None) -> float:
        """Seconds spent in this phase so far (for 'waiting… 1.2 s')."""
        return (time.monotonic() if now is None else now) - self.since

    def describe(self, now: float | None = None) -> str:
        """One line for a person: 'waiting… 1.2 s', 'job 2 after 2.01 s', ..."""
        if self.phase == WAITING:
            return f"waiting… {self.elapsed(now):.1f} s ({MODES[self.mode]})"
        if self.phase == GOT_JOB:
            lock = ("holding its row lock until COMMIT or ROLLBACK" if self.in_transaction
                    else "no BEGIN, so the claim committed at once and its lock is already gone")
            return f"job {self.job_id} after {self.took:.2f} s ({MODES[self.mode]}); {lock}"
        if self.phase == NO_JOB:
            return f"no job after {self.took:.2f} s ({MODES[self.mode]}): no ready job it could lock"
        if self.phase == ERROR:
            after = f" after {self.took:.2f} s" if self.took is not None else ""
            fix = "; the transaction is aborted: ROLLBACK" if self.in_transaction else ""
            return f"error {self.sqlstate}{after}: {self.message}{fix}"
        return f"{self.phase}: {self.note}" if self.note else self.phase


class Session:
    """One side of the lab, like one psql window.

    Commands (`begin`, `claim`, `commit`, `rollback`) are queued and run in
    order on the session's own thread, so they return at once, even when the
    claim will wait for a lock. Read `state`, or block on `wait_until(phase)`
    and `wait_done()`.

    As in psql, a claim outside BEGIN is a transaction of its own: it commits
    at once, so its row lock is gone as soon as it returns. `commit()` first
    marks the jobs this transaction claimed done (the hold-style worker
    finishing its work); `rollback()` leaves them ready for someone else.

    Errors the server reports (such as 55P03 from NOWAIT) become the state
    `error`, as psql would print them. Anything else the thread hits is kept
    and raised again by `wait_until` and `wait_done`. The thread never prints.
    """

    def __init__(self, db: Database, name: str = "A", *, prefix: str = f"{LAB_PREFIX} session",
                 on_change: Callable[[SessionState], None] | None = None):
        self.name = name
        self.application_name = f"{prefix} {name}"
        self.failure: BaseException | None = None
        self._on_change = on_change
        self._cond = threading.Condition()
        self._state = SessionState()
        self._pending = 0  # commands queued or running
        self._closing = False
        self._claimed: list[int] = []  # jobs this transaction claimed
        self._inbox: SimpleQueue = SimpleQueue()
        # Not autocommit: the driver sends BEGIN before a transaction's first
        # statement, and the transaction lasts until commit() or rollback().
        self._conn = db.connect(autocommit=False, application_name=self.application_name)
        self.pid: int = self._conn.info.backend_pid
        self._thread = threading.Thread(target=self._serve, name=self.application_name, daemon=True)
        self._thread.start()

    def __repr__(self) -> str:
        return f"<Session {self.name} pid={self.pid}: {self.state.describe()}>"

    # --- what the caller sees ---------------------------------------------------

    @property
    def state(self) -> SessionState:
        with self._cond:
            return self._state

    @property
    def busy(self) -> bool:
        """A command is queued or running."""
        with self._cond:
            return self._pending > 0

    @property
    def queued(self) -> int:
        """Commands waiting behind the one running (clicked ahead, as typed ahead in psql)."""
        with self._cond:
            return max(0, self._pending - 1)

    @property
    def closed(self) -> bool:
        return self._closing

    # --- commands: queued, run in order on the session's thread ----------------

    def begin(self) -> None:
        self._submit(self._do_begin)

    def claim(self, mode: str) -> None:
        """Run sql/teaching/hold_<mode>.sql: lock the oldest ready job."""
        check_mode(mode)
        self._submit(self._do_claim, mode)

    def commit(self) -> None:
        self._submit(self._do_commit)

    def rollback(self) -> None:
        self._submit(self._do_rollback)

    def cancel(self) -> bool:
        """Cancel a claim that is waiting, as Ctrl-C does in psql. The claim
        ends with error 57014; inside BEGIN, the transaction must then be
        rolled back. False if nothing was waiting."""
        if self.state.phase != WAITING:
            return False
        self._conn.cancel_safe(timeout=5)
        return True

    # --- waiting for the session ------------------------------------------------

    def wait_until(self, phase: str, timeout: float = 5.0) -> SessionState:
        """Block until the session is in `phase` (one of PHASES); return its state."""
        if phase not in PHASES:
            raise BadInput(f"phase must be one of {', '.join(PHASES)}; got {phase!r}")
        return self._wait(lambda: self._state.phase == phase, f"reach {phase!r}", timeout)

    def wait_done(self, timeout: float = 10.0) -> SessionState:
        """Block until every command sent so far has finished; return the state."""
        return self._wait(lambda: self._pending == 0, "finish its commands", timeout)

    def _wait(self, ready: Callable[[], bool], what: str, timeout: float) -> SessionState:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if self.failure is not None:
                    raise self.failure
                if ready():
                    return self._state
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"session {self.name} did not {what} within {timeout:g} s; "
                                       f"it is {self._state.describe()}")
                self._cond.wait(remaining)

    # --- ending -----------------------------------------------------------------

    def close(self, timeout: float = 10.0) -> None:
        """Cancel any waiting claim, drop queued commands, stop the thread and
        close the connection (the server rolls back an open transaction)."""
        with self._cond:
            if self._closing:
                return
            self._closing = True
        try:
            self.cancel()
        except psycopg.Error:
            pass  # the connection is going anyway; closing it below ends the statement
        self._inbox.put(None)
        self._thread.join(timeout)
        self._conn.close()  # also ends a statement the cancel did not reach
        self._thread.join(timeout)
        self._set(SessionState(CLOSED))

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- the session's thread -----------------------------------------------------

    def _submit(self, command: Callable, *args) -> None:
        with self._cond:
            if self._closing:
                raise RuntimeError(f"session {self.name} is closed")
            self._pending += 1
        self._inbox.put((command, args))
        self._notify()  # 'queued' changed

    def _serve(self) -> None:
        while True:
            item = self._inbox.get()
            if item is None:
                return
            command, args = item
            try:
                if not self._closing:  # after close(), queued commands are dropped
                    command(*args)
            except BaseException as exc:  # kept, and raised again by wait_until / wait_done
                with self._cond:
                    self.failure = exc
                    self._state = replace(self._state, phase=ERROR, since=time.monotonic(),
                                          sqlstate=getattr(exc, "sqlstate", None), message=str(exc))
            finally:
                with self._cond:
                    self._pending -= 1
                    self._cond.notify_all()
                self._notify()

    def _set(self, state: SessionState) -> None:
        with self._cond:
            self._state = state
            self._cond.notify_all()
        self._notify()

    def _notify(self) -> None:
        if self._on_change is None:
            return
        try:
            self._on_change(self.state)
        except BaseException as exc:  # a display bug must not pass silently
            with self._cond:
                self.failure = self.failure or exc
                self._cond.notify_all()

    def _in_transaction(self) -> bool:
        return self._conn.info.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR)

    def _failed_transaction(self) -> bool:
        return self._conn.info.transaction_status == TransactionStatus.INERROR

    def _do_begin(self) -> None:
        if self._in_transaction():  # psql warns the same way and changes nothing
            self._set(replace(self.state, note="already in a transaction; BEGIN changed nothing"))
            return
        run(self._conn, "lab/open_transaction")
        self._set(SessionState(IN_TRANSACTION, in_transaction=True))

    def _do_claim(self, mode: str) -> None:
        inside_begin = self._in_transaction()
        start = time.monotonic()
        self._set(SessionState(WAITING, since=start, mode=mode, in_transaction=inside_begin))
        try:
            row = run(self._conn, f"teaching/hold_{mode}").fetchone()
        except psycopg.Error as exc:
            if exc.sqlstate is None:  # not the server's answer: a broken connection
                raise
            took = time.monotonic() - start
            if not inside_begin:
                self._conn.rollback()
            message = exc.diag.message_primary or str(exc)
            self._set(SessionState(ERROR, mode=mode, took=took, sqlstate=exc.sqlstate, message=message,
                                   in_transaction=self._in_transaction()))
            return
        took = time.monotonic() - start
        job_id = row[0] if row else None
        if inside_begin and job_id is not None:
            self._claimed.append(job_id)
        if not inside_begin:
            self._conn.commit()  # a claim of its own, as in psql: the lock ends here
        self._set(SessionState(GOT_JOB if job_id is not None else NO_JOB, mode=mode, job_id=job_id,
                               took=took, in_transaction=inside_begin))

    def _do_commit(self) -> None:
        if not self._in_transaction():
            self._set(replace(self.state, note="no transaction to commit"))
            return
        if self._failed_transaction():
            note = "the transaction had failed, so COMMIT rolled it back"
        else:
            for job_id in self._claimed:  # the worker finished its job: mark it done
                run(self._conn, "teaching/mark_done", {"id": job_id})
            done = ", ".join(f"job {j}" for j in self._claimed)
            note = f"committed; {done} marked done" if done else "committed"
        self._conn.commit()
        self._claimed.clear()
        self._set(SessionState(IDLE, note=note))

    def _do_rollback(self) -> None:
        if not self._in_transaction():
            self._set(replace(self.state, note="no transaction to roll back"))
            return
        self._conn.rollback()
        back = ", ".join(f"job {j}" for j in self._claimed)
        self._claimed.clear()
        self._set(SessionState(IDLE, note=f"rolled back; {back} ready again" if back else "rolled back"))


# --- what the server sees ------------------------------------------------------------


@dataclass(frozen=True)
class ActivityRow:
    """One lab session in pg_stat_activity."""

    pid: int
    application_name: str
    state: str | None
    wait_event_type: str | None
    wait_event: str | None
    blocking_pids: tuple[int, ...]

    @property
    def session(self) -> str:
        """The lab's name for the session: 'A' for 'pgq-lab session A'."""
        return self.application_name.rsplit(" ", 1)[-1]

    @property
    def waits_for_lock(self) -> bool:
        return self.wait_event_type == "Lock"


def activity(source: Database | psycopg.Connection, prefix: str = LAB_PREFIX) -> list[ActivityRow]:
    """The lab's sessions in this database, from pg_stat_activity.

    `source` is a Database (a connection is opened for the look) or an
    autocommit connection, which a live display can reuse: each statement is
    then its own transaction, so it sees fresh activity every time."""
    if isinstance(source, Database):
        with source.connection(application_name="pgq-teach monitor") as conn:
            return activity(conn, prefix)
    rows = run(source, "lab/lock_lab_sessions", {"prefix": prefix}).fetchall()
    return [ActivityRow(pid, name, state, wtype, wevent, tuple(blockers or ()))
            for pid, name, state, wtype, wevent, blockers in rows]


# --- the guide's scripted sequence ---------------------------------------------------


@dataclass
class ReplayResult:
    mode: str
    hold_seconds: float
    a_job: int | None  # the job A locked: 1
    b_job: int | None  # what B's claim returned: None for no row or an error
    b_seconds: float  # how long B's claim took, waiting included
    still_waiting_at_sample: bool  # was B's claim still running when we looked?
    b_server_state: str | None  # B's row in pg_stat_activity then: 'active', 'idle in transaction'
    wait_event: tuple[str | None, str | None] | None  # B's (wait_event_type, wait_event) then
    b_blocked_by: tuple[int, ...]  # pg_blocking_pids(B) then
    a_pid: int
    b_pid: int
    sqlstate: str | None
    message: str | None
    a_held: float  # seconds from B's claim to A's COMMIT
    server_version: str
    guess: float | None = None
    guide: GuideFigure = field(default_factory=lambda: figure(2))

    @property
    def blocked_by_a(self) -> bool:
        return self.a_pid in self.b_blocked_by

    @property
    def wait_event_text(self) -> str:
        if not self.wait_event or not any(self.wait_event):
            return "none"
        return " / ".join(str(part) for part in self.wait_event)

    def summary(self) -> str:
        if self.sqlstate:
            b_got = f"failed after {self.b_seconds:.3f} s with {self.sqlstate}: {self.message}"
        elif self.b_job is None:
            b_got = f"got no job after {self.b_seconds:.3f} s"
        else:
            b_got = f"got job {self.b_job} after {self.b_seconds:.3f} s"
        if self.still_waiting_at_sample:
            seen = f"  B was waiting on {self.wait_event_text}" + (", blocked by A" if self.blocked_by_a else "")
        else:
            seen = (f"  B had already finished when we looked: {self.b_server_state} "
                    f"({self.wait_event_text}), waiting for nothing but its client")
        lines = [
            f"{MODES[self.mode]}: A locked job {self.a_job} with FOR UPDATE and held it; "
            f"B ran the claim with {MODES[self.mode]}",
            seen,
            f"  B {b_got}" + (f"  (your guess: {self.guess:g} s)" if self.guess is not None else ""),
            f"  A marked job {self.a_job} done and committed after {self.a_held:.2f} s",
            f"  {self.guide}",
            f"  this server: PostgreSQL {self.server_version}",
        ]
        return "\n".join(lines)

    def comparison(self) -> list[tuple[str, object, object, object]]:
        """Rows (measure, your guess, this server, the guide) for a comparison table."""
        values = self.guide.values
        if self.mode == "nowait":
            return [("B's error (SQLSTATE)", None, self.sqlstate or "none", values["sqlstate"]),
                    ("B's answer came after, s", self.guess, self.b_seconds, "at once")]
        if self.mode == "skip_locked":
            return [("B's job", None, self.b_job, values["job"]),
                    ("B's wait, s", self.guess, self.b_seconds, f"under {values['under_s']:g}")]
        return [("B waited on", None, self.wait_event_text, " / ".join(values["wait_event"])),
                ("B's job", None, self.b_job, values["job"]),
                ("B's wait, s", self.guess, self.b_seconds, values["waited_s"])]


def _check_hold(hold_seconds) -> None:
    low, high = HOLD_LIMITS
    if isinstance(hold_seconds, bool) or not isinstance(hold_seconds, (int, float)) \
            or not low <= hold_seconds <= high:
        raise BadInput(f"hold_seconds must be a number from {low:g} to {high:g}, got {hold_seconds!r}")


def replay(db: Database, mode: str = "for_update", hold_seconds: float = 2.0, *,
           guess: float | None = None, look_after: float = 1.0) -> ReplayResult:
    """The guide's two-session sequence on two ready jobs (ids 1 and 2).

    A begins and locks job 1 with FOR UPDATE. B begins and runs the claim in
    `mode`. After `look_after` seconds (at most half the hold) we read B's row
    in pg_stat_activity. A marks job 1 done (sql/teaching/mark_done.sql) and
    commits once `hold_seconds` have passed since B started. B then rolls back.
    """
    check_mode(mode)
    _check_hold(hold_seconds)
    prepare(db)
    a = Session(db, "A", prefix=f"{LAB_PREFIX} replay")
    b = None
    try:
        b = Session(db, "B", prefix=f"{LAB_PREFIX} replay")
        a.begin()
        a.claim("for_update")
        a_job = a.wait_done().job_id
        b.begin()
        b.wait_done()

        started = time.monotonic()
        b.claim(mode)
        time.sleep(max(0.0, started + min(look_after, hold_seconds / 2) - time.monotonic()))
        still_waiting = b.busy
        b_row = next((r for r in activity(db) if r.pid == b.pid), None)

        time.sleep(max(0.0, started + hold_seconds - time.monotonic()))
        a.commit()
        a.wait_done()
        a_held = time.monotonic() - started

        b_state = b.wait_done(timeout=hold_seconds + 30)
        b.rollback()
        b.wait_done()
    finally:
        a.close()  # A first: its transaction ending frees B if B still waits
        if b is not None:
            b.close()
    return ReplayResult(
        mode=mode, hold_seconds=hold_seconds, a_job=a_job, b_job=b_state.job_id,
        b_seconds=b_state.took, still_waiting_at_sample=still_waiting,
        b_server_state=b_row.state if b_row else None,
        wait_event=(b_row.wait_event_type, b_row.wait_event) if b_row else None,
        b_blocked_by=b_row.blocking_pids if b_row else (), a_pid=a.pid, b_pid=b.pid,
        sqlstate=b_state.sqlstate, message=b_state.message, a_held=a_held,
        server_version=db.server.version, guess=guess, guide=figure(GUIDE_FIGURE[mode]),
    )
