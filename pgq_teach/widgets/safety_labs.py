"""Lesson 10c's labs, each one line in the notebook: a double click (`DoubleClickLab`), a hung
handler (`HungHandlerLab`) and the alert that retries hid (`LateInvoiceLab`).

Thin: each is an `ExperimentPanel` over its experiment (pgq_teach.experiments.uniqueness,
.timeouts and .alerts), whose knobs are labelled number boxes read when Run is pressed.
Headless, `lab.run_and_wait()` returns the result.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from ..databases import Database
from ..experiments import alerts, timeouts, uniqueness
from .lab import ExperimentPanel

_LABEL = {"description_width": "initial"}  # the whole label shows, never cut to "…"


def seconds_box(value: float, low: float, high: float, label: str) -> W.BoundedFloatText:
    return W.BoundedFloatText(
        value=value, min=low, max=high, step=0.5, description=f"{label} (s)", style=_LABEL
    )


def count_box(value: int, low: int, high: int, label: str) -> W.BoundedIntText:
    return W.BoundedIntText(value=value, min=low, max=high, description=label, style=_LABEL)


class DoubleClickLab(ExperimentPanel):
    """Two sessions enqueue one order's created job with one unique key at once."""

    def __init__(self, db: Database, *, order_id: int = 101):
        self.order_id = count_box(order_id, 1, 10**9, "order id")

        def experiment(**run: Any) -> uniqueness.DoubleClickResult:
            return uniqueness.double_click(db, order_id=self.order_id.value, **run)

        super().__init__(
            experiment,
            settings=[self.order_id],
            guess_label="How many order_created jobs do the two clicks make?",
            guess_unit="jobs",
            guess_plausible=(0, 2),
        )


class HungHandlerLab(ExperimentPanel):
    """A hung handler under the heartbeat alone, under a job timeout, and with every executor stuck."""

    def __init__(self, db: Database, *, lease_s: float = 2.0, watch_s: float = 4.0, timeout_s: float = 1.0):
        self.lease = seconds_box(lease_s, 1, 60, "lease")
        self.watch = seconds_box(watch_s, 1, 120, "watch")
        self.timeout = seconds_box(timeout_s, 0.1, 60, "job timeout")
        self.backoff = seconds_box(600, 60, 86_400, "backoff_base_s")

        def experiment(**run: Any) -> timeouts.HungResult:
            return timeouts.hung_handler(
                db,
                lease_s=self.lease.value,
                watch_s=self.watch.value,
                timeout_s=self.timeout.value,
                backoff_base_s=self.backoff.value,
                **run,
            )

        super().__init__(
            experiment,
            settings=[W.HBox([self.lease, self.watch]), W.HBox([self.timeout, self.backoff])],
            guess_label="Heartbeat alone: how long past its first lease does the hung job run?",
            guess_unit="s",
            guess_plausible=(0, 120),
        )


class LateInvoiceLab(ExperimentPanel):
    """Invoices, a few retried once by the kind's backoff: what the dead-jobs alert and the p99 see."""

    def __init__(self, db: Database, *, jobs: int = 200, late: int = 5, backoff_base_s: float = 2.0):
        self.jobs = count_box(jobs, 1, 100_000, "invoices")
        self.late = count_box(late, 0, 100_000, "failing their first try")
        self.backoff = seconds_box(backoff_base_s, 0.1, 60, "backoff_base_s")

        def experiment(**run: Any) -> alerts.LateResult:
            return alerts.late_invoices(
                db, jobs=self.jobs.value, late=self.late.value, backoff_base_s=self.backoff.value, **run
            )

        super().__init__(
            experiment,
            settings=[W.HBox([self.jobs, self.late, self.backoff])],
            guess_label="Enqueue-to-done at p99, in seconds?",
            guess_unit="s",
            guess_plausible=(0, 600),
        )
