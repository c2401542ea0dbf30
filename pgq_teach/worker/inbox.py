"""The producer's inbox: what the Worker's other threads tell it.

Every thread that has news for the producer posts a `Message`; only the
producer reads them. One inbox replaces an Event per kind of news: the
producer waits on one thing, and every message it may receive is listed
here. Messages that arrive while the producer is busy wait for its next
look, kept as a set: two notifications before it looks make one wake-up,
as they make one claim.
"""

from __future__ import annotations

import queue as threads_queue
from enum import Enum


class Message(Enum):
    """One piece of news for the producer. Each one wakes it."""

    NOTIFIED = "a notification arrived: the queue may hold due jobs"
    RELISTENED = "the listener reconnected: notifications sent meanwhile were missed, look again"
    BATCH_ENDED = "an executor finished its batch and is free: send the held outcomes, then claim"
    SEND_AGAIN = "a send left outcomes for a statement of their own (a second claim of a job)"
    OUTCOME_HELD = "the first outcome is held: wait no longer than its flush_after"
    STOP = "stop() was called"


class Inbox:
    """Any thread posts; the producer waits for messages and takes them."""

    def __init__(self) -> None:
        self._queue: threads_queue.SimpleQueue[Message] = threads_queue.SimpleQueue()  # any thread puts
        self._arrived: set[Message] = set()  # the producer's thread only: posted, not yet taken

    def post(self, message: Message) -> None:
        self._queue.put(message)

    def wait(self, timeout: float) -> None:
        """Until a message arrives, or `timeout` seconds: at once if one has arrived already."""
        self._collect()
        if self._arrived:
            return
        try:
            self._arrived.add(self._queue.get(timeout=max(0.0, timeout)))
        except threads_queue.Empty:
            return
        self._collect()

    def take(self, *messages: Message) -> bool:
        """Whether any of these arrived since the producer last took it; they are taken now."""
        self._collect()
        found = not self._arrived.isdisjoint(messages)
        self._arrived.difference_update(messages)
        return found

    def _collect(self) -> None:
        """Move what was posted into the set, without waiting."""
        while True:
            try:
                self._arrived.add(self._queue.get_nowait())
            except threads_queue.Empty:
                return
