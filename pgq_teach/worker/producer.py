"""The producer: the thread that calls `run()`. It owns the claims: it reaps,
claims when an executor is free (up to free executors x batch jobs), hands
each free executor one batch, and sends the held outcomes when they are due.

Between claims it waits on its inbox (inbox.py) for news from the other
threads: a notification, a reconnected listener, a finished batch, a first
outcome held, or stop. A notification is a hint and can be missed, so an idle
producer also claims every `poll` seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import psycopg

from .. import queue
from .completer import Completer
from .connections import CONNECTION_BROKEN, WorkConnection
from .executor import Executors
from .inbox import Inbox, Message
from .leases import Leases
from .limits import Gate
from .report import Reporter
from .settings import WorkerSettings

MAX_ASKED = queue.MAX_BATCH  # what a claim may ask for at most (queue.claim's own bound)


class Producer:
    """Reap, claim and hand out; send the outcomes when due; wait for news."""

    def __init__(
        self,
        settings: WorkerSettings,
        *,
        work: WorkConnection,
        leases: Leases,
        completer: Completer,
        executors: Executors,
        reporter: Reporter,
        inbox: Inbox,
        stop_event: threading.Event,
        gate: Gate,
        before_claim: Callable[[psycopg.Connection], None],
    ):
        self.settings = settings
        self.before_claim = before_claim  # reads the kinds' policies once a run (Worker._load_kinds)
        self.gate = gate  # the rate limits and pauses, between the claim and the executors
        self.work, self.leases, self.completer, self.executors = work, leases, completer, executors
        self.reporter, self.inbox = reporter, inbox
        self.stop_event = stop_event  # set by stop(), from any thread; read by the loop
        # When the next reaper pass is due (monotonic): written and read by the claiming thread
        # (run()'s, or run_once()'s caller), under the work connection's lock.
        self._next_reap = 0.0
        # The fair claim's turn: the last tenant it served (queue.next_turn). Same thread and lock.
        self._after: str | None = None

    def loop(self, *, until_idle: bool) -> None:
        """Work until stopped (or, with until_idle, until nothing is due and
        every executor is idle; jobs this Worker handed back, for want of a
        token or while their kind is paused, count as due: it waits for them)."""
        backoff = 0.2
        maybe_more = True  # the queue may hold due jobs: claim when an executor is free
        poll_at = time.monotonic() + self.settings.poll
        while not self.stop_event.is_set():
            try:
                if self._outcomes_due():
                    self.completer.send()
                    # A fair claim may have got fewer jobs than asked because a tenant was at
                    # per_tenant; a job sent as done frees room, and no notification says so.
                    maybe_more = maybe_more or self.settings.fair
                free = self.executors.free()
                if free and (maybe_more or until_idle):
                    asked = min(free * self.settings.batch, self.gate.claim_cap or MAX_ASKED)
                    got = self._claim_and_hand_out(asked)
                    maybe_more = got == asked
                    if got:
                        continue
                if until_idle and self.idle() and not self.gate.waiting():
                    break
                if self._wait_for_news(poll_at, self.gate.look_again_at):
                    maybe_more = True
                    poll_at = time.monotonic() + self.settings.poll
                backoff = 0.2
            except CONNECTION_BROKEN as exc:
                # The server or our session went away: start over on a fresh connection.
                self.reporter.connection_broke(exc)
                self.work.close()
                maybe_more = True
                self.stop_event.wait(backoff)
                backoff = min(backoff * 2, 5.0)

    def claim(self, batch: int) -> list[queue.Job]:
        """Reap if due, claim up to `batch` jobs and hold their leases. When
        the claim finds nothing, return any expired lease and look again."""
        with self.work.lock:
            conn = self.work.get()
            self.before_claim(conn)
            reaped_now = self._reap(conn, force=False)
            jobs = self._claim_and_hold(conn, batch)
            empty = int(not jobs)
            if not jobs and not reaped_now:
                self._reap(conn, force=True)
                jobs = self._claim_and_hold(conn, batch)
                empty += not jobs
            try:
                jobs = self.gate.sort(conn, jobs)  # those without a token, or of a paused kind, go back
            except BaseException:
                # The claim committed, but these jobs will reach no executor: renew them no more,
                # so their leases end and the reaper takes them back (else the beat would keep
                # them running for ever). A hand-back that committed first is fenced off already.
                self.leases.release(jobs)
                raise
        # Counted once the round is over, before any "claimed" event: a count that rises after
        # a watcher saw one (lesson 07's latency lab) means run() has stopped looking until its
        # next poll or notification (run(until_idle=True) looks again at each finished batch).
        if empty:
            self.reporter.add(empty_claims=empty)
        if self.reporter.watching:
            for job in jobs:
                self.reporter.on_event("claimed", job)
        return jobs

    def idle(self) -> bool:
        """No executor has a batch and no outcome is held. In that order: an executor holds
        its last outcome before it counts itself free, so none can slip between the looks."""
        return self.executors.busy() == 0 and not self.completer.holds_any()

    def _claim_and_hold(self, conn: psycopg.Connection, batch: int) -> list[queue.Job]:
        since = time.monotonic()  # before the statement is sent: the lease surely runs from later
        jobs = self.settings.claim(conn, batch, self._after)  # FIFO as taught, or priorities, or fair
        self._after = queue.next_turn(self._after, jobs)
        self.leases.hold(jobs, since)
        self.reporter.add(claims=1, claimed=len(jobs))
        return jobs

    def _claim_and_hand_out(self, asked: int) -> int:
        jobs = self.claim(asked)
        batch = self.settings.batch
        for start in range(0, len(jobs), batch):
            self.executors.hand_out(jobs[start : start + batch])
        return len(jobs)

    def _reap(self, conn: psycopg.Connection, *, force: bool) -> bool:
        now = time.monotonic()
        if not force and now < self._next_reap:
            return False
        self._next_reap = now + self.settings.reap_every
        reaped = queue.reap(conn)
        self.reporter.add(reaper_passes=1, reaped=reaped)
        return True

    def _outcomes_due(self) -> bool:
        """An executor finished its batch (or a send left some for later), or the oldest held
        outcome has waited flush_after."""
        send_now = self.inbox.take(Message.BATCH_ENDED, Message.SEND_AGAIN)
        since = self.completer.held_since()
        return since is not None and (send_now or time.monotonic() - since >= self.settings.flush_after_s)

    def _wait_for_news(self, poll_at: float, look_again_at: float) -> bool:
        """Until a notification, an executor's news, a held outcome's
        flush_after, the poll, a job handed back is due again, or stop. True
        if the queue may now hold due jobs (a notification, a reconnected
        listener, the poll, or a job handed back due again)."""
        now = time.monotonic()
        timeout = min(poll_at, look_again_at) - now
        since = self.completer.held_since()
        if since is not None:
            timeout = min(timeout, since + self.settings.flush_after_s - now)
        self.inbox.wait(timeout)
        self.inbox.take(Message.OUTCOME_HELD, Message.STOP)  # they only woke the wait
        notified = self.inbox.take(Message.NOTIFIED)
        if self.inbox.take(Message.RELISTENED) or notified:
            if notified:
                self.reporter.add(wakeups=1)
            return True
        if time.monotonic() >= poll_at:
            self.reporter.add(polls=1)
            return True
        if time.monotonic() >= look_again_at:
            self.gate.look_again_at = float("inf")
            return True
        return False
