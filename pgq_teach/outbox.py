"""The transactional outbox's relay, a component of the queue as the Worker is.

The outbox is the jobs table: checkout writes the order and its event (kind
`OUTBOX_KIND`) in one transaction. `Relay` claims the oldest unsent event of
each order (claim_in_key_order.sql), publishes it to the broker (NATS
JetStream, `pgq_teach.infra.broker`) with Nats-Msg-Id = its event id, waits for
the broker's ack and only then marks it sent.

The event id is the jobs table's `event_id`, a UUID written at enqueue, never
the job id: job ids repeat (a TRUNCATE ... RESTART IDENTITY; a new primary after
an asynchronous failover), and the broker acks a repeated id inside its window
as a duplicate without storing it, so a new event would be marked sent unstored.

What the broker says is sorted by fault (`broker.sorted_error`):
- no answer, or "not now" (busy, the same id in process, a server error): not
  the event's fault. The relay hands the batch back with its attempts
  (release_many.sql) and pauses, doubling the pause up to a cap;
- refused under a limit a person can raise while it waits (the stream's
  max_msg_size): a try is spent, with the queue's backoff, as a failed job's;
- never publishable as it is (over the server's max_payload): dead at once
  (fail_dead.sql), since every retry would fail the same way.
A caller may pass `after_publish`, which runs between the broker's ack and the
marking (lesson 11's labs crash a relay there).

Per-key order holds when each order's events commit in id order: the claim's
NOT EXISTS cannot see an earlier id that is not yet committed. The writer meets
that by locking the order's row before it writes the event (`write_event`).

- `write_event`: checkout's write of an order's next event, under the order's lock.
- `prepare_outbox`: an empty outbox with the relay's index, and an empty ORDERS
  stream. It empties the jobs table (lab/reset_jobs.sql): a lab's or a test's
  start, never a live outbox's.
- `outbox_lag`: unsent events and the age of the oldest, the relay's alarm.
- `OrderConsumer` (and `consumed`): the consuming side, applying each order's
  events in sequence and absorbing duplicates by event id, never by job id.
- `StandInBroker` and its `Consumer`: NOT a real broker, an in-memory list the
  relay exercise grades with (lesson 11's labs need the real one).

`RelayStats` is a plain record of what one relay did.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import psycopg

from . import checks, queue
from .databases import Database
from .errors import BadInput
from .infra import broker
from .statements import records, run, run_one

OUTBOX_KIND = "order_event"
STREAM = "ORDERS"
SUBJECTS = ["orders.>"]
MAX_MSG_SIZE = 4096  # bytes: the stream refuses a larger event, and that refusal spends a try
JETSTREAM_DUPLICATE_WINDOW_S = 120.0  # JetStream's default duplicate window: two minutes
OUTBOX_KEY_INDEX = "jobs_unsent_key_idx"  # outbox_key_index.sql's index
RELAY_LEASE_S = 30.0  # a relay's claim: a killed relay's events wait this long for the reaper


@dataclass(frozen=True)
class OutboxEvent(queue.Job):
    """A claimed outbox event: the job, and the id it is published under (schema.sql's
    `event_id`, written at enqueue; the job id can repeat, this one does not)."""

    event_id: uuid.UUID | None = None

    @property
    def message_id(self) -> str:
        """The Nats-Msg-Id: the event id, which the broker's dedup window is keyed on."""
        if self.event_id is None:
            raise ValueError(f"job {self.id} was claimed without its event id")
        return str(self.event_id)


def write_event(
    conn: psycopg.Connection, order_id: int, payload: dict[str, Any], *, max_attempts: int = 5
) -> int:
    """Write an order's next event in the outbox, in the caller's transaction (or one of its
    own), after locking the order's row (lock_order.sql): a second writer of the same order
    waits for this one to end before it draws an id, so the order's events commit in id
    order, which the per-key claim needs. The job id; an order that does not exist is refused."""
    with conn.transaction():
        if run(conn, "lock_order", {"order_id": order_id}).fetchone() is None:
            raise BadInput(f"order {order_id} does not exist: write the order before its events")
        return queue.enqueue(
            conn, OUTBOX_KIND, {"order_id": order_id, **payload}, max_attempts=max_attempts, notify=False
        )


def event_bytes(event: OutboxEvent) -> bytes:
    """The message body: the event as written in the outbox, with its event id and job id."""
    body = {"event_id": event.message_id, "job_id": event.id, **event.payload}
    return json.dumps(body, separators=(",", ":")).encode()


def subject(job: queue.Job) -> str:
    return f"orders.{job.payload.get('event', 'event')}"


@dataclass
class RelayStats:
    """What one relay did: events sent (acked as new), acks the dedup window marked
    duplicate, events refused for their own sake (a try spent), events no retry could
    publish (dead at once), pauses for an outage, and how many claimed events it
    handed back unsent."""

    sent: int = 0
    deduplicated: int = 0
    rejected: int = 0
    unpublishable: int = 0
    pauses: int = 0
    handed_back: int = 0
    claims: int = 0
    claim_s: float = 0.0  # time spent in the claim statement


class Relay:
    """The outbox relay: claim the head event of each order, publish, wait for the
    ack, mark sent. `pause_s` doubles per failed round up to `pause_cap_s`.
    `after_publish`, if given, is called each round with the events the broker
    acked, before they are marked sent; if it raises, the round ends there and
    they stay claimed until their lease runs out and the reaper hands them back."""

    def __init__(
        self,
        db: Database,
        client: broker.Client,
        *,
        batch: int = 100,
        lease: float = RELAY_LEASE_S,
        pause_s: float = 0.1,
        pause_cap_s: float = 2.0,
        ack_timeout_s: float = 1.0,
        in_key_order: bool = True,
        after_publish: Callable[[Sequence[queue.Job]], None] | None = None,
    ):
        self.db, self.client = db, client
        self.in_key_order = in_key_order
        self.after_publish = after_publish
        self.batch = checks.whole_number("batch", batch, 1, queue.MAX_BATCH)
        self.lease = checks.lease(lease)
        self.pause_cap_s = float(checks.seconds("pause_cap_s", pause_cap_s, 0.01, 3600))
        self.first_pause_s = float(checks.seconds("pause_s", pause_s, 0.001, self.pause_cap_s))
        self.ack_timeout_s = float(checks.seconds("ack_timeout_s", ack_timeout_s, 0.05, 60))
        self.pause_s = self.first_pause_s
        self.stats = RelayStats()
        self.stop_event = threading.Event()

    def claim(self, conn: psycopg.Connection) -> list[OutboxEvent]:
        """The head unsent event of up to `batch` orders (in_key_order=False: the
        course's plain claim, the oldest due events whatever their order)."""
        began = time.perf_counter()
        self.stats.claims += 1
        try:
            if not self.in_key_order:
                return with_event_ids(conn, queue.claim(conn, batch=self.batch, lease=self.lease))
            params = {"kind": OUTBOX_KIND, "batch": self.batch, "lease": self.lease}
            return run(conn, "claim_in_key_order", params, row_factory=records(OutboxEvent)).fetchall()
        finally:
            self.stats.claim_s += time.perf_counter() - began

    def run_once(self, conn: psycopg.Connection) -> tuple[int, bool]:
        """One round: (events claimed, whether the broker was down)."""
        queue.reap(conn)
        jobs = self.claim(conn)
        sent: list[OutboxEvent] = []
        unsent: list[OutboxEvent] = []
        down = ""
        # One event per order in a per-key claim: the whole batch can be in flight at once.
        # The plain claim may hold two events of one order, so it publishes one at a time.
        groups = [jobs] if self.in_key_order else [[j] for j in jobs]
        for group in groups:
            if down:  # after a refused connection, the rest of the batch goes back unsent, in order
                unsent.extend(group)
                continue
            messages = [(subject(j), event_bytes(j), j.message_id) for j in group]
            outcomes = self.client.publish_batch(messages, timeout_s=self.ack_timeout_s)
            for job, outcome in zip(group, outcomes, strict=True):
                if isinstance(outcome, broker.BrokerDown):
                    down = str(outcome)
                    unsent.append(job)
                elif isinstance(outcome, broker.Rejected):
                    queue.fail(conn, job, outcome)  # its own fault: a try is spent, with the queue's backoff
                    self.stats.rejected += 1
                elif isinstance(outcome, broker.Unpublishable):
                    self.bury(conn, job, str(outcome))
                else:
                    self.stats.deduplicated += outcome[1]
                    self.stats.sent += not outcome[1]
                    sent.append(job)
        if unsent:
            self.hand_back(conn, unsent, down)
        if self.after_publish is not None:
            self.after_publish(sent)
        if sent:
            queue.complete_many(conn, sent)
        return len(jobs), bool(down)

    def bury(self, conn: psycopg.Connection, job: OutboxEvent, error: str) -> None:
        """Dead at once: no retry can publish it, so spending its tries would only delay
        the person who must mend it (and hold its order's later events back meanwhile)."""
        with queue.atomic(conn):
            self.stats.unpublishable += len(
                run(
                    conn, "fail_dead", {"id": job.id, "fence_token": job.fence_token, "error": error}
                ).fetchall()
            )

    def hand_back(self, conn: psycopg.Connection, jobs: Sequence[queue.Job], error: str) -> None:
        """Back to ready unsent, attempts given back: the broker was down, not the event."""
        params = {"ids": [j.id for j in jobs], "fence_tokens": [j.fence_token for j in jobs], "error": error}
        with queue.atomic(conn):
            self.stats.handed_back += len(run(conn, "release_many", params).fetchall())

    def run(self, *, idle_s: float = 0.02) -> RelayStats:
        """Relay until stopped: pause (backing off) while the broker is down, rest briefly when idle."""
        with self.db.connection() as conn:
            while not self.stop_event.is_set():
                claimed, down = self.run_once(conn)
                if down:
                    self.stats.pauses += 1
                    self.stop_event.wait(self.pause_s)
                    self.pause_s = min(self.pause_s * 2, self.pause_cap_s)
                    continue
                self.pause_s = self.first_pause_s
                if not claimed:
                    self.stop_event.wait(idle_s)
        return self.stats


class OrderConsumer:
    """The consuming side (shipping): applies each order's events in sequence.
    An event id seen before is a duplicate its idempotency absorbs; an event whose
    sequence is not the next of its order is out of order (counted, never applied).
    It keys on the event id, not the job id: a promoted replica without the fencing
    epoch hands out job ids the lost primary had used, so a new event can carry a
    published one's job id (tests/test_failover.py shows it on a real pair)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.last_seq: dict[int, int] = {}
        self.applied = 0
        self.duplicates_absorbed = 0
        self.out_of_order = 0

    def take(self, body: bytes) -> None:
        event = json.loads(body)
        if event["event_id"] in self.seen:
            self.duplicates_absorbed += 1
            return
        self.seen.add(event["event_id"])
        order, seq = event["order_id"], event["seq"]
        if seq != self.last_seq.get(order, 0) + 1:
            self.out_of_order += 1
            return
        self.last_seq[order] = seq
        self.applied += 1


def with_event_ids(conn: psycopg.Connection, jobs: list[queue.Job]) -> list[OutboxEvent]:
    """Jobs the plain claim returned, with the event id each is published under."""
    ids = dict(run(conn, "lab/event_ids", {"ids": [j.id for j in jobs]}).fetchall()) if jobs else {}
    return [
        OutboxEvent(**{f.name: getattr(j, f.name) for f in fields(queue.Job)}, event_id=ids[j.id])
        for j in jobs
    ]


def consumed(client: broker.Client) -> OrderConsumer:
    """The shipping consumer, after it read the ORDERS stream from its start."""
    consumer = OrderConsumer()
    for _, _, body in client.read_all(STREAM, SUBJECTS[0]):
        consumer.take(body)
    return consumer


def outbox_lag(conn: psycopg.Connection) -> tuple[int, float]:
    """(unsent events, age in seconds of the oldest): the relay's alarm."""
    count, age = run_one(conn, "outbox_lag", {"kind": OUTBOX_KIND})
    return int(count), float(age)


def prepare_outbox(conn: psycopg.Connection, client: broker.Client, *, duplicate_window_s: float) -> None:
    """An empty jobs table with the relay's index, and an empty ORDERS stream. The index
    is made afresh: one from before dead rows counted as unsent has the old predicate."""
    run(conn, "lab/reset_jobs")
    run(conn, "lab/drop_index", idents={"name": OUTBOX_KEY_INDEX})
    run(conn, "outbox_key_index")
    client.make_stream(STREAM, SUBJECTS, duplicate_window_s=duplicate_window_s, max_msg_size=MAX_MSG_SIZE)


# --- the stand-in broker ------------------------------------------------------------


class StandInDown(Exception):
    """The stand-in broker refused a message, as a real one does when unreachable."""


class StandInBroker:
    """NOT a real broker: an in-memory list of (message id, payload) standing in
    for one in the relay exercise's scratch database. `up` switches it on and off;
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
                raise StandInDown("stand-in broker is down: connection refused")
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
