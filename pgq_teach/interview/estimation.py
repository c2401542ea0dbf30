"""The estimate: a load worked in one unit system (commits/s, row writes/s, WAL
bytes/s, storage/day) and set against what the learner's own server measured for the
same batch size (`measure_capacity`, recorded as `measurements.CAPACITY_12`), with
headroom. Every quoted server figure comes from the measurement store, with its lesson
and time (`quote`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .. import measurements
from ..databases import Database
from ..errors import BadInput
from ..experiments import capacity
from ..experiments.results import Comparison, Result, guess_text
from ..guide import GuideFigure, figure
from .catalog import scenario_named

HEADROOM = 0.5  # the queue may use at most half of what one session measured: the store needs the rest
ROW_WRITES_PER_JOB = 4  # insert, claim, completion, cleanup's delete
DEAD_VERSIONS_PER_JOB = 3  # the claim's, the completion's and the delete's old versions


def percent(share: float) -> str:
    """A share as a percentage; under 1 % with one decimal, so a small share never reads 0 %."""
    return f"{share:.1%}" if 0 < share < 0.01 else f"{share:.0%}"


def fmt(value: float) -> str:
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.2f}" if abs(value) < 10 else f"{value:,.1f}"


# --- the learner's measurements ---------------------------------------------------


@dataclass(frozen=True)
class Quote:
    """A stored measurement ready to speak: its value, unit, and where and when it was taken."""

    value: Any
    unit: str
    lesson: str
    at: str

    @property
    def source(self) -> str:
        return f"measured in lesson {self.lesson} at {self.at}"


def quote(which: measurements.Measurement) -> Quote | None:
    """The stored run of `which`, or None if its lesson has not run on this machine."""
    found = measurements.read(which)
    if found is None or found.get("value") is None:
        return None
    return Quote(
        found["value"], found.get("unit") or which.unit, which.lesson, found.get("at", "time unknown")
    )


def drain_quote() -> Quote | None:
    """Lesson 11's drain rate, exactly as lesson 11 stored it."""
    return quote(measurements.DRAIN_JOBS_PER_S_11)


def measure_capacity(db: Database, *, guess: float | None = None, **kwargs: Any) -> capacity.Capacity:
    """Run the capacity experiment on `db` and keep it in the measurement store,
    where the estimate reads it."""
    result = capacity.measure(db, guess=guess, **kwargs)
    if not result.stopped:
        measurements.record(measurements.CAPACITY_12, result.as_record())
    return result


@dataclass(frozen=True)
class Measured:
    """What the server measured at one batch size, one session (see `experiments.capacity`)."""

    batch: int
    commits_per_s: float
    wal_bytes_per_s: float
    wal_bytes_per_job: float
    insert_wal_bytes_per_job: float
    bytes_per_job: float
    source: str


def measured_at(batch: int) -> Measured:
    """The stored capacity run at `batch`; BadInput if lesson 12 has not measured that batch."""
    q = quote(measurements.CAPACITY_12)
    if q is None:
        raise BadInput("no capacity measured yet: run lesson 12's capacity cell (interview.measure_capacity)")
    runs = q.value.get("runs", {})
    if str(batch) not in runs:
        raise BadInput(f"no capacity measured at batch {batch}; measured at {', '.join(runs)}")
    r = runs[str(batch)]
    return Measured(
        batch,
        float(r["commits_per_s"]),
        float(r["wal_bytes_per_s"]),
        float(r["wal_bytes_per_job"]),
        float(r["insert_wal_bytes_per_job"]),
        float(q.value["bytes_per_job"]),
        f"{q.source}, one session, synchronous_commit={q.value.get('synchronous_commit')}",
    )


# --- the estimate ----------------------------------------------------------------


@dataclass(kw_only=True)
class Estimate(Result):
    """A load set against measured capacity at the same batch size, in one unit system.

    Commits: one claim and one batched completion per batch (the enqueue rides the
    order's own commit). Row writes: insert, claim, completion, delete. WAL: the
    measured bytes per job of the claim and completion plus the insert's. The guess
    is the learner's commits a second at peak."""

    jobs_per_s: float
    avg_jobs_per_s: float
    batch: int
    work_ms: float
    keep_minutes: float
    measured: Measured
    workers: int
    commits_per_s: float
    row_writes_per_s: float
    dead_per_s: float
    wal_bytes_per_s: float
    storage_bytes_per_day: float
    rows_kept: float
    autovacuum_trigger_rows: float
    commit_share: float
    wal_share: float
    verdict: str
    server_version: str = ""
    server_major: int = 0
    guide: GuideFigure = field(default_factory=lambda: figure(19))

    def comparison(self) -> list[Comparison]:
        return [
            ("commits/s at peak", self.guess_cell, self.commits_per_s, None),
            (f"measured commits/s at batch {self.batch}", None, self.measured.commits_per_s, None),
            ("share of measured commits", None, percent(self.commit_share), None),
            ("share of measured WAL bytes/s", None, percent(self.wal_share), None),
        ]

    def lines(self) -> list[str]:
        m = self.measured
        return [
            f"load: {fmt(self.jobs_per_s)} jobs/s at peak ({fmt(self.avg_jobs_per_s)} on average), "
            f"claimed and completed in batches of {self.batch}",
            f"workers: {fmt(self.jobs_per_s)}/s x {fmt(self.work_ms / 1000)} s = "
            f"{self.workers:,} jobs in flight (Little's law)",
            f"commits: {fmt(self.jobs_per_s)} x 2 / {self.batch} = {fmt(self.commits_per_s)} commits/s "
            "(a claim and a completion per batch; the enqueue rides the order's commit)",
            f"rows: {fmt(self.row_writes_per_s)} row writes/s (insert, claim, completion, delete), "
            f"{fmt(self.dead_per_s)} dead versions/s for autovacuum",
            f"WAL: {fmt(self.jobs_per_s)} x {fmt(m.wal_bytes_per_job + m.insert_wal_bytes_per_job)} bytes = "
            f"{fmt(self.wal_bytes_per_s / 1e6)} MB/s (insert, claim and completion as measured; "
            "the cleanup's delete adds its own)",
            f"storage: {fmt(self.storage_bytes_per_day / 1e6)} MB a day "
            f"at {fmt(m.bytes_per_job)} bytes a job; "
            f"{fmt(self.rows_kept)} rows kept, so autovacuum starts every "
            f"{fmt(self.autovacuum_trigger_rows)} dead rows once jobs has the guide's settings "
            "(1,000 + 0.01 x rows; the defaults wait for 50 + 0.2 x rows)",
            f"against the server at batch {self.batch}: {fmt(m.commits_per_s)} commits/s and "
            f"{fmt(m.wal_bytes_per_s / 1e6)} MB/s of WAL ({m.source}): "
            f"{percent(self.commit_share)} of the commits, {percent(self.wal_share)} of the WAL",
            f"verdict: {self.verdict}",
        ]

    def summary(self) -> str:
        return "\n".join(
            [*self.lines(), f"your guess: {guess_text(self.guess, ' commits/s')}", *self.footer()]
        )

    def footer(self) -> list[str]:
        return [f"  {self.guide}", "  worked out from the stored capacity run, not measured again"]


def estimate(
    jobs_per_s: float,
    *,
    measured: Measured,
    avg_jobs_per_s: float | None = None,
    work_ms: float = 100,
    keep_minutes: float = 60,
    guess: float | None = None,
) -> Estimate:
    """Commits, rows, WAL and storage for `jobs_per_s` at `measured.batch`, set
    against what the server measured at that batch."""
    avg = jobs_per_s if avg_jobs_per_s is None else avg_jobs_per_s
    for name, value in (("jobs_per_s", jobs_per_s), ("avg_jobs_per_s", avg), ("work_ms", work_ms)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value <= 0
        ):
            raise BadInput(f"{name} must be a positive number, got {value!r}")
    if not isinstance(keep_minutes, (int, float)) or keep_minutes <= 0:
        raise BadInput(f"keep_minutes must be a positive number, got {keep_minutes!r}")
    m = measured
    commits = jobs_per_s * 2 / m.batch
    wal = jobs_per_s * (m.wal_bytes_per_job + m.insert_wal_bytes_per_job)
    rows_kept = avg * 60 * keep_minutes
    commit_share = commits / m.commits_per_s
    wal_share = wal / m.wal_bytes_per_s if m.wal_bytes_per_s else 0.0
    share = max(commit_share, wal_share)
    if share <= HEADROOM:
        verdict = (
            f"fits: at most {percent(share)} of one session's measured rate, "
            f"inside the {HEADROOM:.0%} headroom"
        )
    elif share <= 1:
        verdict = (
            f"tight: {share:.0%} of one session's measured rate, past the {HEADROOM:.0%} headroom; "
            "bigger batches, more sessions measured, or the queue in its own database"
        )
    else:
        verdict = (
            f"does not fit: {share:.0%} of one session's measured rate; measure more sessions, "
            "batch harder, or move the queue off this primary (its own database or a broker, via an outbox)"
        )
    return Estimate(
        jobs_per_s=jobs_per_s,
        avg_jobs_per_s=avg,
        batch=m.batch,
        work_ms=work_ms,
        keep_minutes=keep_minutes,
        measured=m,
        workers=math.ceil(jobs_per_s * work_ms / 1000),
        commits_per_s=commits,
        row_writes_per_s=ROW_WRITES_PER_JOB * jobs_per_s,
        dead_per_s=DEAD_VERSIONS_PER_JOB * jobs_per_s,
        wal_bytes_per_s=wal,
        storage_bytes_per_day=avg * 86_400 * m.bytes_per_job,
        rows_kept=rows_kept,
        autovacuum_trigger_rows=1000 + 0.01 * rows_kept,
        commit_share=commit_share,
        wal_share=wal_share,
        verdict=verdict,
        guess=guess,
    )


def scenario_estimate(key: str, *, guess: float | None = None) -> Estimate:
    """The estimate for a scenario's profile at its batch size, from the stored capacity."""
    s = scenario_named(key)
    return estimate(
        s.peak_orders_per_s * s.jobs_per_order,
        measured=measured_at(s.batch),
        avg_jobs_per_s=s.avg_orders_per_s * s.jobs_per_order,
        work_ms=s.work_ms,
        keep_minutes=s.retention_days * 24 * 60,
        guess=guess,
    )
