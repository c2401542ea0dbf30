"""The Worker's connections: how each is opened, which errors mean one
broke, and the work connection that the producer and the executors share.

A process holds three sessions: the work connection (claims, reaps and
outcome sends, one statement at a time), the LISTEN connection (listener.py)
and the heartbeat connection (leases.py). Each is autocommit: every
statement is its own transaction.
"""

from __future__ import annotations

import threading
from typing import Any

import psycopg

# The server or the session went away: start over on fresh connections. The server ends
# an idle-in-transaction session with 25P03, which psycopg raises as an
# InternalError rather than an OperationalError.
CONNECTION_BROKEN = (psycopg.OperationalError, psycopg.errors.IdleInTransactionSessionTimeout)


def connect(dsn: str, **options: Any) -> psycopg.Connection:
    """An autocommit connection that gives up connecting after 5 s."""
    return psycopg.connect(dsn, autocommit=True, connect_timeout=5, **options)


def close_quietly(conn: psycopg.Connection | None) -> None:
    if conn is not None:
        try:
            conn.close()
        except Exception:
            pass


class WorkConnection:
    """The work connection, opened when first needed and again after it broke. Hold
    `lock` for the whole of a claim or a send: it is the first lock in the lock order
    (the package's docstring)."""

    def __init__(self, dsn: str):
        self.dsn = dsn
        self.lock = threading.Lock()  # one user of the connection at a time
        # Written and read under `lock` by the producer and by an executor that sends mid-batch.
        self._conn: psycopg.Connection | None = None

    def get(self) -> psycopg.Connection:
        """The connection, opened if missing or closed (hold `lock`)."""
        if self._conn is None or self._conn.closed:
            self._conn = connect(self.dsn)
        return self._conn

    def open(self) -> None:
        """Open the connection now; a failure is left to the first claim."""
        with self.lock:
            try:
                self.get()
            except psycopg.Error:
                pass

    def close(self) -> None:
        """Close it (after it broke): the next user opens a fresh one."""
        with self.lock:
            conn, self._conn = self._conn, None
        close_quietly(conn)
