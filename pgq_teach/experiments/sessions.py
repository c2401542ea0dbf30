"""Scripted sessions, like several psql windows, and the server's view of them.

A `Session` owns one connection and runs its commands (BEGIN, any named
statement from sql/, COMMIT, ROLLBACK) in order on its own thread, so a
statement that waits for a lock never blocks the caller. It records a
timeline: one `Step` per statement, with when it started and ended, what it
returned, or the error the server gave. Read `session.state` at any time.

An `ActivityMonitor` reads `pg_stat_activity` for the sessions whose
application_name starts with a prefix, on its own connection, optionally on
a polling thread while something is happening. It keeps the last error it hit
and raises it again from `read()` and `wait_for()`: a monitor that fails says so.

Lessons that script sessions (locks; later the crash, fencing, NOTIFY and
idle-transaction lessons) build on these two.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from queue import SimpleQueue
from typing import Any, TypeVar

import psycopg
from psycopg.pq import TransactionStatus

from ..databases import Database
from ..errors import BadInput
from ..statements import run

LAB_PREFIX = "pgq-lab"  # every lab session's application_name starts with this
MONITOR_NAME = "pgq-teach monitor"
POLL_SECONDS = 0.25  # how often a watching monitor reads pg_stat_activity

IDLE, IN_TRANSACTION, WAITING, DONE, GOT_JOB, NO_JOB, ERROR, CLOSED = (
    "idle",
    "in transaction",
    "waiting",
    "done",
    "got job",
    "no job",
    "error",
    "closed",
)
PHASES = (IDLE, IN_TRANSACTION, WAITING, DONE, GOT_JOB, NO_JOB, ERROR, CLOSED)


@dataclass(frozen=True)
class Step:
    """One statement a session ran; times in seconds since the session opened."""

    statement: str
    started: float
    ended: float
    rows: tuple[tuple, ...] = ()
    in_transaction: bool = False
    sqlstate: str | None = None
    message: str | None = None
    columns: tuple[str, ...] = ()  # the rows' column names, in order

    @property
    def seconds(self) -> float:
        return self.ended - self.started

    def named(self) -> list[dict[str, Any]]:
        """The rows keyed by column name (statements.record builds a record from one)."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    @property
    def failed(self) -> bool:
        return self.sqlstate is not None


ClosesT = TypeVar("ClosesT", bound="ClosesOnExit")


class ClosesOnExit:
    """A lab part that owns connections: `with` it, and its close() runs at the
    end of the block, even after an error."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: ClosesT) -> ClosesT:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class SessionState:
    """A snapshot of one session. `since` is on the time.monotonic() clock."""

    phase: str = IDLE
    since: float = field(default_factory=time.monotonic)
    label: str | None = None  # what is in flight, or what ran last ("FOR UPDATE", a statement name)
    job_id: int | None = None
    took: float | None = None  # seconds the last statement took, waiting included
    sqlstate: str | None = None
    message: str | None = None
    in_transaction: bool = False
    note: str = ""  # what the last COMMIT, ROLLBACK or BEGIN did

    def elapsed(self, now: float | None = None) -> float:
        """Seconds spent in this phase so far (for 'waiting… 1.2 s')."""
        return (time.monotonic() if now is None else now) - self.since

    def describe(self, now: float | None = None) -> str:
        """One line for a person: 'waiting… 1.2 s', 'job 2 after 2.00 s', ..."""
        if self.phase == WAITING:
            return f"waiting… {self.elapsed(now):.1f} s ({self.label})"
        if self.phase == GOT_JOB:
            lock = (
                "holding its row lock until COMMIT or ROLLBACK"
                if self.in_transaction
                else "no BEGIN, so the claim committed at once and its lock is already gone"
            )
            return f"job {self.job_id} after {self.took:.2f} s ({self.label}); {lock}"
        if self.phase == NO_JOB:
            return f"no job after {self.took:.2f} s ({self.label}): no ready job it could lock"
        if self.phase == DONE:
            return f"{self.label} done after {self.took:.2f} s"
        if self.phase == ERROR:
            after = f" after {self.took:.2f} s" if self.took is not None else ""
            fix = "; the transaction is aborted: ROLLBACK" if self.in_transaction else ""
            return f"error {self.sqlstate}{after}: {self.message}{fix}"
        return f"{self.phase}: {self.note}" if self.note else self.phase


class Session(ClosesOnExit):
    """One scripted session, like one psql window.

    Commands (`begin`, `run`, `commit`, `rollback`) are queued and run in
    order on the session's own thread, so they return at once, even when a
    statement will wait for a lock. Read `state` and `timeline`, or block on
    `wait_until(phase)` and `wait_done()`.

    As in psql, a statement outside BEGIN is a transaction of its own and
    commits at once. Errors the server reports (such as 55P03) become the
    state `error` and a failed `Step`, as psql would print them. Anything
    else the thread hits is kept and raised again by `wait_until` and
    `wait_done`. The thread never prints.
    """

    def __init__(
        self,
        db: Database,
        name: str = "A",
        *,
        prefix: str = f"{LAB_PREFIX} session",
        on_change: Callable[[SessionState], None] | None = None,
    ):
        self.name = name
        self.application_name = f"{prefix} {name}"
        self.failure: BaseException | None = None
        self.timeline: list[Step] = []
        self.on_change = on_change
        self.cond = threading.Condition()
        self.current = SessionState()
        self.pending = 0  # commands queued or running
        self.closing = False
        self.inbox: SimpleQueue = SimpleQueue()
        self.opened = time.monotonic()
        # Not autocommit: the driver sends BEGIN before a transaction's first
        # statement, and the transaction lasts until commit() or rollback().
        self.conn = db.connect(autocommit=False, application_name=self.application_name)
        self.pid: int = self.conn.info.backend_pid
        self.thread = threading.Thread(target=self.serve, name=self.application_name, daemon=True)
        self.thread.start()

    def __repr__(self) -> str:
        return f"<Session {self.name} pid={self.pid}: {self.state.describe()}>"

    # --- what the caller sees ---------------------------------------------------

    @property
    def state(self) -> SessionState:
        with self.cond:
            return self.current

    @property
    def busy(self) -> bool:
        """A command is queued or running."""
        with self.cond:
            return self.pending > 0

    @property
    def queued(self) -> int:
        """Commands waiting behind the one running (clicked ahead, as typed ahead in psql)."""
        with self.cond:
            return max(0, self.pending - 1)

    @property
    def closed(self) -> bool:
        return self.closing

    @property
    def in_transaction(self) -> bool:
        return self.conn.info.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR)

    @property
    def transaction_failed(self) -> bool:
        return self.conn.info.transaction_status == TransactionStatus.INERROR

    # --- commands: queued, run in order on the session's thread ----------------

    def begin(self) -> None:
        self.submit(self.do_begin)

    def run(
        self, statement: str, params: Mapping[str, Any] | None = None, *, label: str | None = None
    ) -> None:
        """Run the named statement from sql/ (as `statements.run` does)."""
        self.submit(self.do_run, statement, params, label or statement)

    def commit(self) -> None:
        self.submit(self.do_commit)

    def rollback(self) -> None:
        self.submit(self.do_rollback)

    def cancel(self) -> bool:
        """Cancel a statement that is waiting, as Ctrl-C does in psql. It ends
        with error 57014; inside BEGIN, the transaction must then be rolled
        back. False if nothing was waiting."""
        if self.state.phase != WAITING:
            return False
        self.conn.cancel_safe(timeout=5)
        return True

    # --- waiting for the session ------------------------------------------------

    def wait_until(self, phase: str, timeout: float = 5.0) -> SessionState:
        """Block until the session is in `phase` (one of PHASES); return its state."""
        if phase not in PHASES:
            raise BadInput(f"phase must be one of {', '.join(PHASES)}; got {phase!r}")
        return self.wait_for(lambda: self.current.phase == phase, f"reach {phase!r}", timeout)

    def wait_done(self, timeout: float = 10.0) -> SessionState:
        """Block until every command sent so far has finished; return the state."""
        return self.wait_for(lambda: self.pending == 0, "finish its commands", timeout)

    def wait_for(self, ready: Callable[[], bool], what: str, timeout: float) -> SessionState:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                if self.failure is not None:
                    raise self.failure
                if ready():
                    return self.current
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"session {self.name} did not {what} within {timeout:g} s; "
                        f"it is {self.current.describe()}"
                    )
                self.cond.wait(remaining)

    # --- ending -----------------------------------------------------------------

    def close(self, timeout: float = 10.0) -> None:
        """Cancel any waiting statement, drop queued commands, stop the thread
        and close the connection (the server rolls back an open transaction)."""
        with self.cond:
            if self.closing:
                return
            self.closing = True
        try:
            self.cancel()
        except psycopg.Error:
            pass  # the connection is going anyway; closing it below ends the statement
        self.inbox.put(None)
        self.thread.join(timeout)
        self.conn.close()  # also ends a statement the cancel did not reach
        self.thread.join(timeout)
        self.set(SessionState(CLOSED))

    # --- the session's thread -----------------------------------------------------

    def submit(self, command: Callable, *args) -> None:
        with self.cond:
            if self.closing:
                raise RuntimeError(f"session {self.name} is closed")
            self.pending += 1
        self.inbox.put((command, args))
        self.notify()  # 'queued' changed

    def serve(self) -> None:
        while True:
            item = self.inbox.get()
            if item is None:
                return
            command, args = item
            try:
                if not self.closing:  # after close(), queued commands are dropped
                    command(*args)
            except BaseException as exc:  # kept, and raised again by wait_until / wait_done
                with self.cond:
                    self.failure = exc
                    self.current = replace(
                        self.current,
                        phase=ERROR,
                        since=time.monotonic(),
                        sqlstate=getattr(exc, "sqlstate", None),
                        message=str(exc),
                    )
            finally:
                with self.cond:
                    self.pending -= 1
                    self.cond.notify_all()
                self.notify()

    def set(self, state: SessionState) -> None:
        with self.cond:
            self.current = state
            self.cond.notify_all()
        self.notify()

    def notify(self) -> None:
        if self.on_change is None:
            return
        try:
            self.on_change(self.state)
        except BaseException as exc:  # a display bug must not pass silently
            with self.cond:
                self.failure = self.failure or exc
                self.cond.notify_all()

    def do_begin(self) -> None:
        if self.in_transaction:  # psql warns the same way and changes nothing
            self.set(replace(self.state, note="already in a transaction; BEGIN changed nothing"))
            return
        run(self.conn, "lab/open_transaction")
        self.set(SessionState(IN_TRANSACTION, in_transaction=True))

    def execute(self, statement: str, params: Mapping[str, Any] | None, label: str) -> Step:
        """Run one statement on this thread, as psql would, and record its Step."""
        inside_begin = self.in_transaction
        start = time.monotonic()
        self.set(SessionState(WAITING, since=start, label=label, in_transaction=inside_begin))
        try:
            cursor = run(self.conn, statement, params)
            rows = tuple(cursor.fetchall()) if cursor.description else ()
            columns = tuple(column.name for column in cursor.description or ())
        except psycopg.Error as exc:
            if exc.sqlstate is None:  # not the server's answer: a broken connection
                raise
            if not inside_begin:
                self.conn.rollback()
            step = Step(
                statement,
                start - self.opened,
                time.monotonic() - self.opened,
                (),
                inside_begin,
                exc.sqlstate,
                exc.diag.message_primary or str(exc),
            )
        else:
            if not inside_begin:
                self.conn.commit()  # a statement of its own, as in psql
            ended = time.monotonic() - self.opened
            step = Step(statement, start - self.opened, ended, rows, inside_begin, columns=columns)
        self.timeline.append(step)
        return step

    def do_run(self, statement: str, params: Mapping[str, Any] | None, label: str) -> None:
        step = self.execute(statement, params, label)
        if step.failed:
            self.set(
                SessionState(
                    ERROR,
                    label=label,
                    took=step.seconds,
                    sqlstate=step.sqlstate,
                    message=step.message,
                    in_transaction=self.in_transaction,
                )
            )
        else:
            self.set(SessionState(DONE, label=label, took=step.seconds, in_transaction=self.in_transaction))

    def before_commit(self) -> str:
        """What a session does just before COMMIT; returns a note for the state."""
        return "committed"

    def do_commit(self) -> None:
        if not self.in_transaction:
            self.set(replace(self.state, note="no transaction to commit"))
            return
        if self.transaction_failed:
            # PostgreSQL accepts COMMIT here and answers ROLLBACK: nothing is kept.
            note = "the transaction had failed, so COMMIT rolled it back"
        else:
            note = self.before_commit()
        self.conn.commit()
        self.after_end()
        self.set(SessionState(IDLE, note=note))

    def after_end(self) -> str:
        """Called when the transaction ends; returns a note on what it released."""
        return ""

    def do_rollback(self) -> None:
        if not self.in_transaction:
            self.set(replace(self.state, note="no transaction to roll back"))
            return
        self.conn.rollback()
        released = self.after_end()
        self.set(SessionState(IDLE, note=f"rolled back; {released}" if released else "rolled back"))


# --- what the server sees ------------------------------------------------------------


@dataclass(frozen=True)
class ActivityRow:
    """One session in pg_stat_activity."""

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

    @property
    def wait_event_text(self) -> str:
        if not self.wait_event_type:
            return "none"
        return f"{self.wait_event_type} / {self.wait_event}"


def activity(source: Database | psycopg.Connection, prefix: str = LAB_PREFIX) -> list[ActivityRow]:
    """The sessions named `prefix…` in this database, from pg_stat_activity.

    `source` is a Database (a connection is opened for the look) or an
    autocommit connection, which a live display can reuse: each statement is
    then its own transaction, so it sees fresh activity every time."""
    if isinstance(source, Database):
        with source.connection(application_name=MONITOR_NAME) as conn:
            return activity(conn, prefix)
    rows = run(source, "lab/lock_lab_sessions", {"prefix": prefix}).fetchall()
    return [
        ActivityRow(pid, name, state, wtype, wevent, tuple(blockers or ()))
        for pid, name, state, wtype, wevent, blockers in rows
    ]


class ActivityMonitor:
    """pg_stat_activity for the sessions named `prefix…`, on its own connection.

    `read()` looks now. `watch()` keeps reading on a thread every
    POLL_SECONDS while `busy()` says something is happening, and hands each
    look to `on_rows(rows)`. An error is kept in `error`, handed to
    `on_error`, and raised again by the next `read()` or `wait_for()`.
    """

    def __init__(
        self,
        db: Database,
        prefix: str = LAB_PREFIX,
        *,
        on_rows: Callable[[list[ActivityRow]], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        busy: Callable[[], bool] = lambda: False,
    ):
        self.db, self.prefix = db, prefix
        self.on_rows, self.on_error, self.busy = on_rows, on_error, busy
        self.rows: list[ActivityRow] = []
        self.error: BaseException | None = None
        self.closed = False
        self.conn: psycopg.Connection | None = None
        self.conn_lock = threading.Lock()
        self.changed = threading.Condition()
        self.thread_lock = threading.Lock()  # guards the watcher's start and end
        self.thread: threading.Thread | None = None
        self.wanted = False
        self.stopping = threading.Event()

    def read(self) -> list[ActivityRow]:
        """Look now; hand the rows to on_rows; raise a kept error again."""
        if self.error is not None:
            raise self.error
        with self.conn_lock:
            if self.closed:
                return self.rows
            if self.conn is None or self.conn.closed:
                self.conn = self.db.connect(application_name=MONITOR_NAME)
            rows = activity(self.conn, self.prefix)
        if self.on_rows is not None:
            self.on_rows(rows)
        with self.changed:
            self.rows = rows
            self.changed.notify_all()
        return rows

    def wait_for(self, match: Callable[[ActivityRow], bool], what: str, timeout: float = 5.0) -> ActivityRow:
        """Keep looking until a row matches; return it."""
        deadline = time.monotonic() + timeout
        while True:
            self.watch()
            with self.changed:
                if self.error is not None:
                    raise self.error
                row = next((r for r in self.rows if match(r)), None)
                if row is not None:
                    return row
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"pg_stat_activity did not show {what} within {timeout:g} s")
                self.changed.wait(min(remaining, POLL_SECONDS))

    def watch(self) -> None:
        """Read soon, and keep reading while busy(); starts the thread if needed."""
        with self.thread_lock:
            if self.closed:
                return
            self.wanted = True
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self.loop, name=f"{LAB_PREFIX} activity", daemon=True)
                self.thread.start()

    @property
    def watching(self) -> bool:
        thread = self.thread
        return thread is not None and thread.is_alive()

    def loop(self) -> None:
        # Runs only while there is something to show; never prints.
        try:
            while not self.stopping.is_set():
                with self.thread_lock:
                    self.wanted = False
                self.read()
                with self.thread_lock:
                    if not self.wanted and not self.busy():
                        self.thread = None
                        return
                self.stopping.wait(POLL_SECONDS)
        except BaseException as exc:  # kept, handed on, and raised again by read() and wait_for()
            if self.closed:
                return  # the connection closed under us: expected
            self.error = exc
            if self.on_error is not None:
                self.on_error(exc)
            with self.changed:
                self.changed.notify_all()

    def close(self) -> None:
        with self.thread_lock:
            self.closed = True
            thread = self.thread
        self.stopping.set()
        if thread is not None:
            thread.join(10)
        with self.conn_lock:
            if self.conn is not None:
                self.conn.close()


# --- several sessions released at once -------------------------------------------------


def together(count: int, target: Callable[[int], object]) -> float:
    """Run target(i) for i in range(count), each on its own thread, all released
    at once by a barrier (so none gets a head start while the others connect);
    the seconds from the release until the last one finished. The first error a
    thread hit is raised here, after every thread has ended."""
    errors: list[BaseException] = []
    gate = threading.Barrier(count + 1)

    def go(i: int) -> None:
        try:
            gate.wait()
            target(i)
        except BaseException as exc:  # raised again below, on the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(i,), daemon=True) for i in range(count)]
    for t in threads:
        t.start()
    gate.wait()
    began = time.perf_counter()
    for t in threads:
        t.join()
    took = time.perf_counter() - began
    if errors:
        raise errors[0]
    return took


# --- added for the crash and fencing labs (lessons 04, 05) ------------------------------


def run_and_wait(
    session: Session, statement: str, params: Mapping[str, Any] | None = None, *, timeout: float = 10.0
) -> Step:
    """Run one named statement on the session and wait for it: its Step
    (check `step.failed` for the server's error), as a script types a line
    into psql and reads the answer before the next one."""
    session.run(statement, params)
    session.wait_done(timeout)
    return session.timeline[-1]


def wait_gone(monitor: ActivityMonitor, pids: list[int], timeout: float = 5.0) -> None:
    """Keep looking until none of `pids` is in pg_stat_activity: a session
    ended with pg_terminate_backend takes a moment to go."""
    ended = set(pids)
    deadline = time.monotonic() + timeout
    while any(row.pid in ended for row in monitor.read()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"sessions {sorted(ended)} were still there {timeout:g} s after they ended")
        time.sleep(0.02)


class LabMonitor(ActivityMonitor):
    """An ActivityMonitor that also reads a lab's own read-only statements
    (a board of jobs, pg_locks) on its connection, so one connection and one
    polling thread serve a lab's whole live view."""

    def look(
        self, statement: str, params: Mapping[str, Any] | None = None, *, row_factory: Any = None
    ) -> list[Any]:
        """The statement's rows, as tuples or as `row_factory` shapes them (statements.records)."""
        with self.conn_lock:
            if self.closed:
                return []
            if self.conn is None or self.conn.closed:
                self.conn = self.db.connect(application_name=MONITOR_NAME)
            return run(self.conn, statement, params, row_factory=row_factory).fetchall()
