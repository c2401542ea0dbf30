"""Lesson 10's dashboard: the guide's three monitoring queries at one moment
(`snapshot`), and a background load for them to watch (`Load`: a producer and
the library's `Worker`s on threads, and optionally one forgotten transaction).
`Snapshot` is not an experiment's result but one reading of the monitoring
queries, so it stays a plain record."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from ... import checks, queue
from ...databases import Database
from ...statements import run
from ...worker import Worker
from .timeouts import session_ends


@dataclass
class Snapshot:
    at_s: float
    stats: queue.Stats

    def session(self, pid: int | None) -> dict | None:
        """The sessions query's row for server process `pid` (None if it held nothing).
        Found by pid, not by age: on a shared server the oldest row can be another
        database's transaction, which the query lists too."""
        return next((s for s in self.stats.sessions if pid is not None and s["pid"] == pid), None)

    def session_age_s(self, pid: int | None) -> float:
        """How long that session's transaction had been open (0 if it held nothing)."""
        row = self.session(pid)
        return xact_age_s(row) if row and row.get("xact_age") is not None else 0.0


def xact_age_s(session: dict) -> float:
    """How long a session's transaction has been open, in seconds."""
    return session["xact_age"].total_seconds()


def snapshot(conn, began: float | None = None) -> Snapshot:
    """Status counts with the oldest due wait; sessions holding a transaction
    ID or snapshot; dead tuples and autovacuum on jobs (queue.stats runs all three)."""
    return Snapshot(time.monotonic() - (began or time.monotonic()), queue.stats(conn))


# --- a background load for the dashboard -------------------------------------------


class Load:
    """A producer enqueuing `rate` jobs a second, `workers` library Workers on
    threads (each job takes `work_ms`), and, if asked, one session that opens
    a transaction and forgets it. `start()`, then `stop()`; threads never print."""

    def __init__(
        self, db: Database, *, rate: int = 200, workers: int = 2, work_ms: int = 5, stuck_session: bool = True
    ):
        self.db = db
        self.rate = checks.whole_number("rate", rate, 1, 5_000)
        self.workers_wanted = checks.whole_number("workers", workers, 1, 16)
        self.work_ms = checks.whole_number("work_ms", work_ms, 0, 10_000)
        self.stuck_session = stuck_session
        self.stop_event = threading.Event()
        self.threads: list[threading.Thread] = []
        self.workers: list[Worker] = []
        self.enqueued = 0
        self.stuck: psycopg.Connection | None = None
        self.stuck_pid: int | None = None  # its server process, kept after Stop to ask about
        self.errors: list[BaseException] = []

    def start(self) -> None:
        self.stop_event.clear()

        def handle(job: Any) -> None:
            time.sleep(self.work_ms / 1000)

        self.workers = [
            Worker(self.db.dsn, {"send_receipt": handle}, poll=0.5) for _ in range(self.workers_wanted)
        ]
        self.threads = [threading.Thread(target=self.guard(w.run), daemon=True) for w in self.workers]
        self.threads.append(threading.Thread(target=self.guard(self.produce), daemon=True))
        if self.stuck_session:
            # REPEATABLE READ keeps its snapshot while idle, as in guide #18
            self.stuck = self.db.connect(autocommit=False)
            self.stuck.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            self.stuck_pid = self.stuck.info.backend_pid
            run(self.stuck, "lab/open_transaction")  # BEGIN, then nothing: idle in transaction
        for t in self.threads:
            t.start()

    def guard(self, fn: Callable[[], Any]) -> Callable[[], None]:
        def body() -> None:
            try:
                fn()
            except BaseException as exc:  # kept and raised again by stop()  # noqa: BLE001
                self.errors.append(exc)

        return body

    def produce(self) -> None:
        with self.db.connection() as conn:
            tick = 0.1
            while not self.stop_event.wait(tick):
                with conn.transaction():
                    for _ in range(max(1, int(self.rate * tick))):
                        queue.enqueue(conn, "send_receipt", {"n": self.enqueued}, notify=False)
                        self.enqueued += 1

    def release_stuck(self) -> None:
        if self.stuck is not None:
            self.stuck.rollback()
            self.stuck.close()
            self.stuck = None

    def stop(self) -> None:
        self.stop_event.set()
        for w in self.workers:
            w.stop()
        for t in self.threads:
            t.join(10)
        self.release_stuck()
        if self.errors:
            raise self.errors[0]

    @property
    def done(self) -> int:
        return sum(w.report.done for w in self.workers)

    def forgotten_session_gone(self, wait_s: float = 5.0) -> bool:
        """Whether the server no longer has the forgotten transaction's session, asked of
        pg_stat_activity: its process exits a moment after the client lets go, so this
        asks again for up to `wait_s`. False if no such session was ever opened."""
        if self.stuck_pid is None:
            return False
        with self.db.connection() as conn:
            return session_ends(conn, self.stuck_pid, wait_s)
