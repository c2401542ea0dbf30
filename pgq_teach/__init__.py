"""pgq-teach: a correct and fast job queue on PostgreSQL, and a course on it.

Data flows one way: sql/ -> statements -> queue and worker -> experiments ->
widgets, notebooks and the CLI.
"""

from .databases import Database, open_database
from .errors import BadInput, PgqError, SetupError
from .infra.server import Server, get_server
from .queue import (
    Duplicate,
    Job,
    NotClaimed,
    Stats,
    UniqueRace,
    claim,
    claim_fair,
    claim_priority,
    cleanup,
    complete,
    complete_many,
    enqueue,
    enqueue_many,
    extend_lease,
    extend_leases,
    fail,
    fail_many,
    reap,
    requeue_dead,
    stats,
)
from .statements import names as statement_names
from .statements import run, statement
from .worker import Worker, WorkerReport

__all__ = [
    "BadInput",
    "Database",
    "Duplicate",
    "Job",
    "NotClaimed",
    "PgqError",
    "Server",
    "SetupError",
    "Stats",
    "UniqueRace",
    "Worker",
    "WorkerReport",
    "claim",
    "claim_fair",
    "claim_priority",
    "cleanup",
    "complete",
    "enqueue",
    "extend_lease",
    "extend_leases",
    "fail",
    "get_server",
    "open_database",
    "reap",
    "requeue_dead",
    "run",
    "statement",
    "statement_names",
    "stats",
    "complete_many",
    "enqueue_many",
    "fail_many",
]
