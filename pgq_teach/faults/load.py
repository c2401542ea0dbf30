"""The load run: many workers, many jobs and a planned share of failing
handler calls; every job's end is known in advance and checked exactly."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..databases import Database
from ..errors import BadInput
from ..queue import _check_positive_int, as_lease
from .fleet import Progress, _admin, _check_seconds, _Pool, _prepare, _verdict_lines
from .plan import planned_error, planned_result


@dataclass
class LoadReport:
    """The load run: invariants from the database, timings for the record."""

    server: str
    jobs: int
    workers: int
    fail_rate: float
    max_attempts: int
    done: int = 0
    dead: int = 0
    planned_done: int = 0
    planned_dead: int = 0
    calls: int = 0
    planned_calls: int = 0
    failures: int = 0
    planned_failures: int = 0
    over_attempts: int = 0
    dead_without_their_error: int = 0
    not_as_planned: int = 0
    calls_after_done: int = 0
    duplicate_effects: int = 0
    done_without_effect: int = 0
    overwrites: int = 0
    jobs_done_twice: int = 0
    fenced: int = 0
    running_at_end: int = 0
    examples: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    first_pass_seconds: float = 0.0
    elapsed: float = 0.0
    stopped: bool = False
    verdict: dict = field(default_factory=dict)

    @property
    def enqueued(self) -> int:
        return self.jobs

    @property
    def violations(self) -> list[str]:
        v = []
        if self.done + self.dead != self.jobs:
            v.append(f"done {self.done} + dead {self.dead} != enqueued {self.jobs}")
        if self.over_attempts:
            v.append(f"{self.over_attempts} job(s), transition(s) or call(s) over max_attempts")
        if self.dead_without_their_error:
            v.append(f"{self.dead_without_their_error} dead job(s) without the error of their last try")
        if self.not_as_planned:
            v.append(f"{self.not_as_planned} job(s) did not end as the failure plan dictates: "
                     + "; ".join(self.examples[:3]))
        if self.calls != self.planned_calls:
            v.append(f"{self.calls} handler calls, the plan makes {self.planned_calls}")
        if self.failures != self.planned_failures:
            v.append(f"{self.failures} failures recorded, the plan makes {self.planned_failures}")
        if self.calls_after_done:
            v.append(f"{self.calls_after_done} handler call(s) started after their job was done")
        for name, text in (("duplicate_effects", "duplicate effect(s)"),
                           ("done_without_effect", "done job(s) without their effect"),
                           ("overwrites", "update(s) of a job already done or dead"),
                           ("jobs_done_twice", "job(s) done twice"),
                           ("fenced", "fenced completion(s) though no lease can have run out"),
                           ("running_at_end", "job(s) still running at the end")):
            if getattr(self, name):
                v.append(f"{getattr(self, name)} {text}")
        if self.crashes:
            v.append(f"{len(self.crashes)} worker process(es) crashed: {self.crashes[0]}")
        return v

    @property
    def ok(self) -> bool:
        return not self.violations and not self.stopped

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
        return "\n".join(lines + _verdict_lines(self.stopped, self.violations))


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
    jobs = _check_positive_int("jobs", jobs, 1, 1_000_000)
    workers = _check_positive_int("workers", workers, 1, 64)
    max_attempts = _check_positive_int("max_attempts", max_attempts, 1, 20)
    seed = _check_positive_int("seed", seed, 0)
    if isinstance(fail_rate, bool) or not isinstance(fail_rate, (int, float)) or not 0 <= fail_rate < 1:
        raise BadInput(f"fail_rate must be a fraction from 0 up to (not including) 1, got {fail_rate!r}")
    lease = as_lease(lease).total_seconds()
    poll = _check_seconds("poll", poll, 0.01, 60)
    timeout = _check_seconds("timeout", timeout, 1, 86_400)
    stop = stop or threading.Event()

    report = LoadReport(db.server.line(), jobs, workers, float(fail_rate), max_attempts)
    plan = {n: planned_result(seed, n, fail_rate, max_attempts) for n in range(1, jobs + 1)}
    report.planned_done = sum(1 for s, _ in plan.values() if s == "done")
    report.planned_dead = jobs - report.planned_done
    report.planned_calls = sum(a for _, a in plan.values())
    report.planned_failures = report.planned_calls - report.planned_done

    folder = Path(tempfile.mkdtemp(prefix="pgq-load-"))
    admin = _admin(db)
    pool = _Pool(db, folder, "load", {
        "lease": lease, "poll": poll, "batch": 10, "sleep_ms": (0, 2), "fail_rate": fail_rate,
        "plan_seed": seed, "max_seconds": timeout + 60})
    began = time.monotonic()
    try:
        _prepare(db, jobs, 0, max_attempts)
        began = time.monotonic()
        for _ in range(workers):
            pool.start()
        while not stop.is_set():
            for _ in range(pool.collect_crashes()):
                pool.start()
            p = admin.row("lab/fault_progress")
            if not report.first_pass_seconds and p["never_claimed"] == 0:
                report.first_pass_seconds = time.monotonic() - began
            if progress:
                progress(p["done"] + p["dead"], jobs)
            if p["done"] + p["dead"] >= jobs or time.monotonic() - began > timeout:
                break
            time.sleep(0.25)
        report.stopped = stop.is_set()
    finally:
        pool.stop_all()
        report.elapsed = time.monotonic() - began
        report.crashes = pool.crashes
        shutil.rmtree(folder, ignore_errors=True)
    try:
        v = admin.row("lab/fault_verdict")
        results = admin.rows("lab/fault_job_results")
    finally:
        admin.close()

    report.verdict = v
    report.done, report.dead, report.running_at_end = v["done"], v["dead"], v["running"]
    report.calls, report.failures, report.fenced = v["calls"], v["failures"], v["fenced"]
    report.calls_after_done = v["calls_after_done"] + v["effects_after_done"]
    report.over_attempts = v["over_attempts"] + v["transitions_over_attempts"] + v["calls_over_attempts"]
    for name in ("duplicate_effects", "done_without_effect", "overwrites", "jobs_done_twice"):
        setattr(report, name, v[name])
    for n, status, attempts, _max, last_error in results:
        want = plan.get(n)
        if (status, attempts) != want:
            report.not_as_planned += 1
            report.examples.append(f"job n={n} ended {status} after {attempts}, planned {want}")
        if status == "dead" and last_error != f"RuntimeError: {planned_error(n, attempts)}":
            report.dead_without_their_error += 1
    return report
