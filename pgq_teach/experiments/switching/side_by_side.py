"""Lesson 11: the same drain of N no-op jobs through the course's Worker on the
table and through a JetStream work queue, at each batch size (docs/broker-comparison.md).
`DrainRow` is one drain, a plain record."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ... import checks, queue, tables
from ...databases import Database
from ...guide import GuideFigure, figure
from ...infra import broker
from ...statements import run
from ...worker import Worker
from ..results import Comparison, Progress, Result, finish, guess_text, tell


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

    def report(self) -> list[str]:
        return [
            *self.table_markdown().splitlines(),
            f"your guess for the table at batch 100: {guess_text(self.guess, ' jobs/s')}",
            *self.footer(),
        ]

    def notes(self) -> list[str]:
        """Each drain's pickup times and what it left (the table has its rate), then the guide."""
        return [
            f"{r.system}, batch {r.batch}: pickup p50 {r.pickup_p50_ms:,.0f} ms, "
            f"p99 {r.pickup_p99_ms:,.0f} ms; {tables.count(r.left, 'job')} left"
            for r in self.rows
        ] + super().notes()


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
    nats: broker.Broker | None = None,
) -> SideBySide:
    """Drain `jobs` no-op jobs, all waiting at the start, with one consumer each way and
    each batch size: the Worker on the table, and a pull consumer with explicit acks on a
    JetStream work-queue stream. Pickup: seconds from the drain's start to a job's handler."""
    checks.whole_number("jobs", jobs, 10, 200_000)
    for b in batches:
        checks.whole_number("batch", b, 1, queue.MAX_BATCH)
    nats = nats or broker.Broker()
    stop = stop or threading.Event()
    rows: list[DrainRow] = []
    with broker.Client(nats.start().url, name="drain") as client:
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
    return finish(SideBySide, db, rows=rows, guess=guess, stopped=stop)


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
