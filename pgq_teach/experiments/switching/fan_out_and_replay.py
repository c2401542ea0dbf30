"""Lesson 11: what the broker gives that the table does not. Two consumer groups
each read every event of the stream, a new consumer replays it from the start;
two workers on the table each get their own jobs."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ... import checks, queue
from ...databases import Database
from ...guide import GuideFigure
from ...infra import broker
from ...outbox import STREAM, SUBJECTS
from ...statements import run
from ..results import Comparison, Result, finish
from .orders import GUIDE_OUTBOX


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


def fan_out(db: Database, *, table_jobs: int = 1000, nats: broker.Broker | None = None) -> FanOutResult:
    """Read the ORDERS stream (left by the outage lab) as two consumer groups and a
    replay; claim `table_jobs` jobs with two workers on the table."""
    checks.whole_number("table_jobs", table_jobs, 2, 100_000)
    nats = nats or broker.Broker()
    with broker.Client(nats.start().url, name="fan-out") as client:
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
    return finish(
        FanOutResult,
        db,
        events=events,
        billing=len(billing),
        analytics=len(analytics),
        replayed=len(replay),
        replay_in_order=[s for s, _, _ in replay] == sorted(s for s, _, _ in replay),
        table_jobs=table_jobs,
        table_worker_a=len(taken[0]),
        table_worker_b=len(taken[1]),
        table_both=len(set(taken[0]) & set(taken[1])),
    )
