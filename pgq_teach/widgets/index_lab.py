"""Lesson 08's displays: results from experiments.indexes beside the guide's
figures. They are the `render` half of an ExperimentPanel, or called directly."""

from __future__ import annotations

from html import escape

from ..experiments.indexes import FULL_INDEX, READY_INDEX, DrainedIndex, IndexSizes, ReadPlans
from .common import comparison_html


def _pre(text: str) -> str:
    return f"<pre class='pgq-summary'>{escape(text)}</pre>"


def sizes_html(result: IndexSizes, guess: int | None = None) -> str:
    """The guess is how many times bigger the full index is."""
    result.guess = guess or None
    g = result.guide.values
    rows = [
        ("partial ready index, kB", None, round(result.kb(READY_INDEX)), g["partial_kb"]),
        ("full (status, run_at) index, kB", None, round(result.kb(FULL_INDEX)), g["full_kb"]),
        ("full / partial, times", result.guess, round(result.ratio), round(g["full_kb"] / g["partial_kb"])),
    ]
    return comparison_html(rows, version=result.server_version) + result.chart_svg() + _pre(result.summary())


def drained_html(result: DrainedIndex, guess: int | None = None) -> str:
    """The guess is the ready index's size after the drain, in kB."""
    result.guess = guess or None
    rows = [
        (
            "ready index after the drain, kB",
            result.guess,
            round(result.after_drain_kb),
            result.guide.values["kb"],
        ),
        ("after VACUUM, kB", None, round(result.after_vacuum_kb), "(not measured)"),
        ("after REINDEX INDEX CONCURRENTLY, kB", None, round(result.after_reindex_kb), "(not measured)"),
    ]
    return comparison_html(rows, version=result.server_version) + result.chart_svg() + _pre(result.summary())


def plans_html(result: ReadPlans, guess: int | None = None) -> str:
    """The guess is the buffers the parameterised read needs."""
    result.guess = guess or None
    rows = [
        ("literal 'ready': buffers", None, result.literal.buffers, None),
        ("status = $1, generic plan: buffers", result.guess, result.generic.buffers, None),
    ]
    return comparison_html(rows, version=result.server_version) + _pre(result.summary())
