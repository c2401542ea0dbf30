"""The load run: many workers, many jobs and a planned share of failing
handler calls; every job's end is known in advance and checked exactly."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .. import checks
from ..databases import Database
from .fleet import SHARED_INVARIANTS, Fleet, Progress, RunReport, broken, copy_verdict, verdict_lines
from .plan import planned_error, planned_result

_SHARED = ("duplicate_effects", "done_without_effect", "overwrites", "jobs_done_twice")
# What the load run must never see, beyond its plan, as (report field, what a non-zero count means).
_INVARIANTS = (
    ("calls_after_done", "handler call(s) started after their job was done"),
    ("fenced", "fenced completion(s) though no lease can have run out"),
    ("running_at_end", "job(s) still running at the end"),
    *SHARED_INVARIANTS,
)


@dataclass(kw_only=True)
class LoadReport(RunReport):
    """The load run: invariants from the database, timings for the record."""

    fail_rate: float
    max_attempts: int
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
        return self.jobs

    @property
    def violations(self) -> list[str]:
        v = []
        if self.done + self.dead != self.jobs:
            v.append(f"done {self.done} + dead {self.dead} != enqueued {self.jobs}")
        if self.dead_without_their_error:
            v.append(f"{self.dead_without_their_error} dead job(s) without the error of their last try")
        if self.not_as_planned:
            v.append(
                f"{self.not_as_planned} job(s) did not end as the failure plan dictates: "
                + "; ".join(self.examples[:3])
            )
        if self.calls != self.planned_calls:
            v.append(f"{self.calls} handler calls, the plan makes {self.planned_calls}")
        if self.failures != self.planned_failures:
            v.append(f"{self.failures} failures recorded, the plan makes {self.planned_failures}")
        return v + broken(self, _INVARIANTS)

    def summary(self) -> str:
        share = self.failures / self.calls if self.calls else 0.0
        lines = [
            f"load run on {self.server}",
            f"  {self.jobs:,} jobs, {self.workers} workers, {self.fail_rate:.0%} of handler calls planned "
            f"to raise, max_attempts {self.max_attempts}",
            f"  result: done {self.done:,} + dead {self.dead:,} = {self.done + self.dead:,} of {self.jobs:,} "
            f"enqueued (the plan: done {self.planned_done:,}, dead {self.planned_dead:,})",
            f"  handler calls {self.calls:,} (plan {self.planned_calls:,}), raised {self.failures:,} "
            f"({share:.1%}; plan {self.planned_failures:,})",
            f"  attempts over max_attempts {self.over_attempts}, dead jobs without their last error "
            f"{self.dead_without_their_error}, jobs not as planned {self.not_as_planned}, "
            f"calls after done {self.calls_after_done}, duplicate effects {self.duplicate_effects}",
            f"  every job tried once after {self.first_pass_seconds:.1f} s "
            f"({self.jobs / self.first_pass_seconds if self.first_pass_seconds else 0:,.0f} jobs/s); "
            f"drained in {self.elapsed:.1f} s (retries wait 20 s, then 40 s)",
        ]
        return "\n".join(lines + verdict_lines(self.stopped, self.violations))


def run_load(
    db: Database,
    *,
    jobs: int = 20_000,
    workers: int = 16,
    fail_rate: float = 0.1,
    max_attempts: int = 3,
    seed: int = 1,
    lease: float = 120.0,
    poll: float = 0.5,
    timeout: float = 900.0,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> LoadReport:
    """Drain `jobs` due jobs with `workers` worker processes while a planned
    `fail_rate` of handler calls raise; judge the result against the plan.
    The lease is long on purpose: no lease may run out, so every attempt
    comes from a planned failure. Resets the jobs table of `db`."""
    jobs = checks.whole_number("jobs", jobs, 1, 1_000_000)
    workers = checks.whole_number("workers", workers, 1, 64)
    max_attempts = checks.whole_number("max_attempts", max_attempts, 1, 20)
    seed = checks.whole_number("seed", seed, 0)
    fail_rate = checks.fraction("fail_rate", fail_rate)
    lease = checks.lease(lease).total_seconds()
    poll = checks.seconds("poll", poll, 0.01, 60)
    timeout = checks.seconds("timeout", timeout, 1, 86_400)
    stop = stop or threading.Event()

    report = LoadReport(
        server=db.server.line(), jobs=jobs, workers=workers, fail_rate=fail_rate, max_attempts=max_attempts
    )
    plan = {n: planned_result(seed, n, fail_rate, max_attempts) for n in range(1, jobs + 1)}
    report.planned_done = sum(1 for s, _ in plan.values() if s == "done")
    report.planned_dead = jobs - report.planned_done
    report.planned_calls = sum(a for _, a in plan.values())
    report.planned_failures = report.planned_calls - report.planned_done

    settings = {
        "lease": lease,
        "poll": poll,
        "batch": 10,  # so outcomes wait for their flush while workers run
        "sleep_ms": (0, 2),
        "fail_rate": fail_rate,
        "plan_seed": seed,
        "max_seconds": timeout + 60,
    }
    with Fleet(db, "load", settings) as fleet:
        fleet.seed(jobs, spread=0, max_attempts=max_attempts)
        fleet.start(workers)
        while not stop.is_set():
            fleet.replace_crashed()
            p = fleet.progress()
            if not report.first_pass_seconds and p["never_claimed"] == 0:
                report.first_pass_seconds = time.monotonic() - fleet.began
            if progress:
                progress(p["done"] + p["dead"], jobs)
            if p["done"] + p["dead"] >= jobs or time.monotonic() - fleet.began > timeout:
                break
            time.sleep(0.25)
        report.stopped = stop.is_set()
    report.elapsed, report.crashes = fleet.elapsed, fleet.crashes
    try:
        v = fleet.verdict()
        results = fleet.session.rows("lab/fault_job_results")
    finally:
        fleet.session.close()
    _judge(v, results, plan, report)
    return report


def _judge(
    v: dict[str, Any], results: list[tuple[Any, ...]], plan: dict[int, tuple[str, int]], report: LoadReport
) -> None:
    copy_verdict(report, v, ("done", "dead", "calls", "failures", "fenced", *_SHARED))
    report.running_at_end = v["running"]
    report.calls_after_done = v["calls_after_done"] + v["effects_after_done"]
    for n, status, attempts, _max, last_error in results:
        want = plan.get(n)
        if (status, attempts) != want:
            report.not_as_planned += 1
            report.examples.append(f"job n={n} ended {status} after {attempts}, planned {want}")
        if status == "dead" and last_error != f"RuntimeError: {planned_error(n, attempts)}":
            report.dead_without_their_error += 1
