"""Lesson 11's labs, each one line in the notebook: the drain of 100,000 jobs,
the broker outage, and the side-by-side drain through the table and JetStream.

Each is an `ExperimentPanel` (a guess, Run and Stop, progress, the result);
headless, `lab.run_and_wait()` returns the result. The outage lab needs the
real broker (the extra `broker`): where no nats-server wheel exists for the
platform, it refuses in one line (`SetupError`) before anything runs.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ..databases import Database
from ..errors import SetupError
from ..experiments import switching
from ..infra import broker
from .common import result_html
from .lab import ExperimentPanel

OUTAGE_S = 25.0  # the lab's outage; longer than the relay's whole retry schedule (20 s at max_attempts=2)


class DrainRateLab(ExperimentPanel):
    """Seed 100,000 empty jobs and drain them with four threads in batches of 100."""

    def __init__(self, db: Database, *, jobs: int = 100_000):
        super().__init__(
            partial(switching.drain_rate, db, jobs=jobs, batch=100, workers=4),
            guess_label=f"How many seconds to drain {jobs:,} jobs?",
            guess_unit="s",
            guess_plausible=(0, 600),
        )


def outage_html(result: Any) -> str:
    """The comparison table (the lag over the run is `outage_chart`)."""
    return result_html(result)


def outage_chart(result: Any) -> list:
    """The outbox lag over the run, when the run was the real broker's outage."""
    return [result.lag_chart()] if isinstance(result, switching.OutageResult) else []


class OutageLab(ExperimentPanel):
    """SIGKILL the broker for `outage_s` while orders keep coming, then start it again."""

    def __new__(cls, *args: Any, **kwargs: Any) -> OutageLab:
        # Refused before the widget exists: a half-built one would be closed by its finalizer.
        if not broker.available():
            raise SetupError(broker.missing_line())
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, db: Database, *, outage_s: float = OUTAGE_S):
        super().__init__(
            partial(switching.outage, db, outage_s=outage_s),
            outage_html,
            charts=outage_chart,
            guess_label="Peak outbox lag (age of the oldest unsent event), seconds:",
            guess_unit="s",
            guess_plausible=(0, 120),
        )


class SideBySideLab(ExperimentPanel):
    """The same drain of N no-op jobs through the course's Worker and a JetStream work queue."""

    def __init__(self, db: Database, *, jobs: int = 2000):
        super().__init__(
            partial(switching.drain_side_by_side, db, jobs=jobs, batches=(1, 100)),
            guess_label="The table's jobs/s at batch 100:",
            guess_unit="jobs/s",
            guess_plausible=(0, 100_000),
        )
