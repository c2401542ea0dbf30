"""Lesson 11's outage lab on the real broker (NATS JetStream): orders keep coming
while the broker is SIGKILLed and started again, and the library's `Relay` pauses
and hands its batches back without spending tries. A relay that dies after
publishing (its `after_publish` raises `RelayCrashed`) adds duplicates for the
dedup window to remove."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ... import charts, checks, queue, tables
from ...databases import Database
from ...guide import GuideFigure
from ...infra import broker
from ...outbox import (
    JETSTREAM_DUPLICATE_WINDOW_S,
    OUTBOX_KIND,
    STREAM,
    SUBJECTS,
    OrderConsumer,
    Relay,
    outbox_lag,
    prepare_outbox,
)
from ...statements import run
from ..results import Comparison, Progress, Result, finish, guess_text, note, tell
from .orders import GUIDE_OUTBOX, OrderDesk

CRASHED_RELAY_LEASE_S = 0.5  # the outage lab's crashed relay, so the lab need not wait 30 s
# After Stop the relay gets this long to catch up, not the whole drain_timeout_s: a learner
# who presses Stop waits for the lab, and what is still unsent is counted as such.
STOPPED_DRAIN_S = 5.0


class RelayCrashed(Exception):
    """The outage lab's relay died after the broker acked `published` events,
    before it marked them sent."""

    def __init__(self, published: int):
        super().__init__(f"died with {tables.count(published, 'event')} published, none marked sent")
        self.published = published


def crash_after_publish(events: Sequence[queue.Job]) -> None:
    """A relay's `after_publish` that dies there: the events are in the broker, and the
    table still holds them claimed until their lease runs out and the reaper hands them back."""
    raise RelayCrashed(len(events))


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
    unsent: int  # events still in the outbox at the end (after Stop: not lost, not yet sent)
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
            ("events lost", None, self.lost_cell, 0),
            ("events out of order per order", None, self.out_of_order, 0),
            ("duplicate publishes the dedup window removed", None, self.deduplicated, None),
            ("duplicates the consumer's idempotency absorbed", None, self.duplicates_absorbed, None),
        ]

    @property
    def lost_cell(self) -> int | str:
        """The lost count, or why there is none: after Stop, an event still in the outbox
        may be one the broker also holds (a dead relay's batch), so no count is exact."""
        if self.stopped and self.unsent:
            return f"not judged: Stop came with {tables.count(self.unsent, 'event')} still in the outbox"
        return self.lost

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
            refs=[
                charts.Reference(
                    f"the outage, {self.outage_s:g} s",
                    self.outage_s,
                    "the outage's length, where the lag should peak",
                )
            ],
            tooltip=["broker:N"],
        )

    def report(self) -> list[str]:
        lines = [
            f"broker killed (SIGKILL, pid {self.killed_pid}) for {self.outage_s:g} s while orders kept "
            f"coming; the relay's whole retry schedule at max_attempts={self.max_attempts} is "
            f"{self.retry_schedule_s:g} s",
            f"outbox lag: peak {self.peak_lag_s:.1f} s, at the end {self.final_lag_s:.1f} s "
            f"(your guess for the peak: {guess_text(self.guess, ' s')})",
            f"events: {self.events_written} written, {self.in_broker} in the broker, "
            f"{self.unsent} still in the outbox, lost: {self.lost_cell}, "
            f"{self.dead} dead, {self.out_of_order} out of order per order",
            f"relay: paused {tables.count(self.pauses, 'time')}, handed back "
            f"{tables.count(self.handed_back, 'claimed event')} unsent "
            "(no try spent)",
            f"duplicates: {self.published_uncompleted} published by a relay that died before marking "
            f"them sent; the dedup window removed {self.deduplicated} duplicate publishes; "
            f"the stream holds {self.stream_messages} messages; "
            f"the consumer absorbed {self.duplicates_absorbed}",
        ]
        # the lag line is the table's first row (its end is the lag chart's last point)
        return [line if n == 1 else note(line) for n, line in enumerate(lines)] + self.footer()


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
    nats: broker.Broker | None = None,
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
    nats = nats or broker.Broker()
    nats.start()
    stop = stop or threading.Event()
    total_s = before_s + outage_s + after_s
    with broker.Client(nats.status().url, name="relay") as client, db.connection() as conn:
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
                    killed_pid = nats.kill()
                    up = False
                if not up and now >= before_s + outage_s:
                    nats.start()
                    up = True
                    restarted_s = time.monotonic() - began
                desk.step(conn)
                if now >= next_sample:
                    lag.append((round(now, 2), outbox_lag(conn)[1], up))
                    next_sample = now + 0.5
                    tell(progress, int(now), int(total_s))
                time.sleep(order_every_s)
            if not up:  # Stop during the outage: the broker comes back now, for the relay to catch up
                nats.start()
                up = True
                restarted_s = time.monotonic() - began
            deadline = time.monotonic() + (STOPPED_DRAIN_S if stop.is_set() else drain_timeout_s)
            while outbox_lag(conn)[0] and time.monotonic() < deadline and not errors:
                lag.append((round(time.monotonic() - began, 2), outbox_lag(conn)[1], True))
                time.sleep(0.25)
            lag.append((round(time.monotonic() - began, 2), outbox_lag(conn)[1], True))
        finally:
            relay.stop_event.set()
            worker.join(30)
            if not up:
                nats.start()
        if errors:
            raise errors[0]
        counts = queue.status_counts(conn)
        unsent = outbox_lag(conn)[0]
        tries = dict(run(conn, "lab/attempts_spent", {"kind": OUTBOX_KIND}).fetchall())
        stored = client.stream_messages(STREAM)
        messages = client.read_all(
            STREAM, SUBJECTS[0], consumer="shipping", crash_before_ack=crashed_consumer
        )
    consumer = OrderConsumer()
    for _, _, body in messages:
        consumer.take(body)
    in_broker = {json.loads(body)["job_id"] for _, _, body in messages}
    return finish(
        OutageResult,
        db,
        outage_s=outage_s,
        retry_schedule_s=retry_schedule_s(max_attempts),
        max_attempts=max_attempts,
        events_written=len(desk.written),
        in_broker=len(in_broker),
        stream_messages=stored,
        lost=len(set(desk.written) - in_broker),
        dead=counts.get("dead", 0),
        unsent=unsent,
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
        stopped=stop,
    )
