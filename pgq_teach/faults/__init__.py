"""Two runs that test the queue's promises on a live server, with real processes.

Each run takes its settings as one object (`FaultSettings`, `LoadSettings`,
both a `RunSettings`), checked when it is made, before any database is touched.

`run_faults` (the fault run, `pgq-teach fault-run`): worker processes, each
running the library's Worker with a short lease, drain a queue while we
SIGKILL them mid-job and start replacements, freeze them (SIGSTOP) past their
lease and let them go on, end their sessions with pg_terminate_backend (LISTEN
connection included), restart PostgreSQL once, and requeue dead jobs. Every
other pause (and every pause until one such hold is under way or over) freezes
a worker on a job with one try and holds it frozen until its lease has run
out, the job has died, been requeued and been claimed again (ten leases at the
most), so it comes back to a claim that holds the same attempts as its own and
only the fencing token tells them apart; any other pause lasts two leases and
half a second. The handler is idempotent: one effect row per job, keyed on the job id,
plus an append-only log of every call.

`run_load` (the load run, `pgq-teach load`): many workers, many jobs, a planned 10% of handler
calls raising, max_attempts 3, no faults injected. The plan is known in
advance, so each job's final status and attempts can be checked exactly.

Both judge the queue from the database only (lab/fault_verdict.sql): a
SIGKILLed worker's in-memory report is gone, but every state change, call and
effect was written on the server, the state changes by a trigger in the same
transaction. Worker processes never print: their output goes to a log file in
a temporary folder, read only when one crashes. Every child is stopped, or
killed, before a run returns or raises: both runs hold their worker
processes in a `Fleet`, a context manager.
"""

from .fault_run import FaultReport, run_faults
from .fleet import KIND, OUTCOMES, Fleet, RunReport, WorkersCrashed, restart_server
from .load import LoadReport, run_load
from .plan import planned_error, planned_failure, planned_result
from .settings import FaultSettings, LoadSettings, RunSettings

__all__ = [
    "KIND",
    "OUTCOMES",
    "FaultReport",
    "FaultSettings",
    "Fleet",
    "LoadReport",
    "LoadSettings",
    "RunReport",
    "RunSettings",
    "WorkersCrashed",
    "planned_error",
    "planned_failure",
    "planned_result",
    "restart_server",
    "run_faults",
    "run_load",
]
