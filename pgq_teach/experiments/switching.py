"""Lesson 11's experiments: when to leave PostgreSQL, and how.

- `recommend`: the guide's five signals to move, and its reasons to stay,
  turned into a recommendation with its reasons.
- `drain_rate`: the learner's own drain rate (100,000 batched jobs), beside
  the guide's "about 4 s", and why neither is a benchmark.
- The outbox relay on a real broker (NATS JetStream, `pgq_teach.broker`):
  `Relay` claims each order's oldest unsent event, publishes it with
  Nats-Msg-Id = the job id and marks it sent after the broker's ack; while the
  broker is down it hands the batch back without spending tries and pauses.
  `outage` kills the broker while orders keep coming; `fan_out` and
  `drain_side_by_side` show what the broker gives that the table does not;
  `key_order_cost` what per-key order costs; `order_under_refusal` where it
  is tested: a refusal (the plain claim against the per-key claim), a dead
  head until a person requeues it, and two relays on one backlog.
- `outbox_relay`: the same idea on a `StandInBroker`, an in-memory list, for a
  platform with no nats-server wheel (the lab says so in one line).

The labs return `results.Result`s (the server, the learner's guess, the guide,
the comparison rows the widgets draw). `Recommendation` is the checklist's
answer, worked out from the learner's ticks without a server, so it stays a
plain record; so do `RelayRound`, `RelayStats`, `DrainRow`, `RelayDrain`,
`RefusedHeads`, `DeadHeads` and `TwoRelays`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import psycopg

from .. import broker, charts, checks, measurements, queue, tables
from ..databases import Database
from ..errors import BadInput
from ..guide import GuideFigure, figure
from ..outbox import (
    JETSTREAM_DUPLICATE_WINDOW_S,
    MAX_MSG_SIZE,
    OUTBOX_KEY_INDEX,
    OUTBOX_KIND,
    RELAY_LEASE_S,
    STREAM,
    SUBJECTS,
    Consumer,
    OrderConsumer,
    Relay,
    StandInBroker,
    StandInDown,
    consumed,
    outbox_lag,
    prepare_outbox,
)
from ..statements import explain_analyze, run, run_one
from ..worker import Worker
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
        raise BadInput(
            f"unknown {tables.plural(len(unknown), 'signal')} {sorted(unknown)}; "
            f"the signals are {', '.join(SIGNALS)}"
        )
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
    result = DrainRate(
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
    if not result.stopped:  # lesson 12's back-of-envelope step starts from it
        measurements.record(measurements.DRAIN_JOBS_PER_S_11, round(result.jobs_per_s))
    return result


# --- the outbox relay on the stand-in broker (pgq_teach.outbox) ------------------------


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


# --- the outbox relay on the real broker (NATS JetStream, pgq_teach.outbox) ------------

EVENTS = ("created", "paid", "shipped")
CRASHED_RELAY_LEASE_S = 0.5  # the outage lab's crashed relay, so the lab need not wait 30 s


class RelayCrashed(Exception):
    """The outage lab's relay died after the broker acked `published` events,
    before it marked them sent."""

    def __init__(self, published: int):
        super().__init__(f"died with {tables.count(published, 'event')} published, none marked sent")
        self.published = published


def crash_after_publish(events: list[queue.Job]) -> None:
    """A relay's `after_publish` that dies there: the events are in the broker, and the
    table still holds them claimed until their lease runs out and the reaper hands them back."""
    raise RelayCrashed(len(events))


class OrderDesk:
    """Checkout's side: each step writes one order event in the outbox, in its own
    transaction. A new order commits with its 'created' event; later steps add an
    open order's next event. `written` lists every committed event's job id."""

    def __init__(self, db: Database, *, max_attempts: int = 2):
        self.db = db
        self.max_attempts = max_attempts
        self.open: list[tuple[int, int]] = []  # (order id, last seq written)
        self.written: list[int] = []
        self.steps = 0

    def step(self, conn: psycopg.Connection) -> None:
        self.steps += 1
        if self.open and self.steps % 3:
            order_id, seq = self.open.pop(0)
            self.write(conn, order_id, seq + 1)
            return
        with conn.transaction():
            order_id = run_one(conn, "lab/place_order", {"email": f"c{self.steps}@example.com", "total": 10})[
                0
            ]
            self.write(conn, order_id, 1)

    def write(self, conn: psycopg.Connection, order_id: int, seq: int) -> None:
        payload = {"order_id": order_id, "seq": seq, "event": EVENTS[seq - 1]}
        job_id = queue.enqueue(conn, OUTBOX_KIND, payload, max_attempts=self.max_attempts, notify=False)
        self.written.append(job_id)
        if seq < len(EVENTS):
            self.open.append((order_id, seq))


@dataclass(kw_only=True)
class OutageResult(Result):
    """The outage lab's result: the lag over time, and the counts that must hold."""

    outage_s: float
    retry_schedule_s: float
    max_attempts: int
    events_written: int
    in_broker: int  # distinct job ids in the stream
    stream_messages: int
    lost: int
    dead: int
    out_of_order: int
    deduplicated: int
    duplicates_absorbed: int
    published_uncompleted: int
    pauses: int
    handed_back: int
    peak_lag_s: float
    final_lag_s: float
    lag: list[tuple[float, float, bool]] = field(default_factory=list)  # (t, lag s, broker up)
    restarted_s: float = 0.0  # when the broker was started again, s from the run's start
    killed_pid: int = 0
    tries: dict[int, int] = field(default_factory=dict)  # attempts spent -> events
    guess: float | None = None  # the peak lag, seconds
    guide: GuideFigure = GUIDE_OUTBOX

    def comparison(self) -> list[Comparison]:
        return [
            (
                "peak outbox lag, s",
                self.guess_cell,
                round(self.peak_lag_s, 1),
                f"about the outage ({self.outage_s:g} s)",
            ),
            ("events dead", None, self.dead, 0),
            ("events lost", None, self.lost, 0),
            ("events out of order per order", None, self.out_of_order, 0),
            ("duplicate publishes the dedup window removed", None, self.deduplicated, None),
            ("duplicates the consumer's idempotency absorbed", None, self.duplicates_absorbed, None),
        ]

    @property
    def caught_up_s(self) -> float | None:
        """Seconds from the broker's restart to the first lag sample under one second
        (None if the lag never fell that far)."""
        after = [t for t, lag, _ in self.lag if t >= self.restarted_s and lag < 1.0]
        return round(after[0] - self.restarted_s, 2) if after else None

    def lag_chart(self) -> charts.Chart | None:
        """The outbox's lag over the run, marked where the broker was down,
        beside the outage's length (the lag should peak about there); None
        before any sample."""
        if not self.lag:
            return None
        rows = [{"time": t, "lag": lag, "broker": "up" if up else "down"} for t, lag, up in self.lag]
        return charts.lines(
            rows,
            x="time",
            y="lag",
            heading="Outbox lag over the run",
            x_axis=charts.axis("time since the start", "s", ",.1~f"),
            y_axis=charts.axis("outbox lag", "s", ",.1~f"),
            refs=[charts.Reference(f"the outage, {self.outage_s:g} s", self.outage_s)],
            tooltip=["broker:N"],
        )

    def summary(self) -> str:
        return "\n".join(
            [
                f"broker killed (SIGKILL, pid {self.killed_pid}) for {self.outage_s:g} s while orders kept "
                f"coming; the relay's whole retry schedule at max_attempts={self.max_attempts} is "
                f"{self.retry_schedule_s:g} s",
                f"outbox lag: peak {self.peak_lag_s:.1f} s, at the end {self.final_lag_s:.1f} s "
                f"(your guess for the peak: {guess_text(self.guess, ' s')})",
                f"events: {self.events_written} written, {self.in_broker} in the broker, {self.lost} lost, "
                f"{self.dead} dead, {self.out_of_order} out of order per order",
                f"relay: paused {self.pauses} times, handed back {self.handed_back} claimed events unsent "
                "(no try spent)",
                f"duplicates: {self.published_uncompleted} published by a relay that died before marking "
                f"them sent; the dedup window removed {self.deduplicated} duplicate publishes; "
                f"the stream holds {self.stream_messages} messages; "
                f"the consumer absorbed {self.duplicates_absorbed}",
            ]
            + self.footer()
        )


def retry_schedule_s(max_attempts: int) -> float:
    """The seconds a failed event waits in all before it is dead: fail.sql's 10 s x 2^attempts."""
    return float(sum(min(10 * 2**a, 3600) for a in range(1, max_attempts)))


def outage(
    db: Database,
    *,
    outage_s: float = 25.0,
    before_s: float = 3.0,
    after_s: float = 3.0,
    order_every_s: float = 0.02,
    max_attempts: int = 2,
    crashed_batch: int = 5,
    crashed_consumer: int = 3,
    duplicate_window_s: float = JETSTREAM_DUPLICATE_WINDOW_S,
    drain_timeout_s: float = 60.0,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    the_broker: broker.Broker | None = None,
) -> OutageResult:
    """Orders keep coming while the broker is SIGKILLed for `outage_s`, then started
    again. A relay that dies after publishing `crashed_batch` events (before marking
    them sent) adds duplicates for the dedup window to remove; a consumer that dies
    before acking `crashed_consumer` events gets them again, for its idempotency to absorb."""
    outage_s = float(checks.seconds("outage_s", outage_s, 1, 600))
    checks.seconds("before_s", before_s, 0.5, 60)
    checks.seconds("after_s", after_s, 0, 60)
    checks.seconds("order_every_s", order_every_s, 0.001, 5)
    checks.whole_number("max_attempts", max_attempts, 1, 20)
    checks.whole_number("crashed_batch", crashed_batch, 0, 1000)
    checks.whole_number("crashed_consumer", crashed_consumer, 0, 1000)
    checks.seconds("duplicate_window_s", duplicate_window_s, 1, 3600)
    the_broker = the_broker or broker.Broker()
    the_broker.start()
    stop = stop or threading.Event()
    total_s = before_s + outage_s + after_s
    with broker.Client(the_broker.status().url, name="relay") as client, db.connection() as conn:
        prepare_outbox(conn, client, duplicate_window_s=duplicate_window_s)
        desk = OrderDesk(db, max_attempts=max_attempts)
        relay = Relay(db, client)
        began = time.monotonic()
        lag: list[tuple[float, float, bool]] = []
        up = True
        errors: list[BaseException] = []

        def relay_thread() -> None:
            try:
                relay.run()
            except BaseException as exc:  # raised again below  # noqa: BLE001
                errors.append(exc)

        published_uncompleted = 0
        if crashed_batch:  # a relay that publishes a batch and dies before marking it sent
            for _ in range(crashed_batch):
                desk.step(conn)
            crashed = Relay(
                db,
                client,
                batch=crashed_batch,
                lease=CRASHED_RELAY_LEASE_S,
                after_publish=crash_after_publish,
            )
            try:
                crashed.run_once(conn)
            except RelayCrashed as died:
                published_uncompleted = died.published
        worker = threading.Thread(target=relay_thread, daemon=True)
        worker.start()
        killed_pid = 0
        restarted_s = 0.0
        try:
            next_sample = 0.0
            while (now := time.monotonic() - began) < total_s and not stop.is_set():
                if not killed_pid and now >= before_s:
                    killed_pid = the_broker.kill()
                    up = False
                if not up and now >= before_s + outage_s:
                    the_broker.start()
                    up = True
                    restarted_s = time.monotonic() - began
                desk.step(conn)
                if now >= next_sample:
                    lag.append((round(now, 2), outbox_lag(conn)[1], up))
                    next_sample = now + 0.5
                    tell(progress, int(now), int(total_s))
                time.sleep(order_every_s)
            deadline = time.monotonic() + drain_timeout_s
            while outbox_lag(conn)[0] and time.monotonic() < deadline and not errors:
                lag.append((round(time.monotonic() - began, 2), outbox_lag(conn)[1], True))
                time.sleep(0.25)
            lag.append((round(time.monotonic() - began, 2), outbox_lag(conn)[1], True))
        finally:
            relay.stop_event.set()
            worker.join(30)
            if not up:
                the_broker.start()
        if errors:
            raise errors[0]
        counts = queue.status_counts(conn)
        tries = dict(run(conn, "lab/attempts_spent", {"kind": OUTBOX_KIND}).fetchall())
        stored = client.stream_messages(STREAM)
        messages = client.read_all(
            STREAM, SUBJECTS[0], consumer="shipping", crash_before_ack=crashed_consumer
        )
    consumer = OrderConsumer()
    for _, _, body in messages:
        consumer.take(body)
    in_broker = {int(msg_id) for _, msg_id, _ in messages}
    return OutageResult(
        outage_s=outage_s,
        retry_schedule_s=retry_schedule_s(max_attempts),
        max_attempts=max_attempts,
        events_written=len(desk.written),
        in_broker=len(in_broker),
        stream_messages=stored,
        lost=len(set(desk.written) - in_broker),
        dead=counts.get("dead", 0),
        out_of_order=consumer.out_of_order,
        deduplicated=relay.stats.deduplicated,
        duplicates_absorbed=consumer.duplicates_absorbed,
        published_uncompleted=published_uncompleted,
        pauses=relay.stats.pauses,
        handed_back=relay.stats.handed_back,
        peak_lag_s=max((x for _, x, _ in lag), default=0.0),
        final_lag_s=lag[-1][1] if lag else 0.0,
        lag=lag,
        restarted_s=restarted_s,
        killed_pid=killed_pid,
        tries=tries,
        guess=guess,
        stopped=stop.is_set(),
        **server_fields(db),
    )


# --- the dedup window is finite ---------------------------------------------------------


@dataclass(frozen=True)
class WindowRepublish:
    """One message id published three times: at once, again within the stream's
    duplicate window, and again after it closed. What the broker acked, and kept."""

    window_s: float
    waited_s: float
    first_duplicate: bool
    within_duplicate: bool  # True: the broker recognised the repeat and did not store it
    after_duplicate: bool  # False: the window had forgotten the id, so the repeat was stored
    stored: int  # messages the stream holds for the one event

    def summary(self) -> str:
        return (
            f"duplicate window {self.window_s:g} s: a repeat within it was "
            f"{'dropped' if self.within_duplicate else 'STORED'}; a repeat {self.waited_s:g} s later was "
            f"{'dropped' if self.after_duplicate else 'stored'}; the stream holds {self.stored} copies "
            "of the one event"
        )


def republish_after_window(
    *, window_s: float = 1.0, the_broker: broker.Broker | None = None
) -> WindowRepublish:
    """Publish one event (Nats-Msg-Id "1") to a stream whose duplicate window is
    `window_s`, repeat it at once, then again once the window has passed."""
    window_s = float(checks.seconds("window_s", window_s, 0.1, 10))
    the_broker = the_broker or broker.Broker()
    waited_s = round(window_s + 0.5, 2)
    with broker.Client(the_broker.start().url, name="window") as client:
        client.make_stream("WINDOW", ["window.>"], duplicate_window_s=window_s)
        _, first = client.publish("window.event", b"{}", "1")
        _, within = client.publish("window.event", b"{}", "1")
        time.sleep(waited_s)
        _, after = client.publish("window.event", b"{}", "1")
        stored = client.stream_messages("WINDOW")
    return WindowRepublish(window_s, waited_s, first, within, after, stored)


# --- what the broker gives that the table does not -----------------------------------


@dataclass(kw_only=True)
class FanOutResult(Result):
    """Two consumer groups on the stream, a replay from its start, and two workers on the table."""

    events: int
    billing: int
    analytics: int
    replayed: int
    replay_in_order: bool
    table_jobs: int
    table_worker_a: int
    table_worker_b: int
    table_both: int  # jobs both table workers got: 0, a table hands each job to one worker
    guide: GuideFigure = GUIDE_OUTBOX

    def comparison(self) -> list[Comparison]:
        return [
            ("events in the stream", None, self.events, None),
            ("read by the billing group", None, self.billing, "every event"),
            ("read by the analytics group", None, self.analytics, "every event"),
            ("read again by a new consumer from the start", None, self.replayed, "every event"),
            (
                "table jobs taken by worker A / worker B",
                None,
                f"{self.table_worker_a} / {self.table_worker_b}",
                None,
            ),
        ]

    def summary(self) -> str:
        return "\n".join(
            [
                f"fan-out: billing read {self.billing} and analytics read {self.analytics} of the stream's "
                f"{self.events} events: each group gets every one",
                f"replay: a new consumer read {self.replayed} from the start, "
                f"in order: {self.replay_in_order}",
                f"the table: {self.table_jobs} jobs, worker A took {self.table_worker_a}, worker B "
                f"{self.table_worker_b}, both {self.table_both}: each job goes to one worker",
            ]
            + self.footer()
        )


def fan_out(db: Database, *, table_jobs: int = 1000, the_broker: broker.Broker | None = None) -> FanOutResult:
    """Read the ORDERS stream (left by the outage lab) as two consumer groups and a
    replay; claim `table_jobs` jobs with two workers on the table."""
    checks.whole_number("table_jobs", table_jobs, 2, 100_000)
    the_broker = the_broker or broker.Broker()
    with broker.Client(the_broker.start().url, name="fan-out") as client:
        events = client.stream_messages(STREAM)
        billing = client.read_all(STREAM, SUBJECTS[0], consumer="billing")
        analytics = client.read_all(STREAM, SUBJECTS[0], consumer="analytics")
        replay = client.read_all(STREAM, SUBJECTS[0])
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")
        run(conn, "lab/seed_jobs", {"kind": "send_receipt", "count": table_jobs})
    taken: list[list[int]] = [[], []]

    def take(n: int) -> None:
        with db.connection() as conn:
            while held := queue.claim(conn, batch=10):
                taken[n].extend(j.id for j in held)
                queue.complete_many(conn, held)

    threads = [threading.Thread(target=take, args=(n,), daemon=True) for n in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return FanOutResult(
        events=events,
        billing=len(billing),
        analytics=len(analytics),
        replayed=len(replay),
        replay_in_order=[s for s, _, _ in replay] == sorted(s for s, _, _ in replay),
        table_jobs=table_jobs,
        table_worker_a=len(taken[0]),
        table_worker_b=len(taken[1]),
        table_both=len(set(taken[0]) & set(taken[1])),
        **server_fields(db),
    )


@dataclass(frozen=True)
class DrainRow:
    """One drain: who, at what batch, how fast, and when jobs were picked up."""

    system: str
    batch: int
    jobs: int
    elapsed_s: float
    pickup_p50_ms: float
    pickup_p99_ms: float
    left: int  # jobs (or messages) still there after the drain: 0

    @property
    def jobs_per_s(self) -> float:
        return self.jobs / self.elapsed_s if self.elapsed_s else 0.0


@dataclass(kw_only=True)
class SideBySide(Result):
    """The same drain of N no-op jobs through the course's Worker and a JetStream work queue."""

    rows: list[DrainRow]
    guess: float | None = None  # the table's jobs/s at batch 100
    guide: GuideFigure = field(default_factory=lambda: figure(19))

    def row(self, system: str, batch: int) -> DrainRow:
        return next(r for r in self.rows if r.system.startswith(system) and r.batch == batch)

    def comparison(self) -> list[Comparison]:
        out: list[Comparison] = []
        for r in self.rows:
            guess = self.guess_cell if r.system.startswith("table") and r.batch == 100 else None
            out.append((f"{r.system}, batch {r.batch}: jobs/s", guess, round(r.jobs_per_s), None))
        return out

    def table_markdown(self) -> str:
        """The side-by-side table, as docs/broker-comparison.md shows it."""
        lines = [
            "| drain of N no-op jobs | batch | jobs | jobs/s | pickup p50 (ms) | pickup p99 (ms) | left |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in self.rows:
            lines.append(
                f"| {r.system} | {r.batch} | {r.jobs:,} | {r.jobs_per_s:,.0f} | {r.pickup_p50_ms:,.0f} | "
                f"{r.pickup_p99_ms:,.0f} | {r.left} |"
            )
        return "\n".join(lines)

    def summary(self) -> str:
        return "\n".join(
            [
                self.table_markdown(),
                f"your guess for the table at batch 100: {guess_text(self.guess, ' jobs/s')}",
            ]
            + self.footer()
        )


def percentile_ms(values: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of seconds, in milliseconds."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def drain_side_by_side(
    db: Database,
    *,
    jobs: int = 2000,
    batches: tuple[int, ...] = (1, 100),
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    the_broker: broker.Broker | None = None,
) -> SideBySide:
    """Drain `jobs` no-op jobs, all waiting at the start, with one consumer each way and
    each batch size: the Worker on the table, and a pull consumer with explicit acks on a
    JetStream work-queue stream. Pickup: seconds from the drain's start to a job's handler."""
    checks.whole_number("jobs", jobs, 10, 200_000)
    for b in batches:
        checks.whole_number("batch", b, 1, queue.MAX_BATCH)
    the_broker = the_broker or broker.Broker()
    stop = stop or threading.Event()
    rows: list[DrainRow] = []
    with broker.Client(the_broker.start().url, name="drain") as client:
        for n, b in enumerate(batches):
            if stop.is_set():
                break
            tell(progress, 2 * n, 2 * len(batches))
            rows.append(drain_table(db, jobs, b))
            tell(progress, 2 * n + 1, 2 * len(batches))
            client.make_stream("DRAIN", ["drain.jobs"], work_queue=True)
            client.publish_many("drain.jobs", jobs)
            elapsed, pickups = client.drain_work_queue("DRAIN", "drain.jobs", jobs, b)
            left = settled_count(client, "DRAIN")
            rows.append(
                DrainRow(
                    "JetStream work queue",
                    b,
                    len(pickups),
                    elapsed,
                    percentile_ms(pickups, 50),
                    percentile_ms(pickups, 99),
                    left,
                )
            )
    rows.sort(key=lambda r: (not r.system.startswith("table"), r.batch))
    return SideBySide(rows=rows, guess=guess, stopped=stop.is_set(), **server_fields(db))


ACK_SETTLE_S = 5.0  # how long an acked message may take to leave a work-queue stream


def settled_count(client: broker.Client, stream: str) -> int:
    """The messages left in a work-queue stream once the consumer's acks have landed.
    An ack is sent without waiting for the broker's answer, and the broker removes the
    message when it processes the ack, so a count read at once can still include the
    last acks of a busy broker (28 of 2,000 in one run under load). A message nobody
    acked stays in the stream, so after ACK_SETTLE_S the count is what was left."""
    deadline = time.monotonic() + ACK_SETTLE_S
    left = client.stream_messages(stream)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = client.stream_messages(stream)
    return left


def drain_table(db: Database, jobs: int, batch: int) -> DrainRow:
    """The course's Worker drains `jobs` waiting no-op jobs, claiming `batch` at a time."""
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")
        run(conn, "lab/seed_jobs", {"kind": "send_receipt", "count": jobs})
        run(conn, "lab/vacuum_jobs")
        run(conn, "lab/analyze_jobs")
    pickups: list[float] = []
    began = 0.0

    def handle(job: queue.Job) -> None:
        pickups.append(time.perf_counter() - began)

    worker = Worker(db.dsn, {"send_receipt": handle}, batch=batch, poll=0.05)
    began = time.perf_counter()
    worker.run(until_idle=True)
    elapsed = time.perf_counter() - began
    with db.connection() as conn:
        left = queue.status_counts(conn).get("ready", 0)
    return DrainRow(
        "table (course's Worker)",
        batch,
        worker.report.done,
        elapsed,
        percentile_ms(pickups, 50),
        percentile_ms(pickups, 99),
        left,
    )


# --- what per-key order costs ---------------------------------------------------------


@dataclass(frozen=True)
class RelayDrain:
    """One relay draining a backlog: claims made, time in the claim, time in all."""

    claim: str
    events: int
    claims: int
    claim_s: float
    elapsed_s: float
    out_of_order: int

    @property
    def events_per_s(self) -> float:
        return self.events / self.elapsed_s if self.elapsed_s else 0.0


@dataclass(kw_only=True)
class KeyOrderCost(Result):
    """The same backlog relayed with the per-key claim and with the plain claim."""

    orders: int
    rows: list[RelayDrain]
    guide: GuideFigure = GUIDE_OUTBOX

    def comparison(self) -> list[Comparison]:
        return [
            (
                f"{r.claim}: events/s, claims, ms per claim",
                None,
                f"{r.events_per_s:,.0f}, {r.claims}, {1000 * r.claim_s / max(r.claims, 1):.1f}",
                None,
            )
            for r in self.rows
        ]

    def summary(self) -> str:
        lines = [f"a backlog of {self.orders} orders x {len(EVENTS)} events, one relay, batch 100:"]
        for r in self.rows:
            lines.append(
                f"  {r.claim}: {r.events} events in {r.elapsed_s:.2f} s ({r.events_per_s:,.0f}/s), "
                f"{r.claims} claims, {1000 * r.claim_s / max(r.claims, 1):.1f} ms each, "
                f"{r.out_of_order} out of order"
            )
        return "\n".join(lines + self.footer())


def key_order_cost(
    db: Database, *, orders: int = 500, the_broker: broker.Broker | None = None
) -> KeyOrderCost:
    """Write `orders` orders' three events each (all unsent, as after an outage), then
    relay them once with claim_in_key_order.sql and once with the plain claim.sql."""
    checks.whole_number("orders", orders, 1, 100_000)
    the_broker = the_broker or broker.Broker()
    rows = []
    with broker.Client(the_broker.start().url, name="key-order") as client, db.connection() as conn:
        for in_key_order in (True, False):
            prepare_outbox(conn, client, duplicate_window_s=JETSTREAM_DUPLICATE_WINDOW_S)
            desk = OrderDesk(db)
            with conn.transaction():
                while len(desk.written) < orders * len(EVENTS):
                    desk.step(conn)
            run(conn, "lab/analyze_jobs")
            relay = Relay(db, client, in_key_order=in_key_order)
            began = time.perf_counter()
            while relay.run_once(conn)[0]:
                pass
            elapsed = time.perf_counter() - began
            consumer = consumed(client)
            rows.append(
                RelayDrain(
                    "per-key claim" if in_key_order else "plain claim",
                    relay.stats.sent,
                    relay.stats.claims,
                    relay.stats.claim_s,
                    elapsed,
                    consumer.out_of_order,
                )
            )
    return KeyOrderCost(orders=orders, rows=rows, **server_fields(db))


# --- the per-key claim's plan, at the lesson's backlog and at ten times it --------------


@dataclass(frozen=True)
class KeyClaimPlan:
    """EXPLAIN (ANALYZE, BUFFERS) of one per-key claim on a backlog: candidates the
    claim walked in jobs_ready_idx, probes of the key index, heads it claimed, and the
    buffers of the claim's CTE (the walk and the probes, before the UPDATE)."""

    unsent: int
    batch: int
    walked: int
    probes: int
    claimed: int
    cte_buffers: int


def plan_nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    """A JSON plan node and every node under it."""
    return [node] + [n for child in node.get("Plans", []) for n in plan_nodes(child)]


def key_claim_plan(db: Database, *, orders: int, batch: int = 100) -> KeyClaimPlan:
    """Seed a backlog of `orders` orders x 3 unsent events (an order's events written
    together), analyze, and read the per-key claim's plan, run once and rolled back."""
    checks.whole_number("orders", orders, 1, 1_000_000)
    checks.whole_number("batch", batch, 1, queue.MAX_BATCH)
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")
        run(conn, "lab/drop_index", idents={"name": OUTBOX_KEY_INDEX})
        run(conn, "outbox_key_index")
        run(conn, "lab/seed_order_events", {"kind": OUTBOX_KIND, "orders": orders})
        run(conn, "lab/analyze_jobs")
        params = {"kind": OUTBOX_KIND, "batch": batch, "lease": timedelta(seconds=RELAY_LEASE_S)}
        plan = explain_analyze(conn, "claim_in_key_order", params)
    nodes = plan_nodes(plan)

    def index_scans(index: str) -> list[dict[str, Any]]:
        return [n for n in nodes if n.get("Index Name") == index]

    walk = index_scans("jobs_ready_idx")
    probes = index_scans(OUTBOX_KEY_INDEX)
    cte = next(n for n in nodes if n.get("Subplan Name") == "CTE next")
    return KeyClaimPlan(
        unsent=3 * orders,
        batch=batch,
        walked=int(walk[0]["Actual Rows"]) if walk else 3 * orders,  # no index walk: every row read
        probes=int(probes[0]["Actual Loops"]) if probes else 0,
        claimed=int(plan["Actual Rows"]),
        cte_buffers=int(cte["Shared Hit Blocks"] + cte["Shared Read Blocks"]),
    )


# --- per-key order across a refusal, behind a dead head, and with two relays ----------


def refused_backlog(
    conn: psycopg.Connection, db: Database, client: broker.Client, *, orders: int, max_attempts: int
) -> OrderDesk:
    """An empty outbox and ORDERS stream, then `orders` orders' first two events
    (every order's first, then every order's second), with a stream that refuses
    everything: its max_msg_size is set below any event's size."""
    prepare_outbox(conn, client, duplicate_window_s=JETSTREAM_DUPLICATE_WINDOW_S)
    desk = OrderDesk(db, max_attempts=max_attempts)
    for seq in (1, 2):
        for order_id in range(1, orders + 1):
            desk.write(conn, order_id, seq)
    client.set_max_msg_size(STREAM, 10)
    return desk


@dataclass(frozen=True)
class RefusedHeads:
    """One claim's relay over orders whose first event the broker refused once: the jobs
    after the refusal, what the stream took while those heads waited out their backoff,
    and what the consumer saw once the relay had drained the outbox."""

    claim: str
    refused: int  # first events the broker refused (a try spent each)
    after_refusal: dict[str, int]  # jobs by status after the refusing round
    tries_after_refusal: dict[int, int]  # jobs by attempts then, as the server counts them
    sent_ahead: int  # messages in the stream while the refused heads waited: later events sent first
    end: dict[str, int]  # jobs by status once the relay had drained the outbox
    in_stream: int
    applied: int  # events the consumer applied in sequence
    out_of_order: int  # events that arrived before their order's earlier one
    duplicates: int  # job ids the consumer met a second time


@dataclass(frozen=True)
class DeadHeads:
    """Orders whose first event went dead (refused once at max_attempts=1), before and
    after a person requeued it."""

    refused: int
    while_dead: dict[str, int]  # jobs by status with the heads dead and the broker taking everything
    claimed_while_dead: int  # events a relay round claimed then
    lag_events: int  # unsent events the outbox lag counted then
    in_stream_before: int  # messages in the stream before the requeue
    requeued: int  # rows requeue_dead.sql put back
    end: dict[str, int]  # jobs by status once the relay had drained after the requeue
    applied: int
    out_of_order: int

    @property
    def dead(self) -> int:
        return self.while_dead.get("dead", 0)

    @property
    def held(self) -> int:
        """Later events waiting ready, unsent, behind their dead heads."""
        return self.while_dead.get("ready", 0)


@dataclass(frozen=True)
class TwoRelays:
    """Two relays, each with its own database session, broker connection and thread,
    draining one backlog together."""

    events: int  # events in the backlog
    sent: tuple[int, int]  # events each relay sent (acked as new)
    deduplicated: int  # publishes the broker acked as duplicates (a retry after a lost ack)
    left: int  # unsent events when the drain ended: 0 unless it ran out of time
    in_stream: int
    applied: int
    out_of_order: int
    duplicates: int  # job ids the consumer met a second time
    elapsed_s: float


@dataclass(kw_only=True)
class OrderUnderRefusal(Result):
    """Per-key order where it is tested: a refusal with the per-key claim and the plain
    claim, dead heads and their requeue, and two relays on one backlog."""

    orders: int
    refusals: list[RefusedHeads]  # the per-key claim's run, then the plain claim's
    dead_heads: DeadHeads
    two_relays: TwoRelays
    guess: float | None = None  # events the plain claim delivers out of order
    guide: GuideFigure = GUIDE_OUTBOX

    def comparison(self) -> list[Comparison]:
        two = self.two_relays
        return [
            (
                f"after a refusal, {r.claim}: events out of order",
                self.guess_cell if r.claim.startswith("plain") else None,
                r.out_of_order,
                0 if r.claim.startswith("per-key") else None,
            )
            for r in self.refusals
        ] + [
            ("behind dead heads: later events in the stream", None, self.dead_heads.in_stream_before, 0),
            ("after the requeue: events out of order", None, self.dead_heads.out_of_order, 0),
            ("two relays: events sent by each", None, f"{two.sent[0]:,} / {two.sent[1]:,}", None),
            ("two relays: events out of order, duplicates", None, f"{two.out_of_order}, {two.duplicates}", 0),
        ]

    def summary(self) -> str:
        dead, two = self.dead_heads, self.two_relays
        n = tables.count
        lines = [f"{n(self.orders, 'order')} of two events each; the broker refuses each first event once:"]
        for r in self.refusals:
            lines.append(
                f"  {r.claim}: {r.refused} refused; while they waited out their backoff the stream took "
                f"{n(r.sent_ahead, 'later event')}; in the end it held {n(r.in_stream, 'message')}, "
                f"{r.applied} applied in sequence, {r.out_of_order} out of order"
            )
        lines += [
            f"  your guess for the plain claim: {guess_text(self.guess)}",
            f"dead heads (max_attempts=1): {dead.refused} refused, {dead.dead} dead, "
            f"{n(dead.held, 'later event')} held ready behind them; with the broker taking everything "
            f"again, a relay round claimed {dead.claimed_while_dead}, the outbox lag counted "
            f"{dead.lag_events} unsent, the stream held {n(dead.in_stream_before, 'message')}",
            f"  after requeue_dead put back {dead.requeued}: {dead.end.get('done', 0)} done, "
            f"{dead.applied} applied in sequence, {dead.out_of_order} out of order",
            f"two relays, one backlog of {n(two.events, 'event')}: relay A sent {two.sent[0]:,}, relay B "
            f"{two.sent[1]:,}, in {tables.duration(two.elapsed_s)}, {two.left} left; the stream holds "
            f"{n(two.in_stream, 'message')}; {two.out_of_order} out of order, "
            f"{n(two.duplicates, 'duplicate')} at the consumer, {n(two.deduplicated, 'publish')} acked as "
            "duplicates",
        ]
        return "\n".join(lines + self.footer())


def order_under_refusal(
    db: Database,
    *,
    orders: int = 3,
    backlog: int = 400,
    batch: int = 25,
    drain_timeout_s: float = 60.0,
    guess: float | None = None,
    the_broker: broker.Broker | None = None,
) -> OrderUnderRefusal:
    """Where per-key order is tested, on the real broker. `orders` orders of two events
    each: the broker refuses every first event once (a try spent, a backoff to wait out)
    and the relay goes on, once with the per-key claim and once with the plain claim;
    then, at max_attempts=1, the refused first events go dead and stay so until
    requeue_dead.sql. Last, two relays at `batch` drain `backlog` orders' three events."""
    checks.whole_number("orders", orders, 1, 1_000)
    checks.whole_number("backlog", backlog, 1, 100_000)
    checks.whole_number("batch", batch, 1, queue.MAX_BATCH)
    drain_timeout_s = float(checks.seconds("drain_timeout_s", drain_timeout_s, 1, 600))
    the_broker = the_broker or broker.Broker()
    url = the_broker.start().url
    refusals = []
    with broker.Client(url, name="order") as client, db.connection() as conn:
        for in_key_order in (True, False):
            refused_backlog(conn, db, client, orders=orders, max_attempts=5)
            relay = Relay(db, client, batch=orders, in_key_order=in_key_order)
            relay.run_once(conn)  # every first event refused: a try spent, a backoff to wait out
            after_refusal = queue.status_counts(conn)
            tries = dict(run(conn, "lab/attempts_spent", {"kind": OUTBOX_KIND}).fetchall())
            client.set_max_msg_size(STREAM, MAX_MSG_SIZE)
            relay.run_once(conn)  # the broker takes everything now; the refused heads still wait
            sent_ahead = client.stream_messages(STREAM)
            run(conn, "lab/make_all_due")  # skip the rest of the backoff
            while relay.run_once(conn)[0]:
                pass
            consumer = consumed(client)
            refusals.append(
                RefusedHeads(
                    claim="per-key claim" if in_key_order else "plain claim",
                    refused=relay.stats.rejected,
                    after_refusal=after_refusal,
                    tries_after_refusal=tries,
                    sent_ahead=sent_ahead,
                    end=queue.status_counts(conn),
                    in_stream=client.stream_messages(STREAM),
                    applied=consumer.applied,
                    out_of_order=consumer.out_of_order,
                    duplicates=consumer.duplicates_absorbed,
                )
            )
        refused_backlog(conn, db, client, orders=orders, max_attempts=1)
        relay = Relay(db, client, batch=2 * orders)  # room for every event, were the later ones claimable
        relay.run_once(conn)  # refused at their one try: dead
        client.set_max_msg_size(STREAM, MAX_MSG_SIZE)
        claimed_while_dead = relay.run_once(conn)[0]
        while_dead = queue.status_counts(conn)
        lag_events = outbox_lag(conn)[0]
        in_stream_before = client.stream_messages(STREAM)
        requeued = queue.requeue_dead(conn, OUTBOX_KIND)
        while relay.run_once(conn)[0]:
            pass
        consumer = consumed(client)
        dead_heads = DeadHeads(
            refused=relay.stats.rejected,
            while_dead=while_dead,
            claimed_while_dead=claimed_while_dead,
            lag_events=lag_events,
            in_stream_before=in_stream_before,
            requeued=requeued,
            end=queue.status_counts(conn),
            applied=consumer.applied,
            out_of_order=consumer.out_of_order,
        )
        prepare_outbox(conn, client, duplicate_window_s=JETSTREAM_DUPLICATE_WINDOW_S)
        events = run(conn, "lab/seed_order_events", {"kind": OUTBOX_KIND, "orders": backlog}).rowcount
        run(conn, "lab/analyze_jobs")
        two_relays = drain_with_two_relays(db, conn, client, url, events, batch, drain_timeout_s)
    return OrderUnderRefusal(
        orders=orders,
        refusals=refusals,
        dead_heads=dead_heads,
        two_relays=two_relays,
        guess=guess,
        **server_fields(db),
    )


def drain_with_two_relays(
    db: Database,
    conn: psycopg.Connection,
    client: broker.Client,
    url: str,
    events: int,
    batch: int,
    timeout_s: float,
) -> TwoRelays:
    """Two relays, each on its own thread with its own session and broker connection,
    drain the outbox until it is empty (or `timeout_s` has passed); `client` then reads
    the stream as the consumer."""
    errors: list[BaseException] = []
    with (
        broker.Client(url, name="relay-a") as client_a,
        broker.Client(url, name="relay-b") as client_b,
    ):
        relays = [Relay(db, c, batch=batch) for c in (client_a, client_b)]

        def relay_thread(relay: Relay) -> None:
            try:
                relay.run()
            except BaseException as exc:  # raised again below  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=relay_thread, args=(r,), daemon=True) for r in relays]
        began = time.perf_counter()
        for t in threads:
            t.start()
        try:
            deadline = time.monotonic() + timeout_s
            while (left := outbox_lag(conn)[0]) and time.monotonic() < deadline and not errors:
                time.sleep(0.02)
            elapsed_s = time.perf_counter() - began
        finally:
            for r in relays:
                r.stop_event.set()
            for t in threads:
                t.join(30)
    if errors:
        raise errors[0]
    consumer = consumed(client)
    return TwoRelays(
        events=events,
        sent=(relays[0].stats.sent, relays[1].stats.sent),
        deduplicated=sum(r.stats.deduplicated for r in relays),
        left=left,
        in_stream=client.stream_messages(STREAM),
        applied=consumer.applied,
        out_of_order=consumer.out_of_order,
        duplicates=consumer.duplicates_absorbed,
        elapsed_s=elapsed_s,
    )
