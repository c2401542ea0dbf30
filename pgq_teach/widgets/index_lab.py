"""Lesson 08's displays: results from experiments.indexes beside the guide's
figures. Each draws the result's own comparison rows (its `comparison()`),
summary (charts are shown apart, in an Output); they are the `render` half of an ExperimentPanel, or
called directly."""

from __future__ import annotations

from functools import partial

from ..databases import Database
from ..experiments import indexes
from ..experiments.indexes import DrainedIndex, IndexSizes, ReadPlans
from .common import result_html
from .lab import ExperimentPanel


def sizes_html(result: IndexSizes) -> str:
    """Partial against full index (guide #14); the guess is how many times bigger
    the full one is. Its chart is `result.chart()`."""
    return result_html(result)


def drained_charts(result: DrainedIndex) -> list:
    """The ready index after a drain (guide #15); the guess is its size after the drain, in kB."""
    return [result.chart()]


def plans_html(result: ReadPlans) -> str:
    """The literal against the generic plan (guide #16); the guess is the generic plan's buffers."""
    return result_html(result)


class DrainedIndexLab(ExperimentPanel):
    """Guide #15: the ready index through a drain of `jobs` queued jobs, VACUUM
    and REINDEX INDEX CONCURRENTLY."""

    def __init__(self, db: Database, *, jobs: int = 100_000):
        super().__init__(
            partial(indexes.drained_index, db, jobs=jobs),
            result_html,
            charts=drained_charts,
            guess_label=f"How many kB will the ready index be once {jobs:,} queued jobs have drained?",
            guess_unit="kB",
            guess_plausible=(0, 100_000),
        )
