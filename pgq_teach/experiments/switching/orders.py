"""What lesson 11's outbox labs share: the guide's advice they stand beside, and
checkout's side, `OrderDesk`, which writes order events in the outbox (the jobs
table) as the application would. The relay that forwards them is the library's
`pgq_teach.outbox`."""

from __future__ import annotations

import psycopg

from ...databases import Database
from ...outbox import write_event
from ...statements import run_one
from ..results import advice

GUIDE_OUTBOX = advice(
    "when to switch",
    "keep the transactional enqueue in Postgres and have a relay process forward jobs to the broker",
)
EVENTS = ("created", "paid", "shipped")  # an order's events, in the order checkout writes them


class OrderDesk:
    """Checkout's side: each step writes one order event in the outbox, in its own
    transaction, under the order's lock (`outbox.write_event`). A new order commits
    with its 'created' event; later steps add an open order's next event. `written`
    lists every committed event's job id."""

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
            self.write(conn, self.place(conn), 1)

    def place(self, conn: psycopg.Connection) -> int:
        """Save a new order (its events come after, under its lock): its id."""
        return int(run_one(conn, "lab/place_order", {"email": f"c{self.steps}@example.com", "total": 10})[0])

    def write(self, conn: psycopg.Connection, order_id: int, seq: int) -> None:
        payload = {"seq": seq, "event": EVENTS[seq - 1]}
        job_id = write_event(conn, order_id, payload, max_attempts=self.max_attempts)
        self.written.append(job_id)
        if seq < len(EVENTS):
            self.open.append((order_id, seq))
