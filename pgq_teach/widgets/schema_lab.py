"""Lesson 10d's labs: views of experiments.schema_changes. Each knob that makes a
result (the lease, how long the report stays open, the lock timeout, the table's
rows) is a bounded control; the controls are read when Run is pressed, so moving
one during a run changes nothing."""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from ..databases import Database
from ..experiments import schema_changes
from ..experiments.schema_changes import LiveMigration, LockSurvey
from .common import result_html
from .lab import ExperimentPanel

_WIDE = {"description_width": "14em"}


def migration_html(result: LiveMigration) -> str:
    """The comparison rows, the lock queue as a table, then the summary."""
    return result.queue_table().html() + result_html(result)


def claims_charts(result: LiveMigration) -> list:
    return [result.chart()]


class MigrationLab(ExperimentPanel):
    """Labs 1 and 2: ALTER TABLE jobs ADD COLUMN behind an open report, with Workers
    running; plain (`lock_timeout_ms=None`, the freeze) or through `pgq_teach.migrate`
    with a lock timeout and retries (the fix)."""

    def __init__(
        self,
        db: Database,
        *,
        lock_timeout_ms: int | None = None,
        lease_s: float = 1.0,
        hold_s: float = 3.0,
        rows: int = 5_000,
    ):
        self.db = db
        self.lease_s = W.BoundedFloatText(
            value=lease_s, min=0.5, max=10, step=0.5, description="lease, s", style=_WIDE
        )
        self.hold_s = W.BoundedFloatText(
            value=hold_s, min=0.5, max=20, step=0.5, description="report open for, s", style=_WIDE
        )
        self.rows = W.BoundedIntText(value=rows, min=100, max=100_000, description="jobs queued", style=_WIDE)
        knobs: list[W.Widget] = [self.lease_s, self.hold_s, self.rows]
        self.lock_timeout_ms: W.BoundedIntText | None = None
        if lock_timeout_ms is not None:
            self.lock_timeout_ms = W.BoundedIntText(
                value=lock_timeout_ms, min=10, max=10_000, description="lock_timeout, ms", style=_WIDE
            )
            knobs.append(self.lock_timeout_ms)
        self._settings: dict[str, Any] = {}
        super().__init__(
            self._experiment,
            migration_html,
            charts=claims_charts,
            guess_label="Longest time with no claim at all?",
            guess_unit="s",
            guess_plausible=(0, 60),
            settings=knobs,
            css_class="pgq-migration-lab",
        )

    def settings(self) -> dict[str, Any]:
        """What the next run will use, read from the controls."""
        chosen = {"lease_s": self.lease_s.value, "hold_s": self.hold_s.value, "rows": self.rows.value}
        if self.lock_timeout_ms is not None:
            chosen["lock_timeout_ms"] = self.lock_timeout_ms.value
        return chosen

    def start(self) -> bool:
        if self.runner.busy:
            return False
        self._settings = self.settings()
        return super().start()

    def _experiment(self, *, progress, stop, guess) -> LiveMigration:
        if self.lock_timeout_ms is None:
            return schema_changes.freeze(self.db, **self._settings, guess=guess, progress=progress, stop=stop)
        return schema_changes.fix(self.db, **self._settings, guess=guess, progress=progress, stop=stop)


def survey_html(result: LockSurvey) -> str:
    """The table of changes, then the comparison rows and the summary."""
    return result.table().html() + result_html(result)


def survey_charts(result: LockSurvey) -> list:
    return [result.chart()]


class LocksLab(ExperimentPanel):
    """Lab 3: each kind of schema change at the lesson's size and 10 times it: the lock
    it holds on jobs, whether a read and a write wait for it, how long it takes."""

    def __init__(self, db: Database, *, rows: int = 20_000):
        self.db = db
        self.rows = W.BoundedIntText(
            value=rows, min=1_000, max=500_000, step=1_000, description="rows (and 10 times)", style=_WIDE
        )
        self._rows = rows
        super().__init__(
            self._experiment,
            survey_html,
            charts=survey_charts,
            guess_label="Volatile default at 10 times the rows?",
            guess_unit="ms",
            guess_plausible=(1, 60_000),
            settings=[self.rows],
            css_class="pgq-locks-lab",
        )

    def start(self) -> bool:
        if self.runner.busy:
            return False
        self._rows = self.rows.value
        return super().start()

    def _experiment(self, *, progress, stop, guess) -> LockSurvey:
        sizes = (self._rows, 10 * self._rows)
        return schema_changes.which_locks(self.db, sizes=sizes, guess=guess, progress=progress, stop=stop)
