"""Lesson 11: per-key order where it is tested, on the real broker. A refusal
(the per-key claim against the plain claim), dead heads until a person requeues
them, and two relays on one backlog. `RefusedHeads`, `DeadHeads` and `TwoRelays`
are plain records."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import psycopg

from ... import checks, queue, tables
from ...databases import Database
from ...guide import GuideFigure
from ...infra import broker
from ...outbox import (
    JETSTREAM_DUPLICATE_WINDOW_S,
    MAX_MSG_SIZE,
    OUTBOX_KIND,
    STREAM,
    Relay,
    consumed,
    outbox_lag,
    prepare_outbox,
)
from ...statements import run
from ..results import Comparison, Result, finish, guess_text
from .orders import GUIDE_OUTBOX, OrderDesk


def refused_backlog(
    conn: psycopg.Connection, db: Database, client: broker.Client, *, orders: int, max_attempts: int
) -> OrderDesk:
    """An empty outbox and ORDERS stream, then `orders` orders' first two events
    (every order's first, then every order's second), with a stream that refuses
    everything: its max_msg_size is set below any event's size."""
    prepare_outbox(conn, client, duplicate_window_s=JETSTREAM_DUPLICATE_WINDOW_S)
    desk = OrderDesk(db, max_attempts=max_attempts)
    placed = [desk.place(conn) for _ in range(orders)]
    for seq in (1, 2):
        for order_id in placed:
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
    nats: broker.Broker | None = None,
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
    nats = nats or broker.Broker()
    url = nats.start().url
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
    return finish(
        OrderUnderRefusal,
        db,
        orders=orders,
        refusals=refusals,
        dead_heads=dead_heads,
        two_relays=two_relays,
        guess=guess,
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
