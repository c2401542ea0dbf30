"""Lesson 10's experiments: running the queue day to day. One module a lab:

- `monitoring`: `snapshot`, the guide's three monitoring queries at one
  moment, and `Load`, a background load (a producer and the library's
  `Worker`s on threads, and optionally one forgotten transaction) for the
  dashboard to watch.
- `cleanup`: `cleanup_vs_bulk_delete`, `cleanup` in batches of 5,000 against
  one big DELETE of the same rows: duration, the longest transaction, dead
  rows left.
- `cleanup_scaling`: `cleanup_scaling`, each batch form's buffers at its first,
  middle and last batch (the keyset stays flat; a Seq Scan from page 0 grows),
  and the runs stored from other servers (`stored_scaling_runs`).
- `partitions`: `partition_drop_vs_delete`, a day of history dropped as a
  partition against the same day deleted row by row.
- `timeouts`: `idle_timeout`, idle_in_transaction_session_timeout on a worker
  role ending a forgotten transaction; the client sees 25P03.
- `autovacuum`: `autovacuum_per_table`, the defaults against the guide's
  per-table settings under the same churn, and the stored run at the default
  naptime (`stored_autovacuum_run`).

`rules` holds the guide's advice they stand beside. Sessions here are plain
psycopg connections, kept small so they can move onto the shared session
helpers later. Every result is a `results.Result`: the server, the learner's
guess, the guide's advice (`results.advice`: these rules come from the guide's
prose, not its numbered figures), and the comparison rows its widget draws.

The names below are what lessons, widgets, tools and tests reach as
`operations.NAME`; `run` (the statements' runner) stays reachable here as it
was when this was one module.
"""

from ...statements import run
from .autovacuum import (
    DEFAULT_NAPTIME,
    AutovacuumComparison,
    autovacuum_per_table,
    store_autovacuum_run,
    stored_autovacuum_run,
)
from .cleanup import CleanupComparison, cleanup_vs_bulk_delete, limit_scan_buffers
from .cleanup_scaling import CleanupScaling, cleanup_scaling, store_scaling_runs, stored_scaling_runs
from .monitoring import Load, Snapshot, snapshot
from .partitions import PartitionComparison, partition_drop_vs_delete
from .timeouts import TimeoutDemo, idle_timeout

__all__ = [
    "DEFAULT_NAPTIME",
    "AutovacuumComparison",
    "CleanupComparison",
    "CleanupScaling",
    "Load",
    "PartitionComparison",
    "Snapshot",
    "TimeoutDemo",
    "autovacuum_per_table",
    "cleanup_scaling",
    "cleanup_vs_bulk_delete",
    "idle_timeout",
    "limit_scan_buffers",
    "partition_drop_vs_delete",
    "run",
    "snapshot",
    "store_autovacuum_run",
    "store_scaling_runs",
    "stored_autovacuum_run",
    "stored_scaling_runs",
]
