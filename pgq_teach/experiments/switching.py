"""Lesson 11's experiments: when to leave PostgreSQL, and how.

- `recommend`: the guide's five signals to move, and its reasons to stay,
  turned into a recommendation with its reasons.
- `drain_rate`: the learner's own drain rate (100,000 batched jobs), beside
  the guide's "about 4 s", and why neither is a benchmark.
- `outbox_relay`: the transactional enqueue kept, and a relay that claims jobs
  with the course's claim and forwards them to a broker. The broker here is a
  `StandInBroker`, an in-memory list standing in for Kafka, RabbitMQ or SQS
  (no real broker runs offline). Delivery into it is at least once; the
  consumer de-duplicates by job id. When it is down, jobs wait and are not lost.

The drain and the relay return `results.Result`s (the server, the learner's
guess, the guide, the comparison rows the widgets draw). `Recommendation` is
the checklist's answer, worked out from the learner's ticks without a server,
so it stays a plain record; so does `RelayRound`, one round inside the relay.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .. import checks, queue
from ..databases import Database
from ..errors import BadInput
from ..guide import GuideFigure, figure
from ..statements import run, run_one
from .results import Comparison, Progress, Result, advice, guess_text, server_fields, tell

GUIDE_OUTBOX = advice(
    "when to switch",
    "keep the transactional enqueue in Postgres and have a relay process forward jobs to the broker",
)

# --- the checklist -----------------------------------------------------------------

SIGNALS = {
    "fan_out": "Many consumers need the same message: one event goes to billing, email and analytics.",
    "replay": "Consumers need to replay history from an offset (a position in a log).",
    "teams": "Producers and consumers belong to different teams or services "
    "that should not share a database.",
    "churn": "Queue churn makes autovacuum fall behind, or claims slow down, even after fixing long "
    "transactions and indexing.",
    "connections": "Workers hold so many database connections that the queue competes with the app for them.",
}
WHY = {
    "fan_out": "a table queue hands each job to one worker; fan-out is a broker's (or a log's) job",
    "replay": "replay from an offset is a log-based broker's core feature; done jobs are deleted here",
    "teams": "a shared database couples two teams' schemas, deploys and outages",
    "churn": "when tuned autovacuum still cannot keep up, the table is the wrong shape for the load",
    "connections": "the queue's connections are taken from the application's budget",
}
FIXES = {
    "churn": "first end long transactions (idle_in_transaction_session_timeout), keep the partial indexes, "
    "tune autovacuum on jobs and delete in batches (lesson 10); move only if it still falls behind",
    "connections": "first put the claims behind a pooler in transaction mode and claim in batches; LISTEN "
    "stays on one direct connection per worker process",
}
STAY = (
    "jobs are tied to your database writes (the enqueue commits with the order)",
    "volumes fit comfortably (measure your own claim time and dead tuples)",
    "one team owns both the producer and the workers",
)


@dataclass(frozen=True)
class Recommendation:
    verdict: str  # "stay", "fix first" or "move"
    reasons: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.verdict}: " + "; ".join(self.reasons)


def recommend(signals: set[str] | frozenset[str], *, fixes_tried: bool = False) -> Recommendation:
    """The guide's signals to move, weighed: fan-out, replay and team lines
    are things a table cannot do; churn and connections have fixes to try first."""
    unknown = set(signals) - set(SIGNALS)
    if unknown:
        raise BadInput(f"unknown signal(s) {sorted(unknown)}; the signals are {', '.join(SIGNALS)}")
    hard = [s for s in SIGNALS if s in signals and s not in FIXES]
    soft = [s for s in SIGNALS if s in signals and s in FIXES]
    if hard or (soft and fixes_tried):
        reasons = [WHY[s] for s in hard + soft]
        reasons.append("keep the transactional enqueue: an outbox relay forwards jobs to the broker")
        return Recommendation("move", tuple(reasons))
    if soft:
        return Recommendation("fix first", tuple(FIXES[s] for s in soft))
    return Recommendation("stay", tuple(f"stay while {r}" for r in STAY))


# --- the learner's drain rate ------------------------------------------------------


@dataclass(kw_only=True)
class DrainRate(Result):
    jobs: int
    batch: int
    workers: int
    elapsed_s: float
    completed: int
    status_counts: dict[str, int] = field(default_factory=dict)  # the server's count after the drain
    guess: float | None = None  # seconds to drain the jobs
    guide: GuideFigure = field(default_factory=lambda: figure(19))

    @property
    def jobs_per_s(self) -> float:
        return self.completed / self.elapsed_s if self.elapsed_s else 0.0

    @property
    def guide_jobs_per_s(self) -> float:
        values = self.guide.values
        return values["jobs"] / values["seconds"]

    def comparison(self) -> list[Comparison]:
        """The guide timed 100,000 jobs: its seconds stand beside a drain of that size only."""
        same_size = self.jobs == self.guide.values["jobs"]
        return [
            (
                f"seconds for {self.jobs:,} jobs",
                self.guess_cell,
                round(self.elapsed_s, 2),
                self.guide.values["seconds"] if same_size else None,
            ),
            ("jobs per second", None, round(self.jobs_per_s), round(self.guide_jobs_per_s)),
        ]

    def summary(self) -> str:
        return "\n".join(
            [
                f"{self.completed:,} jobs claimed and completed in batches of {self.batch} by {self.workers} "
                f"threads: {self.elapsed_s:.2f} s, {self.jobs_per_s:,.0f} jobs/s" + self.stopped_note,
                f"  your guess: {guess_text(self.guess, ' s')}",
                f"  the guide's rate: {self.guide_jobs_per_s:,.0f} jobs/s",
            ]
            + self.footer()
        )


def drain_rate(
    db: Database,
    *,
    jobs: int = 100_000,
    batch: int = 100,
    workers: int = 4,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> DrainRate:
    """Seed `jobs` empty jobs, then drain them: each thread claims a batch and
    completes it in one fenced statement, until nothing is due."""
    checks.whole_number("jobs", jobs, 1, 1_000_000)
    checks.whole_number("batch", batch, 1, queue.MAX_BATCH)
    checks.whole_number("workers", workers, 1, 32)
    stop = stop or threading.Event()
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")
        run(conn, "lab/seed_jobs", {"kind": "send_receipt", "count": jobs})
        run(conn, "lab/vacuum_jobs")
        run(conn, "lab/analyze_jobs")
    done = [0] * workers
    errors: list[BaseException] = []

    def drain(n: int) -> None:
        try:
            with db.connection() as conn:
                while not stop.is_set():
                    held = queue.claim(conn, batch=batch)
                    if not held:
                        return
                    done[n] += sum(queue.complete_many(conn, held))
                    tell(progress, sum(done), jobs)
        except BaseException as exc:  # raised again below  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=drain, args=(n,), daemon=True) for n in range(workers)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed_s = time.perf_counter() - began
    if errors:
        raise errors[0]
    with db.connection() as conn:
        counts = dict(run(conn, "lab/status_counts").fetchall())
    return DrainRate(
        jobs=jobs,
        batch=batch,
        workers=workers,
        elapsed_s=elapsed_s,
        completed=sum(done),
        status_counts=counts,
        guess=guess,
        stopped=stop.is_set(),
        **server_fields(db),
    )


# --- the outbox relay and its stand-in broker ---------------------------------------


class BrokerDown(Exception):
    """The stand-in broker refused a message, as a real one does when unreachable."""


class StandInBroker:
    """NOT a real broker: an in-memory list of (message id, payload) standing in
    for Kafka, RabbitMQ or SQS in this offline lab. `up` switches it on and off;
    every accepted message is kept, duplicates included, as a broker would."""

    def __init__(self):
        self.up = True
        self.messages: list[tuple[int, Any]] = []
        self.refused = 0
        self.lock = threading.Lock()

    def publish(self, message_id: int, payload: Any) -> None:
        with self.lock:
            if not self.up:
                self.refused += 1
                raise BrokerDown("stand-in broker is down: connection refused")
            self.messages.append((message_id, payload))


class Consumer:
    """The consuming side: processes each job id once, however many times the
    broker delivers it (its own record of seen ids makes a repeat harmless)."""

    def __init__(self):
        self.seen: set[int] = set()
        self.processed: list[int] = []
        self.duplicates_skipped = 0

    def consume(self, broker: StandInBroker) -> None:
        for message_id, _ in broker.messages[len(self.processed) + self.duplicates_skipped :]:
            if message_id in self.seen:
                self.duplicates_skipped += 1
                continue
            self.seen.add(message_id)
            self.processed.append(message_id)


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
        except BrokerDown as exc:
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
                    f"{self.waiting_while_down} jobs waited ready with backoff, none lost"
                ),
                (
                    f"relay crashed after publishing {self.republished_after_crash} jobs: "
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
    db: Database, *, orders: int = 60, rolled_back: int = 10, crash_batch: int = 5, guess: float | None = None
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
    consumer.consume(broker)
    delivered = [m for m, _ in broker.messages]
    return OutboxResult(
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
        **server_fields(db),
    )
