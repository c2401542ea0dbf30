"""Pickup latency (guide #13): the library's Worker, idle, and jobs enqueued at
random moments with and without NOTIFY, the poll scaled down."""

from __future__ import annotations

import random
import statistics
import threading
import time
from dataclasses import dataclass, field

from ... import charts, checks, measurements, queue
from ...databases import Database
from ...guide import GuideFigure, figure
from ...statements import run
from ...worker import Worker
from ..results import Comparison, Progress, Result, finish, guess_text, note, tell
from .listening import KIND


@dataclass(frozen=True)
class Pickup:
    job_id: int
    notify: bool
    latency_s: float
    # how long after the worker's previous claim this job was enqueued: a job without NOTIFY
    # should wait out the rest of the poll, about poll_s - after_claim_s
    after_claim_s: float = 0.0
    # what ended the worker's wait between the enqueue and the claim, from its report's
    # counters: "notification", "poll", "both" or "neither" (a claim round still going)
    woken_by: str = "neither"


def what_woke(before: tuple[int, int], then: tuple[int, int]) -> str:
    """What ended the worker's wait between two readings of its (wake-ups, polls) counters."""
    woken, polled = then[0] > before[0], then[1] > before[1]
    return {(True, False): "notification", (False, True): "poll", (True, True): "both"}.get(
        (woken, polled), "neither"
    )


@dataclass(kw_only=True)
class LatencyResult(Result):
    """Pickup latency; the guess is the median without NOTIFY, in ms."""

    poll_s: float
    pickups: list[Pickup]
    guide: GuideFigure = field(default_factory=lambda: figure(13))

    def latencies(self, notify: bool) -> list[float]:
        return [p.latency_s for p in self.pickups if p.notify == notify]

    def woken_by(self, notify: bool) -> list[str]:
        """What ended the worker's wait before each job's claim, for the jobs with or without NOTIFY."""
        return [p.woken_by for p in self.pickups if p.notify == notify]

    def off_the_poll_s(self) -> list[float]:
        """For each job without NOTIFY, how far its latency was from the worker's
        next poll (the rest of the cycle, poll_s - after_claim_s), or from the
        one after, if the job landed just as a poll went by."""
        return [
            min(abs(p.latency_s - rest), abs(p.latency_s - rest - self.poll_s))
            for p in self.pickups
            if not p.notify
            for rest in [self.poll_s - p.after_claim_s]
        ]

    def median_ms(self, notify: bool) -> float | None:
        values = self.latencies(notify)
        return statistics.median(values) * 1000 if values else None

    def max_ms(self, notify: bool) -> float | None:
        values = self.latencies(notify)
        return max(values) * 1000 if values else None

    def line(self, label: str, notify: bool) -> str:
        median, most = self.median_ms(notify), self.max_ms(notify)
        if median is None or most is None:
            return f"  {label} no jobs"
        return (
            f"  {label} median {median:,.1f} ms, max {most:,.1f} ms over {len(self.latencies(notify))} jobs"
        )

    @property
    def scale(self) -> float:
        """How much shorter our poll is than the guide's 5 s."""
        return self.guide.values["poll_s"] / self.poll_s

    def comparison(self) -> list[Comparison]:
        g = self.guide.values
        return [
            ("with NOTIFY, median ms", None, self.median_ms(True), f"within {g['notify_s'] * 1000:.0f}"),
            (
                "without NOTIFY, median ms",
                self.guess_cell,
                self.median_ms(False),
                f"up to the poll: {g['poll_s']:g} s (here {self.poll_s:g} s)",
            ),
            ("without NOTIFY, longest ms", None, self.max_ms(False), None),
        ]

    def report(self) -> list[str]:
        return [  # each line's max and count: the table has the medians
            note(
                f"pickup latency, one idle Worker, poll {self.poll_s:g} s "
                f"(the guide's 5 s scaled by 1/{self.scale:g})" + self.stopped_note
            ),
            note(self.line("with NOTIFY:   ", True)),
            note(self.line("without NOTIFY:", False)),
            note(f"  your guess, the median without NOTIFY: {guess_text(self.guess, ' ms')}"),
            *self.footer(),
        ]

    def chart(self) -> charts.Chart:
        """Each job's pickup latency, with and without NOTIFY, beside the poll interval."""
        rows = [
            {
                "job": f"job {p.job_id}, {'with' if p.notify else 'without'} NOTIFY",
                "latency": p.latency_s * 1000,
                "wake-up": "with NOTIFY" if p.notify else "without NOTIFY (polling)",
            }
            for p in sorted(self.pickups, key=lambda p: (not p.notify, p.job_id))
        ]
        return charts.bars(
            rows,
            label="job",
            value="latency",
            colour="wake-up",
            fmt=",.1f",
            heading="Pickup latency: from commit to the worker's claim",
            value_axis=charts.axis("latency", "ms"),
            refs=[charts.Reference(f"poll every {self.poll_s:g} s", self.poll_s * 1000, "the poll interval")],
        )


def settle(worker: Worker, empties: int, stop: threading.Event, timeout: float) -> None:
    """Wait until `worker` has claimed again and found nothing (more than `empties` empty
    claims): it then waits for its next poll or notification. Why: a worker whose batch was full
    claims again as soon as its executor is free, so on a busy machine an executor that finished
    late would claim the next job at once, neither polled nor woken."""
    deadline = time.monotonic() + timeout
    while worker.report.empty_claims <= empties and time.monotonic() < deadline:
        if stop.wait(0.005):
            return


def pickup_latency(
    db: Database,
    *,
    jobs: int = 12,
    poll_s: float = 1.0,
    seed: int | None = None,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> LatencyResult:
    """Start one library Worker (poll `poll_s`), let it go idle, then enqueue
    `jobs` jobs one at a time at random moments, alternately with and
    without NOTIFY; each job's latency runs from its commit to its claim.
    The guess is the median latency without NOTIFY, in ms."""
    checks.whole_number("jobs", jobs, 2, 100)
    checks.seconds("poll_s", poll_s, 0.1, 10)
    stop = stop or threading.Event()
    chance = random.Random(seed)
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")
    claimed: dict[int, float] = {}
    counted_then: dict[int, tuple[int, int]] = {}  # the worker's wake-ups and polls at each claim
    # the worker's empty claims when it claimed each job: its claim round has ended by then,
    # so a count above this one means it looked again after the job and found nothing
    empties_then: dict[int, int] = {}
    picked = threading.Condition()

    def on_event(name: str, job) -> None:
        if name == "claimed":
            with picked:
                claimed[job.id] = time.monotonic()
                empties_then[job.id] = worker.report.empty_claims
                counted_then[job.id] = (worker.report.wakeups, worker.report.polls)
                picked.notify_all()

    worker = Worker(db.dsn, {KIND: lambda job: None}, poll=poll_s, on_event=on_event)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    pickups: list[Pickup] = []
    last_claim: float | None = None  # when the worker claimed the job before
    try:
        settle(worker, 0, stop, poll_s * 3 + 5)  # the first job finds it listening, its queue empty
        with db.connection() as conn:
            for n in range(jobs):
                # a random moment within the poll cycle, so silent jobs wait anything up to the poll
                pause = chance.uniform(0.05, poll_s)
                if stop.wait(pause):
                    break
                notify = n % 2 == 0
                counted_before = (worker.report.wakeups, worker.report.polls)
                job_id = queue.enqueue(conn, KIND, {"n": n}, notify=notify)
                committed = time.monotonic()
                with picked:

                    def seen(job_id: int = job_id) -> bool:
                        return job_id in claimed or stop.is_set()

                    picked.wait_for(seen, timeout=poll_s * 3 + 5)
                if job_id not in claimed:
                    if stop.is_set():
                        break
                    raise RuntimeError(f"the worker did not claim job {job_id} within {poll_s * 3 + 5:g} s")
                # The time since the last claim as it passed, not the pause asked for: on a busy
                # machine this thread wakes late from both waits, and the job then lands later in
                # the worker's poll cycle than the pause says.
                after_claim = pause if last_claim is None else committed - last_claim
                woken_by = what_woke(counted_before, counted_then[job_id])
                pickups.append(Pickup(job_id, notify, claimed[job_id] - committed, after_claim, woken_by))
                last_claim = claimed[job_id]
                settle(worker, empties_then[job_id], stop, poll_s * 3 + 5)
                tell(progress, n + 1, jobs)
    finally:
        worker.stop()
        thread.join(timeout=poll_s + 5)
    result = finish(
        LatencyResult, db, poll_s=poll_s, pickups=pickups, stopped=len(pickups) < jobs, guess=guess
    )
    median = result.median_ms(True)
    if not result.stopped and median is not None:  # lesson 12 quotes it
        measurements.record(measurements.NOTIFY_MS, round(median, 1))
    return result
