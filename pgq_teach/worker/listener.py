"""The listener: one thread that owns the LISTEN connection, so one
notification wakes one claim in the process, not one per executor.

The connection is autocommit, outside any transaction, or notifications
would wait until that transaction ended. A notification is a hint and can
be missed, so an idle producer also claims every `poll` seconds; and after a
reconnect the producer claims at once, for notifications sent while nobody
listened. The thread waits on its socket and on a doorbell (a socketpair)
that the Worker rings as it stops, so it wakes at once rather than at its
next timeout, which every run() would otherwise wait out.
"""

from __future__ import annotations

import select
import socket
import threading

import psycopg

from ..statements import run
from .connections import close_quietly, connect
from .inbox import Inbox, Message
from .report import Reporter

# The longest the listener waits before it looks at `closing` again when no
# doorbell could ring (the doorbell wakes it at once on stop).
LISTEN_TIMEOUT = 1.0


class Listener:
    """LISTEN on a connection of its own; each notification posts NOTIFIED to the producer."""

    def __init__(self, dsn: str, inbox: Inbox, reporter: Reporter, closing: threading.Event, timeout: float):
        self.dsn, self.inbox, self.reporter = dsn, inbox, reporter
        self.closing = closing  # set by run()'s thread as the Worker stops; read by the listener
        self.timeout = timeout  # LISTEN_TIMEOUT when the Worker was made
        # Set once the listener tried to connect; run()'s thread waits for it before it claims.
        self.listening = threading.Event()
        self._conn: psycopg.Connection | None = None  # the listener's thread only
        # Made, rung and closed by run()'s thread (start, stop); the listener waits on it.
        self._doorbell: tuple[socket.socket, socket.socket] | None = None
        self._thread: threading.Thread | None = None  # run()'s thread only

    def start(self) -> None:
        self._doorbell = socket.socketpair()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="pgq-listen")
        self._thread.start()

    def stop(self) -> None:
        """Ring the doorbell and wait for the thread to end (set `closing` first)."""
        self._ring_doorbell()
        if self._thread is not None:
            self._thread.join()
        for end in self._doorbell or ():
            end.close()
        self._doorbell, self._thread = None, None

    def _loop(self) -> None:
        """Listen until `closing`; each notification wakes the producer once; after a
        reconnect it claims at once, for notifications sent while nobody listened."""
        backoff = 0.2
        while not self.closing.is_set():
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = connect(self.dsn)
                    run(self._conn, "listen")
                    if self.listening.is_set():  # a reconnect: look for what was sent meanwhile
                        self.inbox.post(Message.RELISTENED)
                    self.listening.set()
                self._hand_on_notifications(self._conn)
                backoff = 0.2
            except psycopg.Error as exc:
                self.listening.set()
                self.reporter.connection_broke(exc)
                self._close()
                self.closing.wait(backoff)
                backoff = min(backoff * 2, 5.0)
        self._close()

    def _hand_on_notifications(self, conn: psycopg.Connection) -> None:
        """Wake the producer for what has arrived on the LISTEN connection
        (LISTEN itself may have brought some), then wait until its socket has
        more to read or the doorbell rings; the loop around looks at `closing`."""
        for _ in conn.notifies(timeout=0):
            self.inbox.post(Message.NOTIFIED)
        waits = [conn.fileno()]
        if self._doorbell is not None:
            waits.append(self._doorbell[0].fileno())
        select.select(waits, [], [], self.timeout)

    def _ring_doorbell(self) -> None:
        try:
            if self._doorbell is not None:
                self._doorbell[1].send(b"!")
        except OSError:  # full or closed: the listener still stops at its next timeout
            pass

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        close_quietly(conn)
