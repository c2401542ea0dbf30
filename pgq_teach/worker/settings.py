"""What a Worker is told to do, checked once when it is made.

`WorkerSettings` holds the Worker's arguments. Every value is checked with
`pgq_teach.checks` (or here, where no shared check fits) as the settings are
made, so bad input is refused (`BadInput`) before any thread starts or any
connection opens, as `faults/settings.py` does for the fault runs. Three
values follow from the others: how long an outcome may wait, and how often
to reap and to beat.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .. import checks, queue
from ..errors import BadInput
from .leases import BEATS_PER_LEASE

Handler = Callable[[queue.Job], Any]
MAX_CONCURRENCY = 1_000


@dataclass(frozen=True, kw_only=True)
class WorkerSettings:
    """One Worker's settings (the Worker's docstring says what each does).
    `dsn` may be given as a Database, and `lease` as seconds: each is kept
    in the form the Worker uses, a connection string and a timedelta.
    `flush_after` None asks for its default (`flush_after_s`)."""

    dsn: str
    handlers: Mapping[str, Handler]
    concurrency: int = 1
    lease: timedelta = queue.DEFAULT_LEASE
    batch: int = 1
    poll: float = 5.0
    heartbeat: bool = True
    flush_after: float | None = None
    durable_completions: bool = False

    def __post_init__(self) -> None:
        dsn = getattr(self.dsn, "dsn", self.dsn)
        if not isinstance(dsn, str):
            raise BadInput(f"expected a connection string or a Database, got {self.dsn!r}")
        self._store_checked("dsn", dsn)
        handlers = self.handlers
        if not isinstance(handlers, Mapping) or not handlers or not all(map(callable, handlers.values())):
            raise BadInput("handlers must map each kind to a callable")
        self._store_checked("handlers", dict(handlers))
        if not isinstance(self.heartbeat, bool):
            raise BadInput(f"heartbeat must be True or False, got {self.heartbeat!r}")
        self._store_checked("poll", checks.seconds("poll", self.poll, 0.001, 86_400))
        self._store_checked(
            "concurrency", checks.whole_number("concurrency", self.concurrency, 1, MAX_CONCURRENCY)
        )
        self._store_checked("lease", checks.lease(self.lease))
        self._store_checked("batch", checks.whole_number("batch", self.batch, 1, queue.MAX_BATCH))
        flush_after = self.flush_after
        if flush_after is not None:
            if not (isinstance(flush_after, (int, float)) and 0 <= flush_after < self.lease_s):
                raise BadInput(
                    f"flush_after must be 0 or more seconds and shorter than the lease, got {flush_after!r}"
                )
            self._store_checked("flush_after", float(flush_after))

    def _store_checked(self, name: str, value: Any) -> None:
        """Store a checked value in the form the Worker uses (the settings are frozen once made)."""
        object.__setattr__(self, name, value)

    @property
    def lease_s(self) -> float:
        return self.lease.total_seconds()

    @property
    def flush_after_s(self) -> float:
        """About the longest a finished job's outcome waits before it is sent: `flush_after`,
        or by default a tenth of the lease, at most one second."""
        return self.flush_after if self.flush_after is not None else min(1.0, self.lease_s / 10)

    @property
    def reap_every(self) -> float:
        """The reaper need not run before every claim: a lease cannot expire
        sooner than its length after the claim that wrote it."""
        return min(1.0, self.lease_s / 4)

    @property
    def beat_every(self) -> float:
        """The heartbeat rule (leases.py): a beat every quarter of the lease."""
        return self.lease_s / BEATS_PER_LEASE
