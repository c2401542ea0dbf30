"""Where the learner's SQL runs, and what bounds it.

Threat model. A learner with a notebook kernel is trusted with their own
server (the kernel holds its superuser's address), so a class gives each
learner a server of their own (docs/classroom.md); never a shared superuser: a
shared PostgreSQL behind PGQ_DSN is for one person. What the sandbox
guarantees is that nothing typed into "Your turn" can break the learner's
course, their other lessons or their saved work, and, with a server each,
nothing one learner does reaches another. So the SQL typed into "Your turn" is
treated as an attacker's: it must not reach a superuser's rights, and must not
damage the course, hang a widget or fill a disk.

Where it runs: only on the checker (`infra.server.get_checker`), an embedded
PostgreSQL 18 of its own beside the lessons' data folder, started on demand,
whatever server the lessons use (PGQ_DSN, Docker or embedded); the lessons'
server, with the learner's measurements and progress, never runs a learner
statement. The checker's processes run under an address-space limit
(embedded.CHECKER_ADDRESS_SPACE, inherited by every backend), so a statement
that would take all the memory ends in PostgreSQL's own "out of memory" error;
and a backend that does not stop when cancelled (one deep in the planner never
reads a cancel) is ended by killing the checker, which the next statement finds
started afresh from its template (CheckerRestarted says so in the verdict).
Disk: temp_file_limit, and MAX_SCRATCH_BYTES checked after each run of a
statement that writes.

Who is trusted, and what each role can do:

- The course's own connection (`Database.connection()`, the checker's
  superuser) is trusted and runs only the course's statements from
  `sql/`. It never touches an object the learner controls; and the learner
  controls none: no table, function, statistics object, trigger, operator or
  default is ever owned or made by the learner's role, so nothing the
  superuser runs (seeding, VACUUM, dropping the scratch database) can call
  learner code.
- `pgq_learner` (ROLE) runs the learner's statement, in a scratch database
  made for the check (never a lesson's own). It is no superuser and a member
  of no role; it may SELECT, INSERT, UPDATE and DELETE on the scratch `jobs`
  table and read what PUBLIC may read (pg_stat_activity shows it only its own
  sessions' details); it owns nothing and may create nothing (no CREATE on the
  schema, no temporary tables), and may not signal another session
  (pg_cancel_backend and pg_terminate_backend are revoked from PUBLIC in the
  scratch database). Its defaults are RESET ALL and set again on every check.
- `pgq_checker` (CHECKER_ROLE) owns the scratch `jobs` table in the index
  exercise (lesson 08) only. It is no superuser, a member of no role, and may
  create nothing; it runs the learner's CREATE INDEX once the parse tree shows
  a plain index on jobs that calls no function (`learner_sql`), then ANALYZE,
  the claim's EXPLAIN and the size reads.

Limits the learner cannot lift, whatever the session's settings say: every
check opens fresh sessions, which pin the timeouts, standard_conforming_strings
(so the server reads strings as `learner_sql` did) and search_path above any
database default; the roles' temp_file_limit (TEMP_FILE_LIMIT) bounds the disk
a statement's sorts may fill, and only a superuser may change it; a
client-side watchdog cancels any learner statement at STATEMENT_TIMEOUT_S plus
WATCHDOG_GRACE_S and closes its session (a claim racing other workers gets
RACE_TIMEOUT_S, once it has run alone within STATEMENT_TIMEOUT_S, and the whole
race claim.RACE_BUDGET_S); a statement returning more than MAX_ROWS rows or
MAX_BYTES characters is stopped and refused; Stop
(`stop_checks`) cancels every learner session of an exercise at once; and
`one_check`, which `exercises.check` holds, lets one check of an exercise run
at a time in a process.

What bounds memory: the checker's address-space limit, and before it a value's growth is
refused from the parse tree (no WITH
RECURSIVE, no ARRAY(SELECT ...), and no statement whose inlined expressions
pass MAX_EXPANSION nodes and characters or read tables over MAX_RELATIONS times,
`reading.Reading`), because the
cancel cannot end a backend that is not listening: one that builds a huge expression tree in the
planner checks for no cancel and outlives its closed session, until the watchdog kills the
checker or the limit ends it. A value the
reader lets through is at most about MAX_EXPANSION times a column's own size.

Not bounded yet: learners on one shared server share one role and one scratch
database per exercise, so they see each other's sessions (and their SQL) in
pg_stat_activity; and a check drops (WITH FORCE, so ending its sessions) and
makes again the scratch database under another learner's running check of the
same exercise, whose verdict is then an error, or judged on the other check's
data. `one_check` holds within one process only.

The server has the last word on the text as well: `parse` hands it to
PostgreSQL as an unnamed prepared statement (nothing runs), which refuses more
than one command and reports any syntax or name error.
"""

from __future__ import annotations

import secrets
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import pq
from psycopg.conninfo import make_conninfo
from psycopg.pq.abc import PGresult

from ..databases import Database, open_database
from ..infra.server import checker_backend, get_checker, kill_checker, rebuild_checker
from ..statements import run, run_one
from .learner_sql import LearnerSQL, Refused

ROLE = "pgq_learner"
CHECKER_ROLE = "pgq_checker"
STATEMENT_TIMEOUT_S = 3
LOCK_TIMEOUT_S = 2
# A statement racing other workers' sessions also waits for their commits, each a WAL
# flush, one lock after another; a busy disk has stretched that past the 3 s a lone
# statement gets. LOCK_TIMEOUT_S still bounds each single wait.
RACE_TIMEOUT_S = 10
CHECKER_TIMEOUT_S = 30  # ANALYZE and a CREATE INDEX on the index exercise's 100,100 rows
WATCHDOG_GRACE_S = 1.0  # the client's deadline: the server's timeout plus this
MAX_ROWS = 1_000
MAX_BYTES = 1_000_000  # of the rows one learner statement returns, as the client reads them
TEMP_FILE_LIMIT = "64MB"  # per session, for sorts and hashes that spill: the disk a statement may fill
# The most the scratch database may hold after a statement that writes (read after the runs
# of one, SIZE_EVERY_S apart): a check's own scratch database takes 7 to 9 MB after its model
# answer (the index exercise's, with 100,100 rows and two indexes, 21.6 MB), so a check past this is growing
# it, not grading it.
MAX_SCRATCH_BYTES = 128 * 2**20
# The size read costs a round trip or two (10 to 30 ms on a loaded machine, measured), and a
# check runs a claim hundreds of times: read at most this often on one session. A run that
# grows the table by more than the limit in that time has to write it, which takes longer.
SIZE_EVERY_S = 0.25
KILL_WAIT_S = 0.5  # after the session is closed, how long its backend has to leave before the kill
STOPPED = "stopped: you pressed Stop, so the check ended there"

# One password per role for this process, so two checks in one kernel never
# change the password under each other's sessions.
PASSWORDS = {ROLE: secrets.token_hex(16), CHECKER_ROLE: secrets.token_hex(16)}


class LearnerConnection(psycopg.Connection):
    """A session of the learner's (or checker's) role, labelled with the
    scratch database it serves, so Stop can find it."""

    label: str = ""


# Live learner sessions by scratch label, and the labels whose check was stopped.
LIVE: dict[str, weakref.WeakSet[LearnerConnection]] = {}
STOPPED_LABELS: set[str] = set()
REGISTRY_LOCK = threading.Lock()


@dataclass(frozen=True)
class Scratch:
    """A scratch database and the learner role's way into it."""

    db: Database
    learner_dsn: str
    checker_dsn: str = ""
    label: str = ""

    def connect(self, *, autocommit: bool = True, timeout_s: int = STATEMENT_TIMEOUT_S) -> psycopg.Connection:
        """A session as the learner role; the timeouts are set again here, so
        they hold even if the role's defaults were changed (the watchdog in
        `guarded` holds even if the session changes them). A race's sessions
        take RACE_TIMEOUT_S."""
        return self._open(self.learner_dsn, autocommit, timeout_s)

    def connect_checker(self) -> psycopg.Connection:
        """A session as the checker role (the index exercise's table owner)."""
        if not self.checker_dsn:
            raise ValueError("this scratch database was opened without the checker role")
        return self._open(self.checker_dsn, True, CHECKER_TIMEOUT_S)

    def _open(self, dsn: str, autocommit: bool, timeout_s: int) -> psycopg.Connection:
        # Pinned for the session, above any database default: the timeouts, the
        # string syntax pglast reads by (standard_conforming_strings on), and
        # where unqualified names resolve.
        options = (
            f"-c statement_timeout={timeout_s}s -c lock_timeout={LOCK_TIMEOUT_S}s "
            "-c standard_conforming_strings=on -c search_path=public"
        )
        conn = LearnerConnection.connect(dsn, autocommit=autocommit, connect_timeout=5, options=options)
        conn.label = self.label
        with REGISTRY_LOCK:
            LIVE.setdefault(self.label, weakref.WeakSet()).add(conn)
        return conn


def set_up_roles(conn: psycopg.Connection, database: str) -> None:
    """The learner's and the checker's roles, their limits, and their grants in `database`
    (the scratch database `conn` is on): exercise/learner_role.sql."""
    params = {
        "password": PASSWORDS[ROLE],
        "checker_password": PASSWORDS[CHECKER_ROLE],
        "statement_timeout": f"{STATEMENT_TIMEOUT_S}s",
        "lock_timeout": f"{LOCK_TIMEOUT_S}s",
        "checker_timeout": f"{CHECKER_TIMEOUT_S}s",
        "temp_file_limit": TEMP_FILE_LIMIT,
    }
    run(
        conn,
        "exercise/learner_role",
        params,
        idents={"role": ROLE, "checker": CHECKER_ROLE, "database": database},
    )


def open_scratch(exercise: str) -> Scratch:
    """A fresh scratch database for one exercise, with the course's tables
    (and the fencing token column), the learner role's grants and the checker
    role. `exercise` is its label (the key with `_` for `/`)."""
    db = open_database(f"scratch_{exercise}", reset=True, server=get_checker())
    db.apply("exercise/add_fence_token")
    with db.connection() as conn:
        set_up_roles(conn, db.name)
    return Scratch(
        db,
        make_conninfo(db.dsn, user=ROLE, password=PASSWORDS[ROLE]),
        make_conninfo(db.dsn, user=CHECKER_ROLE, password=PASSWORDS[CHECKER_ROLE]),
        exercise,
    )


def label_of(key: str) -> str:
    """The scratch label of an exercise key ("03/claim" -> "03_claim")."""
    return key.replace("/", "_")


def stop_checks(key: str) -> int:
    """Stop the running check of exercise `key`: cancel every learner session
    it has open; their statements end with STOPPED. How many were cancelled."""
    label = label_of(key)
    with REGISTRY_LOCK:
        STOPPED_LABELS.add(label)
        live = [c for c in LIVE.get(label, ()) if not c.closed]
    for conn in live:
        try:
            conn.cancel_safe(timeout=2)
        except psycopg.Error:
            pass  # it ended on its own meanwhile
    return len(live)


# Exercises with a check running in this process.
RUNNING: set[str] = set()


@contextmanager
def one_check(key: str) -> Iterator[None]:
    """Hold exercise `key` for one check; Refused if one is running already.
    A Stop pressed before this check began is forgotten here, so it ends only
    a check that was running."""
    with REGISTRY_LOCK:
        if key in RUNNING:
            raise Refused("a check of this exercise is already running: wait for it, or press Stop")
        RUNNING.add(key)
        STOPPED_LABELS.discard(label_of(key))
    try:
        yield
    finally:
        with REGISTRY_LOCK:
            RUNNING.discard(key)


def was_stopped(key: str) -> bool:
    """Whether Stop was pressed on exercise `key` since its check began (`one_check`)."""
    with REGISTRY_LOCK:
        return label_of(key) in STOPPED_LABELS


def _stopped(conn: psycopg.Connection) -> bool:
    return getattr(conn, "label", None) in STOPPED_LABELS


class CheckerRestarted(Refused):
    """The learner's statement did not stop when cancelled, so the checker was killed and
    started afresh from its template: what the verdict says."""


class Watchdog:
    """At the deadline, cancel the session's statement from the client side;
    if it has not ended a grace period later, close the session; and if its
    backend still runs then (one deep in the planner never reads a cancel),
    kill the checker, which `guarded` then starts afresh."""

    def __init__(self, conn: psycopg.Connection, seconds: float):
        self.conn, self.seconds, self.fired, self.killed = conn, seconds, False, False
        self.backend = conn.info.backend_pid
        self.timers = [
            threading.Timer(seconds, self._cancel),
            threading.Timer(seconds + WATCHDOG_GRACE_S, self._close),
        ]
        for timer in self.timers:
            timer.daemon = True

    def _cancel(self) -> None:
        self.fired = True
        try:
            self.conn.cancel_safe(timeout=WATCHDOG_GRACE_S)
        except psycopg.Error:
            pass  # the session is gone already: nothing left to cancel

    def _close(self) -> None:
        self.conn.close()
        deadline = time.monotonic() + KILL_WAIT_S
        while checker_backend(self.backend):
            if time.monotonic() > deadline:
                self.killed = True
                kill_checker()
                return
            time.sleep(0.02)

    def __enter__(self) -> Watchdog:
        for timer in self.timers:
            timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for timer in self.timers:
            timer.cancel()
        if self.fired:
            self.conn.close()


def _restarted(dog: Watchdog) -> CheckerRestarted:
    """Wait for the watchdog's kill to end, start the checker afresh, and say so."""
    dog.timers[1].join()
    rebuild_checker()
    return CheckerRestarted(
        f"your statement did not stop within {dog.seconds:g} s, even when cancelled; "
        "the checker was restarted (your lessons' server was not touched)"
    )


@contextmanager
def guarded(
    conn: psycopg.Connection, seconds: float = STATEMENT_TIMEOUT_S + WATCHDOG_GRACE_S
) -> Iterator[None]:
    """Run learner SQL on `conn` under the watchdog; a statement the watchdog
    or Stop ended raises Refused saying so (CheckerRestarted if the watchdog
    had to kill the checker)."""
    if _stopped(conn):
        raise Refused(STOPPED)
    dog = Watchdog(conn, seconds)
    try:
        with dog:
            yield
    except (psycopg.errors.QueryCanceled, psycopg.OperationalError):
        if dog.fired:  # the close may be deciding whether to kill: let it finish
            dog.timers[1].join()
        if dog.killed:
            raise _restarted(dog) from None
        if _stopped(conn):
            raise Refused(STOPPED) from None
        if dog.fired:
            raise Refused(
                f"it ran past the checker's {seconds:g} s deadline and was cancelled; "
                "a queue statement takes milliseconds"
            ) from None
        raise
    if dog.killed:
        raise _restarted(dog)
    if dog.fired:
        raise Refused(f"it ran past the checker's {seconds:g} s deadline and was cancelled")


def _server_message(res: PGresult) -> str:
    text = (res.error_message or b"").decode("utf-8", "replace").strip()
    return text.removeprefix("ERROR:").strip().splitlines()[0][:300] if text else "unknown error"


def parse(conn: psycopg.Connection, learner: LearnerSQL) -> list[str]:
    """Ask the server to parse the statement without running it; the names
    of the columns it returns. Refused if it is not exactly one valid statement."""
    with guarded(conn):
        res = conn.pgconn.prepare(b"", learner.for_server.encode())
        if res.status != pq.ExecStatus.COMMAND_OK:
            message = _server_message(res)
            if "multiple commands" in message:
                raise Refused(
                    "exactly one statement, please: PostgreSQL found more than one, so nothing was run"
                )
            raise Refused(f"PostgreSQL could not read it, so nothing was run: {message}")
        described = conn.pgconn.describe_prepared(b"")
    return [(described.fname(i) or b"").decode() for i in range(described.nfields)]


@dataclass
class Fetched:
    """What a learner statement returned: at most MAX_ROWS rows, and the row
    count (the rows returned, or those changed by a statement with no RETURNING)."""

    rows: list[tuple] = field(default_factory=list)
    rowcount: int = 0

    def fetchall(self) -> list[tuple]:
        return list(self.rows)

    def fetchone(self) -> tuple | None:
        return self.rows[0] if self.rows else None


def returns_rows(learner: LearnerSQL) -> bool:
    """Whether the statement returns rows, from its tree: a query, or a change with RETURNING."""
    tree = learner.tree
    return type(tree).__name__ == "SelectStmt" or bool(getattr(tree, "returningClause", None))


def _query(learner: LearnerSQL, values: dict[str, Any]) -> tuple[str, dict | None]:
    if learner.placeholders:
        return learner.for_psycopg, learner.params(values)
    return learner.for_server, None


def execute(
    conn: psycopg.Connection,
    learner: LearnerSQL,
    values: dict[str, Any],
    *,
    seconds: float = STATEMENT_TIMEOUT_S + WATCHDOG_GRACE_S,
) -> Fetched:
    """Run the learner's statement with the exercise's values, under the
    watchdog, reading its rows one at a time: past MAX_ROWS it is stopped
    (a change is then rolled back) and Refused."""
    query, params = _query(learner, values)
    with guarded(conn, seconds):
        if not returns_rows(learner):
            fetched = Fetched([], conn.execute(query, params).rowcount)
            _check_size(conn, learner)
            return fetched
        rows: list[tuple] = []
        size = 0
        stream = conn.cursor().stream(query, params)
        try:
            for row in stream:
                size += sum(len(str(value)) for value in row)
                if len(rows) == MAX_ROWS or size > MAX_BYTES:
                    raise Refused(
                        f"it returned over {MAX_ROWS:,} rows or {MAX_BYTES:,} characters, so the check "
                        "stopped it there: a queue statement returns one job or one batch"
                    )
                rows.append(row)
        finally:
            stream.close()  # type: ignore[attr-defined]  # leaving the stream early cancels the statement
        _check_size(conn, learner)
        return Fetched(rows, len(rows))


def writes(learner: LearnerSQL) -> bool:
    """Whether the statement may write: anything but a SELECT with no data-changing WITH query."""
    tree = learner.tree
    if type(tree).__name__ != "SelectStmt":
        return True
    ctes = getattr(getattr(tree, "withClause", None), "ctes", None) or ()
    return any(type(cte.ctequery).__name__ != "SelectStmt" for cte in ctes)


def _check_size(conn: psycopg.Connection, learner: LearnerSQL) -> None:
    """After a statement that writes, Refused if the scratch database now holds over
    MAX_SCRATCH_BYTES: a check runs a statement hundreds of times, and each run may grow
    what the next one reads (the reader bounds one run's growth only)."""
    if not writes(learner) or conn.info.transaction_status == pq.TransactionStatus.INERROR:
        return
    now = time.monotonic()
    if now - getattr(conn, "sized_at", 0.0) < SIZE_EVERY_S:
        return
    (size,) = run_one(conn, "exercise/scratch_size")
    setattr(conn, "sized_at", time.monotonic())  # noqa: B010 (any session; LearnerConnection or not)
    if size > MAX_SCRATCH_BYTES:
        raise Refused(
            f"the scratch database grew past {MAX_SCRATCH_BYTES // 2**20} MB ({size // 2**20} MB), so the "
            "check stopped it there: a queue statement changes a few rows, it does not grow the table"
        )


def plan(conn: psycopg.Connection, learner: LearnerSQL, values: dict[str, Any]) -> dict:
    """The server's plan for the statement (EXPLAIN without ANALYZE runs nothing)."""
    prefix = "EXPLAIN (COSTS OFF, FORMAT JSON) "
    query, params = _query(learner, values)
    with guarded(conn):
        row = conn.execute(prefix + query, params).fetchone()
    if row is None:
        raise LookupError("EXPLAIN returned no plan")
    return row[0][0]["Plan"]


def nodes(node: dict, in_cte: bool = False) -> Iterator[tuple[dict, bool]]:
    """Every plan node, with whether it sits inside a WITH query."""
    in_cte = in_cte or str(node.get("Subplan Name", "")).startswith("CTE ")
    yield node, in_cte
    for child in node.get("Plans", []):
        yield from nodes(child, in_cte)


def locking(tree: dict) -> tuple[bool, bool]:
    """(locks any rows, locks them inside a WITH query): a LockRows node."""
    found = [in_cte for node, in_cte in nodes(tree) if node.get("Node Type") == "LockRows"]
    return bool(found), any(found)


def indexes_used(tree: dict) -> set[str]:
    return {node["Index Name"] for node, _ in nodes(tree) if "Index Name" in node}


@contextmanager
def sessions(
    scratch: Scratch, learner: LearnerSQL, kind: str, jobs: int
) -> Iterator[tuple[psycopg.Connection, psycopg.Connection]]:
    """The owner's session and the learner role's, once the server has read the
    learner's statement (Refused if it cannot) and `jobs` jobs of `kind` are in
    the table: how every check that stages jobs begins."""
    with scratch.db.connection() as owner, scratch.connect() as conn:
        parse(conn, learner)
        run(owner, "lab/seed_jobs", {"kind": kind, "count": jobs})
        yield owner, conn


def stage(
    owner: psycopg.Connection,
    ids: Iterable[int],
    status: str,
    attempts: int,
    token: int,
    lease_s: float | None = 60,
    max_attempts: int = 5,
) -> None:
    """Put jobs in the state a story needs: status, attempts, fence_token, a
    lease ending `lease_s` from now (None: no lease), max_attempts."""
    for job_id in ids:
        values = {"id": job_id, "status": status, "attempts": attempts, "fence_token": token}
        run(owner, "exercise/stage_job", {**values, "lease_s": lease_s, "max_attempts": max_attempts})
