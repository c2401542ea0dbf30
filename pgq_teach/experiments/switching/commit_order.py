"""Lesson 11's precondition for per-key order: the per-key claim keeps one order's
events in order only if they commit in id order, since its NOT EXISTS sees only
committed rows. `commit_race` writes two events of one order from two sessions, the
first left open while the second writes, and reads the claim's heads (rolled back):
once with plain enqueues, once through `outbox.write_event`, which locks the order's
row first. `CommitRace` and `CommitOrder` are plain records."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import psycopg

from ... import queue, tables
from ...databases import Database
from ...errors import SetupError
from ...outbox import OUTBOX_KIND, OutboxEvent, write_event
from ...statements import records, run, run_one

WAIT_S = 10.0  # how long the lab waits for the second writer to finish or be seen waiting
LEASE = "30 seconds"


@dataclass(frozen=True)
class CommitRace:
    """One race: the two events' ids (first drawn by the first writer), whether the second
    writer was blocked by the first, and the heads the per-key claim would take (by seq)
    while the first writer was still open and after both had committed."""

    writer: str
    first_id: int
    second_id: int
    second_waited: bool
    heads_while_open: list[int]
    heads_after: list[int]


@dataclass(frozen=True)
class CommitOrder:
    """Both races: plain enqueues, then write_event under the order's lock."""

    rows: list[CommitRace]

    def summary(self) -> str:
        def seqs(heads: list[int]) -> str:
            return ", ".join(f"seq {s}" for s in heads) or "none"

        return "\n".join(
            f"{r.writer}: ids {r.first_id} (seq 1, open) and {r.second_id} (seq 2); second writer "
            f"{'waited for the first' if r.second_waited else 'did not wait'}; claim's head while "
            f"seq 1 was open: {seqs(r.heads_while_open)}; after both committed: {seqs(r.heads_after)}"
            for r in self.rows
        )


def head_seqs(conn: psycopg.Connection) -> list[int]:
    """The seq of each event the per-key claim would take now: claimed, then rolled back."""
    params = {"kind": OUTBOX_KIND, "batch": 10, "lease": LEASE}
    with conn.transaction(force_rollback=True):
        heads = run(conn, "claim_in_key_order", params, row_factory=records(OutboxEvent)).fetchall()
    return sorted(int(e.payload["seq"]) for e in heads)


def blocked_by(conn: psycopg.Connection, pid: int) -> list[int]:
    return [int(r[0]) for r in run(conn, "migration_blockers", {"pid": pid})]


def commit_race(db: Database, *, locked: bool) -> CommitRace:
    """Session A writes seq 1 and stays open; session B writes seq 2 meanwhile."""
    with db.connection() as setup:
        run(setup, "lab/reset_jobs")
        run(setup, "outbox_key_index")
        order = int(run_one(setup, "lab/place_order", {"email": "race@example.com", "total": 10})[0])

    def write(conn: psycopg.Connection, seq: int) -> int:
        if locked:
            return write_event(conn, order, {"seq": seq})
        with conn.transaction():
            return queue.enqueue(conn, OUTBOX_KIND, {"order_id": order, "seq": seq}, notify=False)

    second: list[int] = []
    errors: list[BaseException] = []

    def write_second(conn: psycopg.Connection) -> None:
        try:
            second.append(write(conn, 2))
        except BaseException as exc:  # raised again below  # noqa: BLE001
            errors.append(exc)

    with db.connection() as a, db.connection() as b, db.connection() as relay:
        writer = threading.Thread(target=write_second, args=(b,), daemon=True)
        with a.transaction():
            first = write(a, 1)
            writer.start()
            waited = False
            deadline = time.monotonic() + WAIT_S
            while writer.is_alive() and not waited and time.monotonic() < deadline:
                waited = blocked_by(relay, b.info.backend_pid) == [a.info.backend_pid]
                time.sleep(0.01)
            heads_open = head_seqs(relay)
        writer.join(WAIT_S)
        if errors:
            raise errors[0]
        if not second:
            within = tables.duration(WAIT_S)
            raise SetupError(f"the second writer neither finished nor waited within {within}")
        heads_after = head_seqs(relay)
    return CommitRace(
        "write_event (order row locked)" if locked else "plain enqueue",
        first,
        second[0],
        waited,
        heads_open,
        heads_after,
    )


def commit_order(db: Database) -> CommitOrder:
    """The race twice: plain enqueues (the precondition broken), then write_event."""
    return CommitOrder([commit_race(db, locked=False), commit_race(db, locked=True)])
