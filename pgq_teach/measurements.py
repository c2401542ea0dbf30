"""The measurements lessons record for later lessons (and the interview) to quote.

Each measurement is defined once, here, as a `Measurement`: the lesson that records
it, its key in the learner's `measurements.json`, and its unit. The lab or lesson that
takes the measurement records it with `record(KEY, value)`; whatever quotes it reads
it with `read(KEY)`, importing the same constant, so a quote can never point at a
key that no lesson writes (`tests/test_measurements.py` checks that every constant
is recorded somewhere in the package).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .infra import learner


@dataclass(frozen=True)
class Measurement:
    """Where one measurement lives: `measurements.json` → lesson → key, with its unit."""

    lesson: str
    key: str
    unit: str


def record(which: Measurement, value: Any) -> Path:
    """Keep the learner's own value of `which`, with the time it was taken."""
    return learner.record_measurement(which.lesson, which.key, value, which.unit)


def read(which: Measurement) -> dict[str, Any] | None:
    """The recorded {value, unit, at}, or None if its lesson has not run yet."""
    return learner.measurement(which.lesson, which.key)


# --- one constant per measurement, grouped by the lesson that records it ------
LEASED_JOB_BACK_S = Measurement("04-crashed-workers", "leased_job_back_s", "s")
DEAD_NOT_REMOVABLE = Measurement("04-crashed-workers", "dead_not_removable", "dead rows")
STALE_COMPLETION_ROWS = Measurement("05-stalled-workers-and-fencing", "stale_completion_rows", "rows")
RUNS_WITHOUT_HEARTBEAT = Measurement("05-stalled-workers-and-fencing", "runs_without_heartbeat", "runs")
RETRY_WAITS_S = Measurement("06-retries-and-dead-jobs", "retry_waits_s", "s")
JITTER_SPREAD_S = Measurement("06-retries-and-dead-jobs", "jitter_spread_s", "s")
NOTIFY_MS = Measurement("07-wake-ups", "notify_ms", "ms")
PARTIAL_INDEX_KB = Measurement("08-indexes", "partial_index_kb", "kB")
DRAIN_JOBS_PER_S_09 = Measurement("09-bloat-and-vacuum", "drain_jobs_per_s", "jobs/s")
DRAINED_BUFFERS = Measurement("09-bloat-and-vacuum", "drained_buffers", "buffers")
IDLE_SNAPSHOT_BUFFERS = Measurement("09-bloat-and-vacuum", "idle_snapshot_buffers", "buffers")
BULK_DELETE_DEAD_ROWS = Measurement("10-operations", "bulk_delete_dead_rows", "dead rows")
# Lessons 10b and 10c: each lab's figures with the knobs that made them (interview follow-ups quote them)
FLOOD_WAITS_10B = Measurement("10b-priorities-and-fairness", "flood_waits", "figures")
URGENT_AHEAD_10B = Measurement("10b-priorities-and-fairness", "urgent_ahead", "figures")
PARTNER_QUOTA_10B = Measurement("10b-priorities-and-fairness", "partner_quota", "figures")
HUNG_HANDLER_10C = Measurement("10c-unique-jobs-and-timeouts", "hung_handler", "figures")
LATE_INVOICES_10C = Measurement("10c-unique-jobs-and-timeouts", "late_invoices", "figures")
DRAIN_JOBS_PER_S_11 = Measurement("11-when-to-switch", "drain_jobs_per_s", "jobs/s")
CAPACITY_12 = Measurement("12-the-interview", "capacity", "per batch size")
