"""Lesson 03's labs, one line each in a notebook (`FiveWayLab(db)`): a guess,
Run and Stop, a progress bar, then the result's own comparison table, a
chart where one helps, and the notes its table lacks, each shown once.

    lab = FiveWayLab(db)
    five = lab.run_and_wait()    # presses Run unless you already did
"""

from __future__ import annotations

from functools import partial
from html import escape
from typing import Any

from ..databases import Database
from ..experiments import claims
from ..experiments.claims import BatchDrainResult, FiveWayResult, ZeroWorkResult
from .common import result_html
from .lab import ExperimentPanel


def batch_drain_html(result: BatchDrainResult) -> str:
    return result_html(result)


def five_way_html(result: FiveWayResult) -> str:
    return result_html(result)


def five_way_charts(result: FiveWayResult) -> list:
    """The drain times beside the ideals, then hold + FOR UPDATE's runs in their lanes."""
    hold = result.race("hold_for_update").timeline() if result.elapsed_s["hold_for_update"] else None
    return [result.chart(), hold]


def zero_work_charts(result: ZeroWorkResult) -> list:
    """Each round's drain time."""
    return [result.chart()]


def zero_work_html(result: ZeroWorkResult) -> str:
    verdict = result.verdict()
    return result_html(result) + f"<p class='pgq-verdict'>{escape(verdict)}</p>"


class BatchDrainLab(ExperimentPanel):
    """Guide #5: several workers claim 100,000 jobs in batches of 100."""

    def __init__(self, db: Database, *, jobs: int = 100_000, batch: int = 100, workers: int = 4):
        super().__init__(
            partial(claims.batch_drain, db, jobs=jobs, batch=batch, workers=workers),
            batch_drain_html,
            css_class="pgq-drain-lab",
            guess_label=f"Your guess: how many batches will {jobs:,} jobs take, at {batch} per batch?",
            guess_unit="batches",
            guess_plausible=(1, jobs),
        )


class FiveWayLab(ExperimentPanel):
    """Guide #6: the five claim styles, several rounds each."""

    def __init__(
        self, db: Database, *, rounds: int = 3, workers: int = 8, jobs: int = 400, work_ms: int = 10
    ):
        super().__init__(
            partial(claims.five_way, db, rounds=rounds, workers=workers, jobs=jobs, work_ms=work_ms),
            five_way_html,
            charts=five_way_charts,
            css_class="pgq-five-way-lab",
            guess_label="Your guess: how many seconds will hold + FOR UPDATE take? "
            "(serial ideal 4 s, shared 0.5 s)",
            guess_unit="s",
            guess_plausible=(0, 20),
        )


class ZeroWorkLab(ExperimentPanel):
    """Guide #7: lease claims with and without SKIP LOCKED, no work per job."""

    def __init__(self, db: Database, *, jobs: int = 3000, workers: int = 8, rounds: int = 3):
        super().__init__(
            partial(claims.zero_work, db, jobs=jobs, workers=workers, rounds=rounds),
            zero_work_html,
            charts=zero_work_charts,
            css_class="pgq-zero-work-lab",
            guess_label=f"Your guess: how many milliseconds for {jobs:,} zero-work jobs with SKIP LOCKED?",
            guess_unit="ms",
            guess_plausible=(0, 60_000),
        )


def run_and_wait(panel: ExperimentPanel, timeout: float | None = None) -> Any:
    """Press Run unless the learner already has, then wait for the result
    (the same as `panel.run_and_wait()`, kept for lessons that call it this way)."""
    return panel.run_and_wait(timeout)
