"""Lesson 11's outbox relay on a `StandInBroker`, an in-memory list, for a platform
with no nats-server wheel (the lab says so in one line): orders placed with their
jobs, relayed while the broker is up, then down, then through a relay crash.
`relay_once` is the lab's own scripted round; `RelayRound` is a plain record."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ... import checks, queue, tables
from ...databases import Database
from ...errors import BadInput
from ...guide import GuideFigure
from ...outbox import Consumer, StandInBroker, StandInDown
from ...statements import run, run_one
from ..results import Comparison, Progress, Result, finish, guess_text, tell
from .orders import GUIDE_OUTBOX


@dataclass
class RelayRound:
    claimed: int = 0
    published: int = 0
    failed: int = 0
    crashed: int = 0


def relay_once(
    conn, broker: StandInBroker, *, batch: int = 50, lease: float = 30.0, crash_after_publish: bool = False
) -> RelayRound:
    """One round of the relay: claim, publish, then complete (only after the
    broker accepted). A refused publish is a failed try: the job goes back with
    backoff, nothing is lost. `crash_after_publish` plays a relay that dies
    between the broker's acknowledgement and its own completion."""
    r = RelayRound()
    for job in queue.claim(conn, batch=batch, lease=lease):
        r.claimed += 1
        try:
            broker.publish(job.id, job.payload)
        except StandInDown as exc:
            queue.fail(conn, job, exc)
            r.failed += 1
            continue
        r.published += 1
        if crash_after_publish:
            r.crashed += 1  # the job stays running until its lease ends and the reaper returns it
            continue
        queue.complete(conn, job)
    return r


@dataclass(kw_only=True)
class OutboxResult(Result):
    orders_committed: int
    orders_rolled_back: int
    refused_while_down: int
    waiting_while_down: int
    republished_after_crash: int
    broker_messages: int
    distinct_delivered: int
    consumer_processed: int
    duplicates_skipped: int
    committed_job_ids: list[int] = field(default_factory=list)
    delivered_ids: list[int] = field(default_factory=list)
    status_counts: dict[str, int] = field(default_factory=dict)
    guess: float | None = None  # messages in the broker
    guide: GuideFigure = GUIDE_OUTBOX

    @property
    def nothing_lost(self) -> bool:
        return set(self.committed_job_ids) == set(self.delivered_ids)

    def comparison(self) -> list[Comparison]:
        return [
            ("messages in the broker", self.guess_cell, self.broker_messages, "at least one a job"),
            ("distinct jobs delivered", None, self.distinct_delivered, None),
            ("orders committed", None, self.orders_committed, None),
            ("jobs the consumer processed", None, self.consumer_processed, "once each: de-duplicate by id"),
        ]

    def summary(self) -> str:
        return "\n".join(
            [
                (
                    f"orders: {self.orders_committed} committed (each with its job), "
                    f"{self.orders_rolled_back} rolled back"
                ),
                (
                    f"broker down: {self.refused_while_down} publishes refused, "
                    f"{tables.count(self.waiting_while_down, 'job')} waited ready with backoff, none lost"
                ),
                (
                    f"relay crashed after publishing {tables.count(self.republished_after_crash, 'job')}: "
                    "the reaper returned them and they were published again"
                ),
                (
                    f"stand-in broker holds {self.broker_messages} messages for "
                    f"{self.distinct_delivered} distinct jobs: delivery is at least once"
                ),
                (
                    f"consumer processed {self.consumer_processed} jobs once each, "
                    f"skipping {self.duplicates_skipped} duplicates by job id"
                ),
                f"jobs by status: {self.status_counts}",
                f"your guess for the broker's messages: {guess_text(self.guess)}",
            ]
            + self.footer()
        )


def outbox_relay(
    db: Database,
    *,
    orders: int = 60,
    rolled_back: int = 10,
    crash_batch: int = 5,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> OutboxResult:
    """Place orders with their jobs in one transaction (some rolled back);
    relay while the broker is up, then down, then through a relay crash."""
    checks.whole_number("orders", orders, 3, 10_000)
    checks.whole_number("rolled_back", rolled_back, 0, 10_000)
    checks.whole_number("crash_batch", crash_batch, 1, 10_000)
    if crash_batch > orders // 3:
        raise BadInput(f"crash_batch must be at most a third of orders ({orders // 3}), got {crash_batch}")
    broker, consumer = StandInBroker(), Consumer()
    committed: list[int] = []
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")

        def place(n: int, keep: bool) -> None:
            with conn.transaction(force_rollback=not keep):
                order_id = run_one(conn, "lab/place_order", {"email": f"c{n}@example.com", "total": 10 + n})[
                    0
                ]
                job_id = queue.enqueue(conn, "publish_order", {"order_id": order_id})
            if keep:
                committed.append(job_id)

        third = orders // 3
        for n in range(third):  # broker up: the relay forwards them
            place(n, True)
        while relay_once(conn, broker).claimed:
            pass
        broker.up = False  # broker down: publishes fail, jobs go back with backoff
        for n in range(third, 2 * third):
            place(n, True)
        for n in range(rolled_back):
            place(orders + n, False)
        relay_once(conn, broker, batch=orders)
        waiting = dict(run(conn, "lab/status_counts").fetchall()).get("ready", 0)
        refused = broker.refused
        broker.up = True
        run(conn, "lab/make_all_due")  # skip the backoff wait
        while relay_once(conn, broker).claimed:
            pass
        for n in range(2 * third, orders):  # a relay that dies after publishing
            place(n, True)
        crashed = relay_once(conn, broker, batch=crash_batch, lease=0.3, crash_after_publish=True).crashed
        time.sleep(0.4)  # the lease runs out
        queue.reap(conn)
        while relay_once(conn, broker).claimed:
            pass
        counts = dict(run(conn, "lab/status_counts").fetchall())
    tell(progress, 1, 1)  # short and scripted: one step, not stoppable part-way
    consumer.consume(broker)
    delivered = [m for m, _ in broker.messages]
    return finish(
        OutboxResult,
        db,
        orders_committed=len(committed),
        orders_rolled_back=rolled_back,
        refused_while_down=refused,
        waiting_while_down=waiting,
        republished_after_crash=crashed,
        broker_messages=len(broker.messages),
        distinct_delivered=len(set(delivered)),
        consumer_processed=len(consumer.processed),
        duplicates_skipped=consumer.duplicates_skipped,
        committed_job_ids=committed,
        delivered_ids=delivered,
        status_counts=counts,
        guess=guess,
    )
