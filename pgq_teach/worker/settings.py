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

import psycopg

from .. import checks, kinds, queue
from ..errors import BadInput
from .leases import BEATS_PER_LEASE

Handler = Callable[[queue.Job], Any]
MAX_CONCURRENCY = 1_000
MAX_TIMEOUT_S = kinds.MAX_TIMEOUT_S  # job_kinds' CHECK: 30 days


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
    priorities: bool = False
    fair: bool = False
    per_tenant: int | None = None
    # Per kind (limits.py): the job timeout (seconds, or {kind: seconds}; None: job_kinds'),
    # the shared rate limits ({kind: jobs per second}), and the pause after failures in a row.
    timeout: float | Mapping[str, float] | None = None
    rate_limits: Mapping[str, float] | None = None
    pause_after: int = 5
    pause_for: float = 30.0

    def __post_init__(self) -> None:
        dsn = getattr(self.dsn, "dsn", self.dsn)
        if not isinstance(dsn, str):
            raise BadInput(f"expected a connection string or a Database, got {self.dsn!r}")
        self._store_checked("dsn", dsn)
        handlers = self.handlers
        if not isinstance(handlers, Mapping) or not handlers or not all(map(callable, handlers.values())):
            raise BadInput("handlers must map each kind to a callable")
        self._store_checked("handlers", dict(handlers))
        for name in ("heartbeat", "priorities", "fair"):
            if not isinstance(getattr(self, name), bool):
                raise BadInput(f"{name} must be True or False, got {getattr(self, name)!r}")
        self.check_claim()
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
        self._store_checked("timeout", self._per_kind("timeout", self.timeout, "seconds", MAX_TIMEOUT_S))
        self._store_checked(
            "rate_limits", self._per_kind("rate_limits", self.rate_limits or {}, "", kinds.MAX_RATE)
        )
        self._store_checked("pause_after", checks.whole_number("pause_after", self.pause_after, 1, 1_000_000))
        self._store_checked("pause_for", checks.seconds("pause_for", self.pause_for, 0.001, 86_400))

    def _per_kind(self, name: str, value: Any, unit: str, high: float) -> dict[str, float] | float | None:
        """A positive number, or {kind: number} naming only kinds this Worker handles."""
        if value is None:
            return None
        if not isinstance(value, Mapping):
            return checks.number(name, value, 0.001, high, unit=unit)
        checked = {}
        for kind, number in value.items():
            if kind not in self.handlers:
                raise BadInput(f"{name} names kind {kind!r}, which this Worker has no handler for")
            checked[kind] = checks.number(f"{name}[{kind!r}]", number, 0.001, high, unit=unit)
        return checked

    def timeouts(self, policies: Mapping[str, kinds.KindPolicy]) -> dict[str, float]:
        """Each handled kind's job timeout in seconds: this Worker's `timeout` over the kind's
        row in job_kinds; a kind with neither has none."""
        given = self.timeout
        found = {kind: p.timeout_s for kind, p in policies.items() if p.timeout_s is not None}
        if isinstance(given, Mapping):
            found |= given
        elif given is not None:
            found = dict.fromkeys(self.handlers, given)
        return {kind: seconds for kind, seconds in found.items() if kind in self.handlers}

    def check_claim(self) -> None:
        """Which claim: per_tenant only with fair (it caps the fair claim), and
        priorities or fair, not both (the fair claim takes the best priority first)."""
        if self.per_tenant is not None:
            if not self.fair:
                raise BadInput("per_tenant caps the fair claim: give it with fair=True")
            self._store_checked(
                "per_tenant", checks.whole_number("per_tenant", self.per_tenant, 1, queue.MAX_PER_TENANT)
            )
        if self.priorities and self.fair:
            raise BadInput("give priorities=True or fair=True, not both: the fair claim takes priorities too")

    def claim(self, conn: psycopg.Connection, batch: int, after: str | None = None) -> list[queue.Job]:
        """Claim up to `batch` jobs with the claim these settings ask for: the FIFO claim as
        taught (sql/claim.sql), the priority claim, or the fair claim (uncapped without
        per_tenant), whose turn starts after the tenant `after`."""
        if self.fair:
            cap = self.per_tenant or queue.MAX_PER_TENANT
            return queue.claim_fair(conn, batch=batch, lease=self.lease, per_tenant=cap, after=after)
        if self.priorities:
            return queue.claim_priority(conn, batch=batch, lease=self.lease)
        return queue.claim(conn, batch=batch, lease=self.lease)

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
