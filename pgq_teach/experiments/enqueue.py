"""Transactional enqueue: the store saves an order and enqueues its receipt
job in one transaction, once rolled back and once committed, while a separate
session listens for the wake-up notification.

The guide's claims this checks: rolling back the order removes its job too,
every committed order comes with its job, and a NOTIFY sent inside a transaction
that rolls back is never delivered, while one inside a committed transaction
arrives only after COMMIT (guide #12).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import psycopg

from .. import checks, queue
from ..databases import Database
from ..guide import GuideFigure, figure
from ..statements import run, run_one
from .results import Result, finish, guess_text

KIND = "send_receipt"
EMAIL = "asha@example.com"  # the made-up store's customer
TOTAL = Decimal("1499.00")  # the order total in the guide's example
QUIET_LIMITS = (0.05, 10.0)  # seconds to listen for a notification that should not come
DELIVERY_WAIT = 5.0  # seconds to wait for one that should; it normally takes milliseconds


@dataclass(frozen=True)
class EnqueueOutcome:
    """One transaction that placed an order and enqueued its receipt job."""

    ending: str  # "rollback" or "commit"
    order_id: int  # the id the order got inside the transaction
    job_id: int  # the id enqueue() returned inside the transaction
    order_kept: bool  # the order is still there afterwards
    jobs_for_order: int  # jobs naming this order afterwards
    heard_while_open: tuple[str, ...]  # notifications the listener got before the transaction ended
    heard_after: tuple[str, ...]  # ... and after it ended
    delivered_after_s: float | None  # seconds from the end of the transaction to the first one heard

    @property
    def heard(self) -> int:
        return len(self.heard_while_open) + len(self.heard_after)


@dataclass(kw_only=True)
class EnqueueResult(Result):
    rolled_back: EnqueueOutcome
    committed: EnqueueOutcome
    quiet_s: float
    guide: GuideFigure = field(default_factory=lambda: figure(12))

    @property
    def outcomes(self) -> tuple[EnqueueOutcome, EnqueueOutcome]:
        return self.rolled_back, self.committed

    @property
    def notifications_heard(self) -> int:
        return sum(o.heard for o in self.outcomes)

    def summary(self) -> str:
        lines = ["An order and its receipt job in one transaction; another session listening."]
        for o in self.outcomes:
            ending = "Rolled back" if o.ending == "rollback" else "Committed"
            lines += [
                f"{ending}:",
                f"  the order is {'still there' if o.order_kept else 'gone'}; "
                f"jobs for this order: {o.jobs_for_order}",
                f"  notifications heard while the transaction was open: {len(o.heard_while_open)}",
                f"  notifications heard after it ended: {len(o.heard_after)}",
            ]
        lines += [
            f"Notifications heard in all: {self.notifications_heard} (your guess: {guess_text(self.guess)})",
            "The guide found: rolling back an order took its job with it;",
            "every committed order came with its job; a notification is sent",
            "only when its transaction commits (guide #12).",
            f"This server: PostgreSQL {self.server_version}",
        ]
        return "\n".join(lines)


def check_inputs(*, quiet_s: Any, guess: Any = None) -> None:
    checks.seconds("quiet_s", quiet_s, *QUIET_LIMITS)
    if guess is not None:
        checks.whole_number("guess (notifications)", guess, 0)


def _listen_for(listener: psycopg.Connection, seconds: float) -> list[str]:
    """Every notification that arrives within `seconds`, as payloads."""
    return [n.payload for n in listener.notifies(timeout=seconds)]


def _place_order_and_enqueue(
    db: Database, listener: psycopg.Connection, ending: str, quiet_s: float
) -> EnqueueOutcome:
    with db.connection() as conn:  # autocommit: the transaction below is the only one
        with conn.transaction():
            order_id = run_one(conn, "lab/place_order", {"email": EMAIL, "total": TOTAL})[0]
            # enqueue() joins this transaction (as a savepoint) and queues the NOTIFY
            job_id = queue.enqueue(conn, KIND, {"order_id": order_id})
            heard_while_open = _listen_for(listener, quiet_s)
            if ending == "rollback":
                raise psycopg.Rollback()  # what an app does when a later step fails
        ended = time.perf_counter()
        # A delivered notification ends the wait at once; an undelivered one
        # can only be shown absent for as long as we listen.
        wait = DELIVERY_WAIT if ending == "commit" else quiet_s
        first = [n.payload for n in listener.notifies(timeout=wait, stop_after=1)]
        delivered_after = time.perf_counter() - ended if first else None
        # Listen a little longer, so a second, unexpected notification would show.
        heard_after = first + _listen_for(listener, quiet_s) if first else []
        order_kept = run(conn, "lab/order_row", {"id": order_id}).fetchone() is not None
        jobs = run(conn, "lab/jobs_for_order", {"order_id": order_id}).fetchall()
    return EnqueueOutcome(
        ending,
        order_id,
        job_id,
        order_kept,
        len(jobs),
        tuple(heard_while_open),
        tuple(heard_after),
        delivered_after,
    )


def transactional_enqueue(
    db: Database,
    *,
    quiet_s: float = 0.3,
    guess: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    stop: threading.Event | None = None,
) -> EnqueueResult:
    """Place an order and enqueue its receipt job in one transaction twice:
    first rolled back, then committed. A separate autocommit session LISTENs
    throughout; `quiet_s` is how long it listens for notifications that
    should not arrive (while a transaction is open, and after the rollback).
    `stop` is accepted so every experiment takes the same keywords; this one
    takes about a second and always finishes both transactions.
    """
    check_inputs(quiet_s=quiet_s, guess=guess)
    with db.connection() as listener:  # its own session, outside any transaction
        run(listener, "listen")
        rolled_back = _place_order_and_enqueue(db, listener, "rollback", quiet_s)
        if progress:
            progress(1, 2)
        committed = _place_order_and_enqueue(db, listener, "commit", quiet_s)
        if progress:
            progress(2, 2)
    return finish(
        EnqueueResult, db, rolled_back=rolled_back, committed=committed, quiet_s=quiet_s, guess=guess
    )
