"""Lesson 10b's labs, each one line in the notebook: one tenant's flood under the FIFO and the
fair claim (`FloodLab`), an urgent job behind a backlog (`UrgentLab`), starvation and aging
(`StarvationLab`), and a partner's quota (`QuotaLab`).

Thin: each is an `ExperimentPanel` over its experiment (pgq_teach.experiments.fairness,
.priorities and .rate_limits), with the knobs that make its result as number boxes the experiment reads when
Run is pressed. Headless, `lab.run_and_wait()` returns the result. Each has a CSS class of its
own (pgq-flood-lab, pgq-urgent-lab, pgq-starvation-lab, pgq-quota-lab) for the browser tests.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from ..databases import Database
from ..experiments import fairness, priorities, rate_limits
from .lab import ExperimentPanel

_WIDE = {"description_width": "initial"}  # the whole label, never cut to "…"


def knob(value: int, low: int, high: int, label: str) -> W.BoundedIntText:
    """A bounded whole number whose <label> names the knob."""
    return W.BoundedIntText(value=value, min=low, max=high, description=label, style=_WIDE)


def one_chart(result: Any) -> list:
    return [result.chart()]


def flood_chart(result: fairness.FloodResult) -> list:
    """The waits' chart, unless Stop came before any small tenant's job was claimed: no bars."""
    return [result.chart()] if any(result.measured(r) for r in result.runs) else []


class FloodLab(ExperimentPanel):
    """One tenant's flood, then a trickle for the others, drained with each claim."""

    def __init__(
        self, db: Database, *, flood: int = 20_000, tenants: int = 50, each: int = 4, batch: int = 50
    ):
        self.flood = knob(flood, 1, 200_000, "flood tenant's jobs")
        self.tenants = knob(tenants, 1, 1_000, "small tenants")
        self.each = knob(each, 1, 100, "jobs per small tenant")
        self.batch = knob(batch, 1, 1_000, "batch")
        self.per_tenant = knob(1, 1, 1_000, "per_tenant")

        def experiment(**run: Any) -> fairness.FloodResult:
            return fairness.flood(
                db,
                flood=self.flood.value,
                tenants=self.tenants.value,
                each=self.each.value,
                batch=self.batch.value,
                per_tenant=self.per_tenant.value,
                **run,
            )

        super().__init__(
            experiment,
            charts=flood_chart,
            settings=[W.HBox([self.flood, self.tenants, self.each]), W.HBox([self.batch, self.per_tenant])],
            guess_label="Under the FIFO claim, how many jobs are claimed before a small tenant's, at p50?",
            css_class="pgq-flood-lab",
            guess_unit="jobs",
            guess_plausible=(0, 200_000),
        )


class UrgentLab(ExperimentPanel):
    """One urgent job behind a backlog, drained with the FIFO claim, then the priority claim."""

    def __init__(self, db: Database, *, backlog: int = 5_000, batch: int = 50):
        self.backlog = knob(backlog, 1, 100_000, "backlog")
        self.batch = knob(batch, 1, 1_000, "batch")

        def experiment(**run: Any) -> priorities.UrgentResult:
            return priorities.urgent(db, backlog=self.backlog.value, batch=self.batch.value, **run)

        super().__init__(
            experiment,
            settings=[W.HBox([self.backlog, self.batch])],
            guess_label="Under the FIFO claim, how many jobs are claimed before the urgent one?",
            css_class="pgq-urgent-lab",
            guess_unit="jobs",
            guess_plausible=(0, 100_000),
        )


class StarvationLab(ExperimentPanel):
    """A priority-9 job under a steady stream of urgent ones, without and then with aging."""

    def __init__(self, db: Database, *, load: int = 20, rounds: int = 300, age_after_ms: int = 100):
        self.load = knob(load, 1, 1_000, "urgent jobs per round")
        # Enough rounds that even a quick server's run outlasts the aging threshold: a round
        # takes a few milliseconds, so 300 of them last well past 100 ms.
        self.rounds = knob(rounds, 1, 10_000, "rounds")
        self.age_after_ms = knob(age_after_ms, 10, 60_000, "age after, ms")

        def experiment(**run: Any) -> priorities.StarvationResult:
            return priorities.starvation(
                db,
                load=self.load.value,
                rounds=self.rounds.value,
                age_after_s=self.age_after_ms.value / 1000,
                **run,
            )

        super().__init__(
            experiment,
            settings=[W.HBox([self.load, self.rounds, self.age_after_ms])],
            guess_label="Without aging, in which round does the priority-9 job run?",
            css_class="pgq-starvation-lab",
            guess_unit="rounds",
            guess_plausible=(0, 10_000),
        )


class QuotaLab(ExperimentPanel):
    """Workers calling one partner, with no limit and then under the shared rate limit."""

    def __init__(self, db: Database, *, workers: int = 8, per_second: int = 50, seconds: int = 3):
        self.workers = knob(workers, 1, 16, "Workers")
        self.per_second = knob(per_second, 1, 1_000, "limit, calls/s")
        self.seconds = knob(seconds, 1, 30, "seconds per run")

        def experiment(**run: Any) -> rate_limits.QuotaResult:
            return rate_limits.partner_quota(
                db,
                workers=self.workers.value,
                per_second=self.per_second.value,
                seconds=self.seconds.value,
                **run,
            )

        super().__init__(
            experiment,
            charts=one_chart,
            settings=[W.HBox([self.workers, self.per_second, self.seconds])],
            guess_label="With the shared limit, the most calls the partner sees in one second?",
            css_class="pgq-quota-lab",
            guess_unit="calls",
            guess_plausible=(0, 10_000),
        )
