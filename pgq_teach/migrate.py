"""Change the schema under a live queue without stopping it.

A statement such as `ALTER TABLE jobs ADD COLUMN ...` needs an ACCESS
EXCLUSIVE lock on `jobs`. While one open transaction holds any lock on the
table (even a plain read's ACCESS SHARE), that request waits, and every
claim, completion and heartbeat that arrives after it queues behind it: the
lock manager grants in order, and none of them is compatible with the request
ahead. The queue stops for as long as the oldest transaction stays open.

`migrate` runs one statement (a named file of sql/) so that it never waits
long enough to stop the queue:

- each try is its own transaction with `SET LOCAL lock_timeout`
  (`sql/migration_lock_timeout.sql`): after that long in the lock queue the
  server gives up the request (SQLSTATE 55P03) and everything behind it moves
  on;
- it tries again after a backoff that doubles up to `max_backoff_s`, up to
  `tries` times;
- while a try waits, a second session reads what it waits on
  (`sql/migration_blockers.sql`: `pg_blocking_pids` with each blocker's
  `pg_stat_activity` state, transaction start, query start and query), and
  every try is reported, with those blockers, in the returned `Migration`
  and to `on_try`.

Called on a connection whose transaction already holds a lock on the table
(`sql/migration_held_locks.sql`), it refuses with `BadInput` before it runs
anything: such a transaction would keep its own lock through every wait and
retry, and hold up the queue on its own. Inside a transaction that holds no
lock on it, each try is a savepoint, and what lands commits with the caller.

A statement that cannot run in a transaction block (`CREATE INDEX
CONCURRENTLY`) is not for this helper: run it on its own session with a
session-level lock timeout. It takes SHARE UPDATE EXCLUSIVE, which no claim,
completion or heartbeat waits for (lesson 10d).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from . import checks
from .errors import BadInput
from .statements import names, run, statement

# A few tries with a short timeout keep the queue moving; the longest a claim waits behind a try
# is its lock timeout.
DEFAULT_LOCK_TIMEOUT_MS = 200
DEFAULT_TRIES = 10
DEFAULT_BACKOFF_S = 0.2
DEFAULT_MAX_BACKOFF_S = 5.0
LOCK_NOT_AVAILABLE = "55P03"


@dataclass(frozen=True)
class Blocker:
    """One session a try waited on, as pg_stat_activity showed it while the try waited."""

    pid: int
    state: str | None
    xact_start: datetime | None
    query_start: datetime | None
    query: str

    def __str__(self) -> str:
        began = self.xact_start.strftime("%H:%M:%S") if self.xact_start else "–"
        return f"pid {self.pid} ({self.state or 'no state'}, transaction since {began}): {self.query.strip()}"


@dataclass
class MigrationTry:
    """One try: when it started (seconds after the first), how long it took, whether the
    statement landed, and the sessions it waited on."""

    number: int
    started_s: float
    took_s: float
    landed: bool
    error: str = ""
    blockers: list[Blocker] = field(default_factory=list)

    def __str__(self) -> str:
        outcome = "landed" if self.landed else f"gave up ({self.error})"
        line = f"try {self.number} at {self.started_s:.2f} s: {outcome} after {self.took_s * 1000:.0f} ms"
        if self.blockers:
            line += "; waited on " + "; ".join(str(b) for b in self.blockers)
        return line


@dataclass
class Migration:
    """What `migrate` did: the statement, the settings it ran with, and every try."""

    name: str
    lock_timeout_ms: int
    tries_allowed: int
    tries: list[MigrationTry] = field(default_factory=list)

    @property
    def landed(self) -> bool:
        return bool(self.tries) and self.tries[-1].landed

    @property
    def blocker_pids(self) -> set[int]:
        """Every session any try waited on."""
        return {b.pid for t in self.tries for b in t.blockers}

    def summary(self) -> str:
        head = (
            f"{self.name}.sql with lock_timeout {self.lock_timeout_ms} ms, up to {self.tries_allowed} tries: "
            + ("landed" if self.landed else "did not land")
        )
        return "\n".join([head] + [f"  {t}" for t in self.tries])


class MigrationGaveUp(psycopg.errors.LockNotAvailable):
    """Every try timed out on its lock; `migration` holds the tries."""

    migration: Migration


def migrate(
    dsn_or_db: Any,
    name: str,
    params: Mapping[str, Any] | None = None,
    *,
    idents: Mapping[str, str] | None = None,
    conn: psycopg.Connection | None = None,
    table: str = "jobs",
    lock_timeout_ms: int = DEFAULT_LOCK_TIMEOUT_MS,
    tries: int = DEFAULT_TRIES,
    backoff_s: float = DEFAULT_BACKOFF_S,
    max_backoff_s: float = DEFAULT_MAX_BACKOFF_S,
    on_try: Callable[[MigrationTry], None] | None = None,
    raise_if_not_landed: bool = True,
) -> Migration:
    """Run sql/`name`.sql once, each try under `SET LOCAL lock_timeout`, trying again
    after a doubling backoff until it lands or `tries` run out.

    `dsn_or_db`: a connection string or a Database; the watcher that reads the blockers
    opens its own session there, and so does the migration unless `conn` is given.
    `table`: the table the statement changes; a `conn` whose open transaction already
    holds a lock on it is refused. Every try is passed to `on_try` as it ends. When no try
    lands, raises `MigrationGaveUp` (a `LockNotAvailable`, with `.migration`), or with
    `raise_if_not_landed=False` returns the Migration with `landed` false."""
    dsn = getattr(dsn_or_db, "dsn", dsn_or_db)
    if not isinstance(dsn, str):
        raise BadInput(f"expected a connection string or a Database, got {dsn_or_db!r}")
    if not isinstance(name, str) or name not in names():
        raise BadInput(
            f"name must name a statement in sql/ (for example 'lab/add_column_constant'), got {name!r}"
        )
    wanted = set(statement(name).params)
    given = set(params or {})
    if wanted != given:
        raise BadInput(f"{name}.sql takes parameters {sorted(wanted)}, got {sorted(given)}")
    if not isinstance(table, str) or not table:
        raise BadInput(f"table must be a table's name, got {table!r}")
    lock_timeout_ms = checks.whole_number("lock_timeout_ms", lock_timeout_ms, 1, 600_000)
    tries = checks.whole_number("tries", tries, 1, 1_000)
    backoff_s = checks.seconds("backoff_s", backoff_s, 0, 600)
    max_backoff_s = checks.seconds("max_backoff_s", max_backoff_s, 0, 3_600)
    if conn is not None and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        held = [row[0] for row in run(conn, "migration_held_locks", {"table": table})]
        if held:
            raise BadInput(
                f"this transaction already holds {', '.join(held)} on {table}: commit or roll it back "
                f"first, or every try would keep that lock through its waits"
            )
    migration = Migration(name, lock_timeout_ms, tries)
    own = conn is None
    session = conn if conn is not None else psycopg.connect(dsn, autocommit=False)
    try:
        with psycopg.connect(dsn, autocommit=True) as watch_conn:
            began = time.monotonic()
            wait = backoff_s
            for number in range(1, tries + 1):
                attempt = one_try(session, watch_conn, name, params, idents, lock_timeout_ms, number, began)
                migration.tries.append(attempt)
                if on_try is not None:
                    on_try(attempt)
                if attempt.landed:
                    break
                if number < tries:
                    time.sleep(wait)
                    wait = min(wait * 2, max_backoff_s)
    finally:
        if own:
            session.close()
    if not migration.landed and raise_if_not_landed:
        error = MigrationGaveUp(
            f"{name}.sql did not get its lock in {tries} tries of {lock_timeout_ms} ms: "
            + "; ".join(str(b) for b in {b.pid: b for t in migration.tries for b in t.blockers}.values())
        )
        error.migration = migration
        raise error
    return migration


def one_try(
    session: psycopg.Connection,
    watch_conn: psycopg.Connection,
    name: str,
    params: Mapping[str, Any] | None,
    idents: Mapping[str, str] | None,
    lock_timeout_ms: int,
    number: int,
    began: float,
) -> MigrationTry:
    """One transaction (or savepoint): SET LOCAL lock_timeout, then the statement, while
    a watcher thread reads what the session waits on."""
    pid = session.info.backend_pid
    seen: dict[int, Blocker] = {}
    finished = threading.Event()
    failures: list[BaseException] = []

    def watch() -> None:
        try:
            watch_blockers(watch_conn, pid, seen, finished, lock_timeout_ms)
        except BaseException as exc:  # raised again below, on the caller's thread  # noqa: BLE001
            failures.append(exc)

    watcher = threading.Thread(target=watch, daemon=True)
    start = time.monotonic()
    watcher.start()
    error = ""
    try:
        with session.transaction():
            run(session, "migration_lock_timeout", {"timeout": f"{lock_timeout_ms}ms"})
            run(session, name, params, idents=idents)
        landed = True
    except psycopg.errors.LockNotAvailable as exc:
        landed, error = False, f"{LOCK_NOT_AVAILABLE}, {(exc.diag.message_primary or str(exc)).strip()}"
    finally:
        finished.set()
        watcher.join()
    if failures:
        raise failures[0]
    took = time.monotonic() - start
    return MigrationTry(number, start - began, took, landed, error, list(seen.values()))


def watch_blockers(
    watch_conn: psycopg.Connection,
    pid: int,
    seen: dict[int, Blocker],
    finished: threading.Event,
    lock_timeout_ms: int,
) -> None:
    """Until `finished`, read the sessions that block `pid`, a few times per lock timeout,
    keeping the first sight of each."""
    every = max(0.005, min(0.05, lock_timeout_ms / 4000))
    while not finished.wait(every):
        rows = run(watch_conn, "migration_blockers", {"pid": pid}, row_factory=dict_row).fetchall()
        for row in rows:
            if row["pid"] not in seen:
                seen[row["pid"]] = Blocker(
                    row["pid"], row["state"], row["xact_start"], row["query_start"], row["query"] or ""
                )
