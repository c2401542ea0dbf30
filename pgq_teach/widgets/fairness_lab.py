"""Lesson 10b's labs, each one line in the notebook: one tenant's flood under the FIFO and the
fair claim (`FloodLab`), and an urgent job behind a backlog (`UrgentLab`).

Thin: each is an `ExperimentPanel` over its experiment (pgq_teach.experiments.fairness and
.priorities), with the knobs that make its result as number boxes the experiment reads when
Run is pressed. Headless, `lab.run_and_wait()` returns the result.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from ..databases import Database
from ..experiments import fairness, priorities
from .lab import ExperimentPanel

_WIDE = {"description_width": "initial"}  # the whole label, never cut to "…"


def knob(value: int, low: int, high: int, label: str) -> W.BoundedIntText:
    """A bounded whole number whose <label> names the knob."""
    return W.BoundedIntText(value=value, min=low, max=high, description=label, style=_WIDE)


def one_chart(result: Any) -> list:
    return [result.chart()]


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
            charts=one_chart,
            settings=[W.HBox([self.flood, self.tenants, self.each]), W.HBox([self.batch, self.per_tenant])],
            guess_label="Under the FIFO claim, how many jobs are claimed before a small tenant's, at p50?",
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
            guess_unit="jobs",
            guess_plausible=(0, 100_000),
        )
