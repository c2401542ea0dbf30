"""Lesson 11's drain rate: the learner's own (100,000 batched jobs), beside the
guide's "about 4 s", and why neither is a benchmark. Lesson 12's back-of-envelope
step starts from it."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ... import checks, measurements, queue
from ...databases import Database
from ...guide import GuideFigure, figure
from ...statements import run
from ..results import Comparison, Progress, Result, finish, guess_text, note, tell


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

    def report(self) -> list[str]:
        return [
            note(
                f"{self.completed:,} jobs claimed and completed in batches of {self.batch} by {self.workers} "
                f"threads: {self.elapsed_s:.2f} s, {self.jobs_per_s:,.0f} jobs/s" + self.stopped_note
            ),
            f"  your guess: {guess_text(self.guess, ' s')}",
            f"  the guide's rate: {self.guide_jobs_per_s:,.0f} jobs/s",
            *self.footer(),
        ]


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
    result = finish(
        DrainRate,
        db,
        jobs=jobs,
        batch=batch,
        workers=workers,
        elapsed_s=elapsed_s,
        completed=sum(done),
        status_counts=counts,
        guess=guess,
        stopped=stop,
    )
    if not result.stopped:  # lesson 12's back-of-envelope step starts from it
        measurements.record(measurements.DRAIN_JOBS_PER_S_11, round(result.jobs_per_s))
    return result
