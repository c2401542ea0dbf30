"""What a fault or load run is told to do, checked once before anything runs.

`RunSettings` holds what both runs share: how many jobs, how many worker
processes at a time, the workers' lease and poll, `max_attempts` and how long
the queue may take to drain. `FaultSettings` and `LoadSettings` add each
run's own, with that run's defaults. Every value is checked with
`pgq_teach.checks` when the settings are made, so bad input is refused
(`BadInput`) before any database is touched. The CLI builds them from its
options with `from_options`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar

from .. import checks

DAY = 86_400.0  # the longest any run's clock may be set to
AnyRunSettings = TypeVar("AnyRunSettings", bound="RunSettings")


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """What both runs share. `drain_timeout` counts from the moment the last
    job falls due: after the faults for a fault run, at once for a load run.
    A fault run counts it again from each job done after that, so it ends
    only once the queue has stopped draining (or every job is done)."""

    jobs: int
    workers: int
    lease: float
    poll: float
    max_attempts: int
    drain_timeout: float
    mode: ClassVar[str]  # names the run's worker processes and tells them what to do
    handler_ms: ClassVar[tuple[int, int]]  # how long a handler call sleeps, at random in this range
    most_attempts: ClassVar[int] = 1_000  # the highest max_attempts this run accepts

    def __post_init__(self) -> None:
        self.keep("jobs", checks.whole_number("jobs", self.jobs, 1, 1_000_000))
        self.keep("workers", checks.whole_number("workers", self.workers, 1, 64))
        self.keep(
            "max_attempts", checks.whole_number("max_attempts", self.max_attempts, 1, self.most_attempts)
        )
        self.keep("lease", checks.lease(self.lease).total_seconds())
        self.keep("poll", checks.seconds("poll", self.poll, 0.01, 60))
        self.keep("drain_timeout", checks.seconds("drain_timeout", self.drain_timeout, 1, DAY))

    def keep(self, name: str, value: Any) -> None:
        """Store a checked value in the form the run wants (the settings are frozen once made)."""
        object.__setattr__(self, name, value)

    @property
    def due_over(self) -> float:
        """Seconds over which the jobs fall due (0: all due at once)."""
        return 0.0

    def worker_spec(self) -> dict[str, Any]:
        """What every worker process of the run is told on stdin. Batches of
        10, so outcomes wait for their flush while faults strike or workers
        run. A worker gives up a minute after the run's longest possible end."""
        return {
            "mode": self.mode,
            "lease": self.lease,
            "poll": self.poll,
            "batch": 10,
            "sleep_ms": self.handler_ms,
            "max_seconds": self.due_over + self.drain_timeout + 60,
        }

    @classmethod
    def from_options(cls: type[AnyRunSettings], options: Mapping[str, Any]) -> AnyRunSettings:
        """Settings from the named options that are settings of this run
        (the CLI's, say); any not given keep the run's default."""
        names = {f.name for f in fields(cls)}
        return cls(**{name: value for name, value in options.items() if name in names})


@dataclass(frozen=True, kw_only=True)
class FaultSettings(RunSettings):
    """A fault run: jobs fall due evenly over `seconds` while the faults go
    on, each on its own clock; dead jobs are requeued every `requeue_every`
    seconds until the queue drains. On a slow machine the faults go on past
    `seconds` (twice as long at the most, while jobs are left) until each kind
    has struck its share (the report says how long). Every `fragile_every`-th job (none if 0)
    gets one try only, so the faults kill some jobs for the requeues to bring
    back. Every `pause_every` seconds a worker inside a job is frozen past its
    lease: every other time on such a job, until the job has been requeued and
    claimed again (ten leases at the most), otherwise for two leases and half
    a second. `restart`: restart the server once, 40% into the faults. Each
    worker process is a heartbeat pool: `concurrency` executors claiming
    `batch` jobs each; every `long_every`-th job (none if 0) works one and a
    half leases, so only its heartbeat keeps it; every `beat_kill_every`
    seconds one worker's heartbeat session is ended. `timeout`: each worker's
    job timeout; with one, a long job works its one and a half leases on its
    first try only (and a fragile one never), so a timeout shorter than that
    fails it once and its retry finishes. `rate_limit`: one shared rate limit for the whole fleet."""

    jobs: int = 2_000
    workers: int = 4
    lease: float = 1.5
    poll: float = 0.2
    max_attempts: int = 25
    drain_timeout: float = 120.0
    seconds: float = 20.0
    kill_every: float = 0.6
    terminate_every: float = 1.0
    pause_every: float = 2.0
    requeue_every: float = 0.5
    fragile_every: int = 2
    restart: bool = True
    concurrency: int = 4
    batch: int = 10
    long_every: int = 10
    beat_kill_every: float = 0.7
    timeout: float | None = None  # each worker's job timeout, in seconds (None: none)
    rate_limit: float | None = None  # jobs per second, shared by the whole fleet (None: none)
    mode: ClassVar[str] = "faults"
    handler_ms: ClassVar[tuple[int, int]] = (2, 12)  # long enough that faults strike mid-job

    def __post_init__(self) -> None:
        super().__post_init__()
        self.keep("seconds", checks.seconds("seconds", self.seconds, 1, DAY))
        for name in ("kill_every", "terminate_every", "pause_every", "requeue_every"):
            self.keep(name, checks.seconds(name, getattr(self, name), 0.05, DAY))
        self.keep("fragile_every", checks.whole_number("fragile_every", self.fragile_every, 0, 1_000_000))
        checks.one_of("restart", self.restart, (True, False))
        self.keep("concurrency", checks.whole_number("concurrency", self.concurrency, 1, 64))
        self.keep("batch", checks.whole_number("batch", self.batch, 1, 1_000))
        self.keep("long_every", checks.whole_number("long_every", self.long_every, 0, 1_000_000))
        self.keep("beat_kill_every", checks.seconds("beat_kill_every", self.beat_kill_every, 0.05, DAY))
        if self.timeout is not None:
            self.keep("timeout", checks.seconds("timeout", self.timeout, 0.001, DAY))
        if self.rate_limit is not None:
            self.keep(
                "rate_limit", checks.number("rate_limit", self.rate_limit, 0.001, 1e6, unit="jobs per second")
            )

    def worker_spec(self) -> dict[str, Any]:
        """The shared spec, as heartbeat pools with long jobs among the short. The run drains
        for as long as jobs keep being done, so it has no longest end to give up after: a
        worker stops with the run (its watchdog sees its parent go), or a day after the faults."""
        return super().worker_spec() | {
            "batch": self.batch,
            "concurrency": self.concurrency,
            "long_every": self.long_every,
            "max_seconds": self.due_over + DAY,
            "timeout": self.timeout,
            "rate_limit": self.rate_limit,
        }

    @property
    def due_over(self) -> float:
        return self.seconds


@dataclass(frozen=True, kw_only=True)
class LoadSettings(RunSettings):
    """A load run: every job due at once, a planned `fail_rate` of handler
    calls raising (which ones, `seed` picks). The lease is long on purpose:
    no lease may run out, so every attempt comes from a planned failure."""

    jobs: int = 20_000
    workers: int = 16
    lease: float = 120.0
    poll: float = 0.5
    max_attempts: int = 3
    drain_timeout: float = 900.0
    fail_rate: float = 0.1
    seed: int = 1
    # Make each retry due at once (lab/make_all_due.sql), as if its backoff, 20 s then 40 s
    # by sql/fail.sql, had passed: the same attempts, errors and dead jobs, without the
    # minute of waiting. A test's shortcut; `pgq-teach load` waits the backoff out.
    skip_backoff: bool = False
    mode: ClassVar[str] = "load"
    handler_ms: ClassVar[tuple[int, int]] = (0, 2)
    most_attempts: ClassVar[int] = 20  # the run waits out every retry, up to an hour each (sql/fail.sql)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.keep("fail_rate", checks.fraction("fail_rate", self.fail_rate))
        self.keep("seed", checks.whole_number("seed", self.seed, 0))

    def worker_spec(self) -> dict[str, Any]:
        """The shared spec, plus the failure plan every worker follows."""
        return super().worker_spec() | {"fail_rate": self.fail_rate, "plan_seed": self.seed}
