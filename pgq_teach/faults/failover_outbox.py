"""The failover drill's outbox: checkout writing orders and their events on the pair, and the
library's `outbox.Relay` forwarding them to a NATS broker of the drill's own, through the kill
and the promotion. What reached the broker is then held against what checkout was told was
written, and against what the new primary still has.

The outbox lives in a database of its own on the pair (`OUTBOX_DB`): the fleet's workers claim
every kind of job in theirs, and would take the events as their own. Physical replication
carries every database of the cluster, so it loses the same window of WAL. At promotion the
epoch moves its sequences (fence_sequences.sql), so its order ids and job ids do not repeat;
fence_epoch.sql's tokens are not moved there. Without the epoch its job ids repeat, and the
relay and the consumer, keyed on the event id, absorb that (tests/test_failover.py shows a new
event under a lost one's job id applied).

Checkout writes from the fleet's start until the kill, then stops, so every event the drill
counts was written on the old primary. The counts:
- events lost: checkout's commit acknowledged, the event never in the broker;
- events published twice: one event id stored twice in the stream (a relay whose marking as
  sent was lost publishes it again; the broker's duplicate window absorbs a repeat within two
  minutes, and the drill reports how many it absorbed);
- events published, then gone: in the broker, not on the new primary, so the consumer heard
  of an order that the database no longer has.
Without the broker extra, none is counted and the drill's output says so.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from .. import outbox
from ..databases import Database
from ..infra import broker
from ..infra.replica import Pair
from ..statements import run, run_one

OUTBOX_DB = "outbox"
COUNTS = ("outbox_lost", "outbox_twice", "outbox_gone")
LABELS = {
    "outbox_lost": "outbox events lost (acknowledged, never published)",
    "outbox_twice": "outbox events published twice (one event id stored twice)",
    "outbox_gone": "outbox events published, then gone",
}
NOT_COUNTED = (
    f"outbox events: not counted; they are counted when the broker extra is installed: {broker.EXTRA}"
)
COUNTED = (
    "outbox events: counted: checkout writes orders and their events on the primary until the "
    "kill (database outbox, its sequences moved with the epoch), and the library's relay forwards "
    "them to a NATS broker of the drill's own before and after the promotion"
)
RETRY_S = 0.1  # a writer or the relay whose server went away tries to connect again after this
SETTLE_S = 30.0  # after the drain, how long the relay gets to publish what the new primary holds


def allowed(config: str, count: str) -> bool:
    """Whether `config` may show a nonzero outbox `count`. A repeat beyond the broker's window
    is what at-least-once allows, everywhere. A synchronous replica has every acknowledged
    checkout (it commits with synchronous_commit on), and the relay cannot read an event it
    has not (a commit waiting for the standby is invisible to other sessions)."""
    return count == "outbox_twice" or not config.startswith("sync")


def counted() -> bool:
    return broker.available()


@dataclass
class OutboxTally:
    """What the drill's outbox saw: events acknowledged by checkout, stored in the broker,
    absorbed by its duplicate window, and applied by the consumer."""

    written: int = 0
    stored: int = 0
    absorbed: int = 0
    applied: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)


class DrillOutbox:
    """Checkout and the relay beside the drill's fleet, on one pair, with a broker in a
    folder of the drill's own; its block stops them and the broker and removes the folder
    however it ends."""

    def __init__(self, pair: Pair, server: Any, *, lease: float):
        self.pair = pair
        self.db = Database(OUTBOX_DB, pair.failover_dsn(OUTBOX_DB), server)
        self.lease = lease
        self.acked: list[str] = []  # event ids whose checkout commit returned
        self.stop_writing = threading.Event()
        self.threads: list[threading.Thread] = []
        self.store = Path(tempfile.mkdtemp(prefix="pgq-drill-nats-"))
        self.nats = broker.Broker(self.store)
        self.client: broker.Client | None = None
        self.relay: outbox.Relay | None = None

    def __enter__(self) -> DrillOutbox:
        try:
            self.client = broker.Client(self.nats.start().url, name="drill-relay")
            with self.pair.connect(self.pair.primary) as conn:
                run(conn, "admin/create_database", idents={"name": OUTBOX_DB})
            with self.pair.connect(self.pair.primary, OUTBOX_DB) as conn:
                run(conn, "schema")
                outbox.prepare_outbox(
                    conn, self.client, duplicate_window_s=outbox.JETSTREAM_DUPLICATE_WINDOW_S
                )
            self.relay = outbox.Relay(self.db, self.client, lease=self.lease)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        for target in (self._checkout, self._relay):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self.threads.append(thread)

    def _checkout(self) -> None:
        """Orders and their 'created' event, each in one transaction, until the kill."""
        n = 0
        while not self.stop_writing.is_set():
            with contextlib.suppress(psycopg.Error), self.db.connect(connect_timeout=2) as conn:
                while not self.stop_writing.is_set():
                    n += 1
                    with conn.transaction():
                        order = run_one(conn, "lab/place_order", {"email": f"d{n}@example.com", "total": 10})[
                            0
                        ]
                        job = outbox.write_event(conn, order, {"seq": 1, "event": "created"})
                        [(_, event_id)] = run(conn, "lab/event_ids", {"ids": [job]}).fetchall()
                    self.acked.append(str(event_id))
                    time.sleep(0.01)
            self.stop_writing.wait(RETRY_S)

    def _relay(self) -> None:
        """The relay, connecting again whenever its server goes away (libpq then finds the
        new primary, as the workers do)."""
        assert self.relay is not None
        while not self.relay.stop_event.is_set():
            with contextlib.suppress(psycopg.Error):
                self.relay.run()
            self.relay.stop_event.wait(RETRY_S)

    def settle(self) -> bool:
        """Wait until the new primary's outbox is all sent (the relay's lag is 0), then stop
        the relay: whether it got there."""
        deadline = time.monotonic() + SETTLE_S
        settled = False
        with contextlib.suppress(psycopg.Error), self.db.connect(connect_timeout=5) as conn:
            while time.monotonic() < deadline and not (settled := outbox.outbox_lag(conn)[0] == 0):
                time.sleep(0.1)
        self.stop()
        return settled

    def stop(self) -> None:
        self.stop_writing.set()
        if self.relay is not None:
            self.relay.stop_event.set()
        for thread in self.threads:
            thread.join(10)

    def tally(self) -> OutboxTally:
        """The counts, from checkout's notes, the stream, and the new primary's rows."""
        assert self.client is not None and self.relay is not None
        messages = self.client.read_all(outbox.STREAM, outbox.SUBJECTS[0])
        bodies = [json.loads(body) for _, _, body in messages]
        per_id = Counter(b["event_id"] for b in bodies)
        with self.pair.connect(self.pair.replica, OUTBOX_DB) as conn:
            rows = run(conn, "lab/event_ids", {"ids": [b["job_id"] for b in bodies]}).fetchall()
        kept = {str(event_id) for _, event_id in rows}
        consumer = outbox.OrderConsumer()
        for _, _, body in messages:
            consumer.take(body)
        lost = [e for e in self.acked if e not in per_id]
        twice = sorted(e for e, n in per_id.items() if n > 1)
        gone = sorted(e for e in per_id if e not in kept)
        tally = OutboxTally(
            written=len(self.acked),
            stored=len(messages),
            absorbed=self.relay.stats.deduplicated,
            applied=consumer.applied,
            counts={"outbox_lost": len(lost), "outbox_twice": len(twice), "outbox_gone": len(gone)},
        )
        for count, found in zip(COUNTS, (lost, twice, gone), strict=True):
            if found:
                tally.examples[count] = f"event {found[0]}"
        return tally

    def close(self) -> None:
        self.stop()
        if self.client is not None:
            self.client.close()
        self.nats.stop()
        shutil.rmtree(self.store, ignore_errors=True)
