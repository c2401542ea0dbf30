"""The estimate, in two parts. The work (`work_estimate`), from the scenario's own
numbers: CPU-seconds a second, storage a day and jobs in flight per kind, each
partner's quota against the peak (the backlog, the wait, the drain, whether the SLO
holds) and the binding constraint, named. The queue (`estimate`): the load in one
unit system (commits/s, row writes/s, WAL bytes/s, storage/day) set against what the
learner's own server measured for the same batch size (`measure_capacity`, recorded
as `measurements.CAPACITY_12`: one session, so a floor), with headroom. Every quoted
server figure comes from the measurement store, with its lesson and time (`quote`)."""

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


def readable(value: float) -> str:
    """A number as the rehearsal says it: whole from 100 up, else to two or one decimals."""
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
        f"{q.source}; one session on this machine, so a floor, not the server's capacity; "
        f"synchronous_commit={q.value.get('synchronous_commit')}",
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
            f"load: {readable(self.jobs_per_s)} jobs/s at peak ({readable(self.avg_jobs_per_s)} on average), "
            f"claimed and completed in batches of {self.batch}",
            f"workers: {readable(self.jobs_per_s)}/s x {readable(self.work_ms / 1000)} s = "
            f"{self.workers:,} jobs in flight (Little's law)",
            f"commits: {readable(self.jobs_per_s)} x 2 / {self.batch} = "
            f"{readable(self.commits_per_s)} commits/s "
            "(a claim and a completion per batch; the enqueue rides the order's commit)",
            f"rows: {readable(self.row_writes_per_s)} row writes/s (insert, claim, completion, delete), "
            f"{readable(self.dead_per_s)} dead versions/s for autovacuum",
            f"WAL: {readable(self.jobs_per_s)} x "
            f"{readable(m.wal_bytes_per_job + m.insert_wal_bytes_per_job)} bytes = "
            f"{readable(self.wal_bytes_per_s / 1e6)} MB/s (insert, claim and completion as measured; "
            "the cleanup's delete adds its own)",
            f"storage: {readable(self.storage_bytes_per_day / 1e6)} MB a day "
            f"at {readable(m.bytes_per_job)} bytes a job; "
            f"{readable(self.rows_kept)} rows kept, so autovacuum starts every "
            f"{readable(self.autovacuum_trigger_rows)} dead rows once jobs has the guide's settings "
            "(1,000 + 0.01 x rows; the defaults wait for 50 + 0.2 x rows)",
            f"against the server at batch {self.batch}: {readable(m.commits_per_s)} commits/s and "
            f"{readable(m.wal_bytes_per_s / 1e6)} MB/s of WAL ({m.source}): "
            f"{percent(self.commit_share)} of the commits, {percent(self.wal_share)} of the WAL",
            f"verdict: {self.verdict}",
            "what a real capacity test adds: many sessions at once, real payloads, a run long enough "
            "to pass checkpoints (the full-page writes after each), batches only partly full outside "
            "the peak (up to 2 commits a job), the cleanup's dead versions arriving days after the "
            "peak, and the sale's hour at its own rate rather than averaged over the day",
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


# --- the work and the partners ------------------------------------------------------


@dataclass(frozen=True)
class KindLoad:
    """One kind of job at the peak: jobs a second, the CPU its handlers burn (CPU-seconds
    a second, so CPUs busy), what it stores a day, and the jobs in flight (Little's law)."""

    kind: str
    jobs_per_s: float
    cpu_s_per_s: float
    stored_bytes_per_day: float
    in_flight: float


@dataclass(frozen=True)
class PartnerLoad:
    """One partner's quota against the peak arrival rate of the kinds that call it.

    Over the peak the backlog grows by (arrivals - quota) a second; the last job of
    the peak waits for the backlog ahead of it to go out at the quota, so
    `wait_s = backlog / quota`; after the peak the backlog drains at the quota less
    the day's average arrivals. An outage piles up the busy hours' arrivals for its
    length, drained the same way. A partner with no quota given has none of these."""

    name: str
    note: str
    sends_per_s: float
    quota_per_s: float | None
    slo_s: float
    backlog: float
    wait_s: float
    drain_s: float
    outage_s: float
    outage_backlog: float
    outage_drain_s: float

    @property
    def use(self) -> float:
        """The peak's sends as a share of the quota (0 when no quota was given)."""
        return self.sends_per_s / self.quota_per_s if self.quota_per_s else 0.0

    @property
    def slo_holds(self) -> bool:
        return self.wait_s <= self.slo_s

    def line(self) -> str:
        from ..tables import duration

        if self.quota_per_s is None:
            return f"{self.name}: {readable(self.sends_per_s)} calls/s at peak; {self.note}"
        out = f"{self.name}: {readable(self.sends_per_s)} calls/s at peak "
        out += f"against {readable(self.quota_per_s)}/s "
        out += f"({self.note}): "
        if self.backlog > 0:
            out += (
                f"{readable(self.backlog)} queued over the peak, "
                f"the last peak job waits {duration(self.wait_s)} "
                f"against its {duration(self.slo_s)} SLO ({'holds' if self.slo_holds else 'breaks'}), "
                f"the backlog gone {duration(self.drain_s)} after the peak"
            )
        else:
            out += f"{percent(self.use)} of the quota, no backlog"
        if self.outage_s:
            out += (
                f"; a {duration(self.outage_s)} outage queues {readable(self.outage_backlog)}, "
                f"gone {duration(self.outage_drain_s)} after it ends"
            )
        return out


@dataclass(frozen=True)
class WorkEstimate:
    """The work a scenario's peak asks for, from its own numbers (no server needed):
    CPU, storage and in-flight jobs per kind, and each partner's quota against the peak.
    The binding constraint is the partner whose SLO breaks worst, else the most used."""

    scenario: str
    peak_s: float
    kinds: tuple[KindLoad, ...]
    partners: tuple[PartnerLoad, ...]

    @property
    def cpu_s_per_s(self) -> float:
        return sum(k.cpu_s_per_s for k in self.kinds)

    @property
    def stored_bytes_per_day(self) -> float:
        return sum(k.stored_bytes_per_day for k in self.kinds)

    def binding(self, server_share: float | None = None) -> str:
        """The binding constraint, named: a partner whose SLO breaks (the worst wait
        against its SLO), else the highest use of a quota or of the server's headroom."""
        from ..tables import duration

        broken = [(p.wait_s / p.slo_s, "peak", p) for p in self.partners if p.quota_per_s and not p.slo_holds]
        broken += [
            ((p.outage_s + p.outage_drain_s) / p.slo_s, "outage", p)
            for p in self.partners
            if p.outage_s > p.slo_s
        ]
        if broken:
            _, why, p = max(broken, key=lambda b: b[0])
            if why == "outage":
                return (
                    f"binding constraint: the {p.name}'s outages: {duration(p.outage_s)} down queues "
                    f"{readable(p.outage_backlog)}, against a {duration(p.slo_s)} SLO; the quota of "
                    f"{readable(p.quota_per_s or 0)}/s drains them {duration(p.outage_drain_s)} after"
                )
            return (
                f"binding constraint: the {p.name}'s quota of {readable(p.quota_per_s or 0)}/s: "
                f"{readable(p.backlog)} queued at the peak, the last waits {duration(p.wait_s)} "
                f"against {duration(p.slo_s)}"
            )
        uses = [(p.use, f"the {p.name}'s quota ({percent(p.use)} of it at peak)") for p in self.partners]
        if server_share is not None:
            uses.append(
                (server_share / HEADROOM, f"the server ({percent(server_share)} of one session's rate)")
            )
        use, name = max(uses)
        return f"binding constraint: {name}; every SLO holds at the peak"

    def lines(self) -> list[str]:
        out = [
            f"{k.kind}: {readable(k.jobs_per_s)} jobs/s at peak, {readable(k.cpu_s_per_s)} CPU-s/s, "
            f"{readable(k.in_flight)} in flight"
            + (
                f", {readable(k.stored_bytes_per_day / 1e9)} GB a day to the object store"
                if k.stored_bytes_per_day
                else ""
            )
            for k in self.kinds
        ]
        stored = self.stored_bytes_per_day
        out.append(
            f"work at peak: {readable(self.cpu_s_per_s)} CPUs busy in the handlers; "
            + (f"{readable(stored / 1e9)} GB a day of objects stored" if stored else "no objects stored")
        )
        return out + [p.line() for p in self.partners]


def work_estimate(key: str) -> WorkEstimate:
    """The work and the partners' quotas for a scenario's peak, from its numbers alone."""
    s = scenario_named(key)
    peak_s = s.peak_minutes * 60
    kinds = tuple(
        KindLoad(
            j.name,
            s.peak_orders_per_s * j.per_order,
            s.peak_orders_per_s * j.per_order * j.cpu_ms / 1000,
            s.orders_per_day * j.per_order * j.stored_bytes,
            s.peak_orders_per_s * j.per_order * j.work_ms / 1000,
        )
        for j in s.jobs
    )
    partners = []
    for p in s.partners:
        per_order = sum(s.kind(k).per_order for k in p.kinds)
        sends = s.peak_orders_per_s * per_order
        slo = min(s.kind(k).slo_s for k in p.kinds)
        after = s.avg_orders_per_s * per_order  # arrivals after the peak: the day's average
        busy = s.busy_orders_per_s * per_order
        quota = p.quota_per_s
        backlog = max(0.0, sends - quota) * peak_s if quota else 0.0
        spare = (quota - after) if quota else 0.0
        outage_s = p.outage_minutes * 60
        partners.append(
            PartnerLoad(
                p.name,
                p.note,
                sends,
                quota,
                slo,
                backlog,
                backlog / quota if quota else 0.0,
                backlog / spare if spare > 0 else math.inf,
                outage_s,
                busy * outage_s,
                busy * outage_s / (quota - busy) if quota and quota > busy else math.inf,
            )
        )
    return WorkEstimate(key, peak_s, kinds, tuple(partners))
