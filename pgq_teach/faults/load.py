"""The load run: many workers, many jobs and a planned share of failing
handler calls; every job's end is known in advance and checked exactly."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .. import tables
from ..databases import Database
from ..experiments.results import Progress
from .fleet import SHARED_INVARIANTS, Fleet, RunReport, broken, copy_verdict
from .plan import planned_error, planned_result
from .settings import LoadSettings

_SHARED = ("duplicate_effects", "done_without_effect", "overwrites", "jobs_done_twice")
# What the load run must never see, beyond its plan, as (report field, what a count of one
# means, what a larger count means).
_INVARIANTS = (
    ("calls_after_done", "handler call started after its job was done",
     "handler calls started after their job was done"),
    ("fenced", "fenced completion though no lease can have run out",
     "fenced completions though no lease can have run out"),
    ("running_at_end", "job still running at the end", "jobs still running at the end"),
    *SHARED_INVARIANTS,
)  # fmt: skip


@dataclass(kw_only=True)
class LoadReport(RunReport):
    """The load run: invariants from the database, timings for the record."""

    settings: LoadSettings
    planned_done: int = 0
    planned_dead: int = 0
    planned_calls: int = 0
    failures: int = 0
    planned_failures: int = 0
    dead_without_their_error: int = 0
    not_as_planned: int = 0
    examples: list[str] = field(default_factory=list)
    first_pass_seconds: float = 0.0

    @property
    def enqueued(self) -> int:
        return self.settings.jobs

    @property
    def violations(self) -> list[str]:
        found = []
        if self.done + self.dead != self.enqueued:
            found.append(f"done {self.done} + dead {self.dead} != enqueued {self.enqueued}")
        if self.dead_without_their_error:
            one = "dead job without the error of its last try"
            many = "dead jobs without the error of their last try"
            found.append(tables.count(self.dead_without_their_error, one, many))
        if self.not_as_planned:
            found.append(
                f"{tables.count(self.not_as_planned, 'job')} did not end as the failure plan dictates: "
                + "; ".join(self.examples[:3])
            )
        if self.calls != self.planned_calls:
            found.append(f"{tables.count(self.calls, 'handler call')}, the plan makes {self.planned_calls:,}")
        if self.failures != self.planned_failures:
            planned = f"the plan makes {self.planned_failures:,}"
            found.append(f"{tables.count(self.failures, 'failure')} recorded, {planned}")
        return found + broken(self, _INVARIANTS)

    def lines(self) -> list[str]:
        share = self.failures / self.calls if self.calls else 0.0
        s = self.settings
        return [
            f"load run on {self.server}",
            f"  {tables.count(s.jobs, 'job')}, {tables.count(s.workers, 'worker')}, {s.fail_rate:.0%} "
            "of handler calls planned "
            f"to raise, max_attempts {s.max_attempts}",
            f"  result: done {self.done:,} + dead {self.dead:,} = {self.done + self.dead:,} of {s.jobs:,} "
            f"enqueued (the plan: done {self.planned_done:,}, dead {self.planned_dead:,})",
            f"  handler calls {self.calls:,} (plan {self.planned_calls:,}), raised {self.failures:,} "
            f"({share:.1%}; plan {self.planned_failures:,})",
            f"  attempts over max_attempts {self.over_attempts}, dead jobs without their last error "
            f"{self.dead_without_their_error}, jobs not as planned {self.not_as_planned}, "
            f"calls after done {self.calls_after_done}, duplicate effects {self.duplicate_effects}",
            f"  every job tried once after {self.first_pass_seconds:.1f} s "
            f"({s.jobs / self.first_pass_seconds if self.first_pass_seconds else 0:,.0f} jobs/s); "
            f"drained in {self.elapsed:.1f} s ({BACKOFF_SKIPPED if s.skip_backoff else BACKOFF_WAITED})",
        ]


BACKOFF_WAITED = "retries wait 20 s, then 40 s"
BACKOFF_SKIPPED = "retries made due at once: skip_backoff"


def run_load(
    db: Database,
    settings: LoadSettings | None = None,
    *,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> LoadReport:
    """Drain the jobs, all due at once, with worker processes while a
    planned share of handler calls raise; judge the result against the plan
    (see LoadSettings; its defaults when None). Resets the jobs table of `db`."""
    s = settings or LoadSettings()
    stop = stop or threading.Event()
    report = LoadReport(server=db.server.line(), settings=s)
    plan = {n: planned_result(s.seed, n, s.fail_rate, s.max_attempts) for n in range(1, s.jobs + 1)}
    report.planned_done = sum(1 for status, _ in plan.values() if status == "done")
    report.planned_dead = s.jobs - report.planned_done
    report.planned_calls = sum(a for _, a in plan.values())
    report.planned_failures = report.planned_calls - report.planned_done
    with Fleet(db, s) as fleet:
        fleet.seed()
        fleet.start()
        while not stop.is_set():
            fleet.replace_crashed()
            p = fleet.progress()
            if not report.first_pass_seconds and p["never_claimed"] == 0:
                report.first_pass_seconds = time.monotonic() - fleet.began
            if progress:
                progress(p["done"] + p["dead"], s.jobs)
            if p["done"] + p["dead"] >= s.jobs or time.monotonic() - fleet.began > s.drain_timeout:
                break
            if s.skip_backoff:
                fleet.session.rows("lab/make_all_due")
            time.sleep(0.25)
        report.stopped = stop.is_set()
    report.elapsed, report.crashes = fleet.elapsed, fleet.crashes
    try:
        verdict = fleet.verdict()
        results = fleet.session.rows("lab/fault_job_results")
    finally:
        fleet.session.close()
    _judge(verdict, results, plan, report)
    return report


def _judge(
    verdict: dict[str, Any],
    results: list[tuple[Any, ...]],
    plan: dict[int, tuple[str, int]],
    report: LoadReport,
) -> None:
    copy_verdict(report, verdict, ("done", "dead", "calls", "failures", "fenced", *_SHARED))
    report.running_at_end = verdict["running"]
    report.calls_after_done = verdict["calls_after_done"] + verdict["effects_after_done"]
    for n, status, attempts, _max, last_error in results:
        want = plan.get(n)
        if (status, attempts) != want:
            report.not_as_planned += 1
            report.examples.append(f"job n={n} ended {status} after {attempts}, planned {want}")
        if status == "dead" and last_error != f"RuntimeError: {planned_error(n, attempts)}":
            report.dead_without_their_error += 1
