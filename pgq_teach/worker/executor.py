"""The executors: `concurrency` threads that run the handlers, one batch at
a time, handed out by the producer.

Before it starts a job an executor checks that the process still holds it:
the lease the last beat (or the claim) wrote has at least half its length
left, or a fenced renewal of that one job matches. A job no longer held is
counted `fenced` and not started. A finished job's outcome goes to the
completer; before each job, an executor sends the outcomes held if running
one more job as long as the last would keep the oldest waiting longer than
`flush_after`.

Threads suit handlers that wait (on the network, on the database). Handlers
that keep a CPU busy hold Python's GIL, so run several processes instead
(`pgq-teach worker --processes M`), each a producer with its executors.
"""

from __future__ import annotations

import queue as threads_queue
import threading
import time
from collections.abc import Callable, Mapping

import psycopg

from .. import queue
from .completer import Completer
from .inbox import Inbox, Message
from .leases import Leases, claim_key
from .limits import Deadlines, Gate
from .report import Reporter
from .settings import Handler


class Executors:
    """The executor threads, and how many of them have a batch in hand."""

    def __init__(
        self,
        handlers: Mapping[str, Handler],
        *,
        count: int,
        flush_after: float,
        leases: Leases,
        completer: Completer,
        reporter: Reporter,
        inbox: Inbox,
        on_error: Callable[[BaseException], None],
        deadlines: Deadlines,
        gate: Gate,
    ):
        self.handlers, self.count, self.flush_after = handlers, count, flush_after
        self.deadlines, self.gate = deadlines, gate  # job timeouts; failures in a row (limits.py)
        self.leases, self.completer, self.reporter, self.inbox = leases, completer, reporter, inbox
        self.on_error = on_error  # stops the Worker, whose run() raises the error
        # Put by the producer (a batch each, or None to stop one executor); got by the executors.
        self._batches: threads_queue.SimpleQueue[list[queue.Job] | None] = threads_queue.SimpleQueue()
        self._lock = threading.Lock()  # guards _busy: a leaf (the package's lock order)
        # Executors with a batch.
        self._busy = 0  # written by the producer (+1 a batch) and the executors (-1); read by the producer
        self._threads: list[threading.Thread] = []  # run()'s thread only

    def start(self) -> None:
        self._threads = [
            threading.Thread(target=self._executor_loop, daemon=True, name=f"pgq-executor-{i}")
            for i in range(self.count)
        ]
        for thread in self._threads:
            thread.start()

    def finish(self) -> None:
        """Let every executor finish the batch in hand, then end its thread."""
        for _ in self._threads:
            self._batches.put(None)
        for thread in self._threads:
            thread.join()
        self._threads = []

    def hand_out(self, jobs: list[queue.Job]) -> None:
        """One batch, to the next free executor."""
        with self._lock:
            self._busy += 1
        self._batches.put(jobs)

    def free(self) -> int:
        with self._lock:
            return self.count - self._busy

    def busy(self) -> int:
        with self._lock:
            return self._busy

    def _executor_loop(self) -> None:
        while (jobs := self._batches.get()) is not None:
            ended = False
            try:
                self.run_batch(jobs)
                ended = True
            except BaseException as exc:  # not a handler's failure: stop, and run() raises it
                self.on_error(exc)
            finally:
                with self._lock:
                    self._busy -= 1
                if ended:
                    # The producer sends the outcomes, with those of every other executor that
                    # finished meanwhile, in one statement, and then claims again.
                    self.inbox.post(Message.BATCH_ENDED)

    def run_batch(self, jobs: list[queue.Job]) -> None:
        """Run a batch on this thread: an executor's, or run_once()'s caller's."""
        # One clock reading and one lock per job: a no-op job costs little
        # more than this loop, so the loop is kept lean.
        took, now = 0.0, time.monotonic()
        since = self.completer.held_since()
        for job in jobs:
            # Send what is held if running one more job like the last would
            # keep the oldest outcome waiting longer than flush_after.
            if since is not None and now - since + took >= self.flush_after:
                self.completer.try_send()
                now = time.monotonic()  # the send took time: the check below needs the present
                since = self.completer.held_since()
            if not self._still_held(job, now):
                self.leases.release([job])
                self.reporter.count("fenced", job)
                now = time.monotonic()
                continue
            self.deadlines.start(job)
            error = self._run_job(job)
            ended = time.monotonic()
            took, now = ended - now, ended
            if not self.deadlines.finish(job):
                continue  # the job timeout failed it meanwhile: that is its outcome, not this
            self.gate.record(job, ok=error is None)
            since = self.completer.hold(job, error, ended)

    def _still_held(self, job: queue.Job, now: float) -> bool:
        """Start a job only while the process holds it: half its lease left
        at `now` (monotonic) by the last beat or the claim, or a fenced
        renewal that matched (the heartbeat's statement, which never waits
        on a row: leases.py)."""
        if self.leases.seconds_left(job, now) >= self.leases.seconds / 2:
            return True
        if not job.still_mine():
            return False
        try:
            kept = self.leases.renew([job])
        except psycopg.Error as exc:
            # Cannot tell: leave it; its lease passes and a reaper hands it on.
            self.reporter.error(exc)
            self.leases.give_up([job])
            return False
        if claim_key(job) in kept:
            return job.still_mine()
        # Fenced (renew() has told its handler), or its row was locked by another session:
        # not confirmed, so not started, and left like a check that could not reach the server.
        self.leases.give_up([job])
        return False

    def _run_job(self, job: queue.Job) -> Exception | None:
        """Run the handler; the exception it raised, or None."""
        handler = self.handlers.get(job.kind)
        try:
            if handler is None:
                raise LookupError(f"no handler for kind {job.kind!r}")
            handler(job)
        except Exception as exc:  # a handler's failure is data: record it on the job
            return exc
        return None
