"""The alert that retries hid (lesson 10c): `jobs` invoices drained by a real Worker, `late` of
which fail their first try (a partner's hiccup, spread out among the others) and are
retried by the kind's policy in job_kinds, `backoff_base_s` x 2^1 later. Nothing dies, so
the dead-jobs alert stays quiet; the enqueue-to-done p99 per kind (sql/stats_kinds.sql,
through `kinds.stats`: from `enqueued_at`, which no retry moves, to `finished_at`) shows
the late ones. p50 and p99 are
the server's (percentile_cont), never worked out in Python.

The knobs that make the result: `backoff_base_s` (how late a retried invoice is: with the
cap at 24 h and 25 tries, days), and `late` against `jobs` (p99 sees them only while they are
more than 1 % of the window's jobs; p50 while they are half). The guide's alerts count dead
jobs and the oldest due job's wait; it has no enqueue time, so no enqueue-to-done figure.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from .. import checks, kinds, measurements, queue, seeding, tables
from ..databases import Database
from ..guide import GuideFigure
from ..worker import Worker
from .results import Comparison, Progress, Result, advice, finish, note, tell
from .timeouts import POLL_S, running, wait_until

KIND = "invoice"
BATCH = (
    20  # jobs per claim: the on-time invoices are done in a fraction of the backoff, even on a busy machine
)
WINDOW_S = 900.0  # the stats' window: every job of the lab finished inside it
GUIDE_DEAD_JOBS = advice("monitoring", "alert on dead jobs and on the oldest due job's wait; no enqueue time")


@dataclass(kw_only=True)
class LateResult(Result):
    jobs: int
    late: int
    backoff_base_s: float
    done: int  # from the server's stats, over the window
    dead: int
    done_p50_s: float
    done_p99_s: float
    failure_rate: float
    guide: GuideFigure = field(default_factory=lambda: GUIDE_DEAD_JOBS)

    @property
    def first_retry_s(self) -> float:
        """How long a job failed once waits before its retry: base x 2^1."""
        return self.backoff_base_s * 2

    def quoted(self) -> dict[str, float]:
        """The figures the interview quotes, with the knobs that made them."""
        return {
            "jobs": self.jobs,
            "late": self.late,
            "first_retry_s": self.first_retry_s,
            "dead": self.dead,
            "done_p50_s": self.done_p50_s,
            "done_p99_s": self.done_p99_s,
        }

    def comparison(self) -> list[Comparison]:
        return [
            ("dead jobs (the dead-jobs alert)", "–", self.dead, "–"),
            ("enqueue-to-done p50", "–", tables.duration(self.done_p50_s), "–"),
            ("enqueue-to-done p99", self.guess_cell, tables.duration(self.done_p99_s), "–"),
            ("failed tries per try", "–", f"{self.failure_rate:.1%}", "–"),
        ]

    def report(self) -> list[str]:
        lines = [
            f"{tables.count(self.jobs, 'invoice')}, {self.late} failing their first try, retried "
            f"{tables.duration(self.first_retry_s)} later (backoff_base_s {self.backoff_base_s:g}):"
            + self.stopped_note,
            f"  the server's stats: {self.done:,} done, {self.dead} dead; enqueue-to-done "
            f"p50 {tables.duration(self.done_p50_s)}, p99 {tables.duration(self.done_p99_s)}; "
            f"{self.failure_rate:.1%} of tries failed",
        ]
        return [note(line) for line in lines] + self.footer()


def late_invoices(
    db: Database,
    *,
    jobs: int = 200,
    late: int = 5,
    backoff_base_s: float = 2.0,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> LateResult:
    """Drain the invoices, the `late` ones failing once; then read the kind's stats."""
    jobs = checks.whole_number("jobs", jobs, 1, 100_000)
    late = checks.whole_number("late", late, 0, jobs)
    backoff_base_s = checks.seconds("backoff_base_s", backoff_base_s, 0.1, 60.0)
    with db.connect() as conn:
        seeding.reset_jobs(conn)
        kinds.set_policy(conn, KIND, backoff_base_s=backoff_base_s, backoff_cap_s=backoff_base_s * 64)
        # The hiccups spread out, successes between them: five failures in a row would pause the kind.
        step = jobs // late if late else jobs + 1
        queue.enqueue_many(conn, KIND, [{"n": n, "hiccup": n % step == step - 1} for n in range(jobs)])
        failed: set[int] = set()

        def send(job: queue.Job) -> None:
            if job.payload["hiccup"] and job.id not in failed:
                failed.add(job.id)  # a set.add is atomic in CPython: executors need no lock for it
                raise ConnectionError("the partner timed out")

        with running(Worker(db.dsn, {KIND: send}, batch=BATCH, poll=POLL_S)):
            wait_until(lambda: queue.status_counts(conn).get("done", 0) == jobs, "every invoice to be done")
        tell(progress, 1, 1)
        [row] = [s for s in kinds.stats(conn, WINDOW_S) if s.kind == KIND]
    result = finish(
        LateResult,
        db,
        guess=guess,
        stopped=stop or False,
        jobs=jobs,
        late=late,
        backoff_base_s=backoff_base_s,
        done=row.done,
        dead=row.dead,
        done_p50_s=row.done_p50.total_seconds() if row.done_p50 else 0.0,
        done_p99_s=row.done_p99.total_seconds() if row.done_p99 else 0.0,
        failure_rate=row.failure_rate or 0.0,
    )
    if not result.stopped:
        measurements.record(measurements.LATE_INVOICES_10C, result.quoted())
    return result
