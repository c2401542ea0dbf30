"""Lesson 03's displays: each turns a result from experiments.claims into
the guess / this server / guide table, plus a chart where one helps. They are
the `render` half of an ExperimentPanel; the experiment half is a plain call.

    panel = ExperimentPanel(lambda progress, stop: claims.five_way(db, progress=progress, stop=stop),
                            render=claims_lab.five_way_html, guess_label="...")
"""

from __future__ import annotations

from html import escape
from typing import Any

from ..experiments.claims import SHORT, BatchDrainResult, FiveWayResult, ZeroWorkResult
from ..experiments.race import MODES
from .common import ExperimentPanel, comparison_html


def _guess(guess: int | None) -> int | None:
    """The box starts at 0, and none of these answers can be 0: treat 0 as
    "no guess" rather than as a prediction of nothing."""
    return guess or None


def _pre(text: str) -> str:
    return f"<pre class='pgq-summary'>{escape(text)}</pre>"


def batch_drain_html(result: BatchDrainResult, guess: int | None) -> str:
    result.guess = guess = _guess(guess)  # kept on the result, so summary() shows it too
    g = result.guide.values
    rows = [
        ("batches", guess, result.batches, g["batches"]),
        ("largest batch, rows", None, result.largest_batch, f"none over {g['batch']}"),
        ("jobs claimed", None, result.total_claimed, g["jobs"]),
        ("jobs claimed more than once", None, result.run_more_than_once, None),
        ("seconds to claim them all", None, result.elapsed, None),
    ]
    return comparison_html(rows, version=result.server_version) + _pre(result.summary())


def five_way_html(result: FiveWayResult, guess: int | None) -> str:
    """The guess is for hold + FOR UPDATE, in seconds."""
    result.guess = guess = _guess(guess)
    rows = [("hold + FOR UPDATE, s (median)", guess, result.median("hold_for_update"),
             f"slower than the {result.guide.values['serial_s']:.1f} s serial ideal")]
    rows += [(f"{SHORT[m]}, s (median)", None, result.median(m), None) for m in MODES if m != "hold_for_update"]
    rows += [
        ("serial ideal, s", None, result.serial_ideal, result.guide.values["serial_s"]),
        ("shared ideal, s", None, result.shared_ideal, result.guide.values["shared_s"]),
        ("naive: jobs run more than once (max)", None, max(result.run_more_than_once["naive"], default=None),
         "212 to 260 (guide #1)"),
    ]
    return comparison_html(rows, version=result.server_version) + result.chart_svg() + _pre(result.summary())


def zero_work_html(result: ZeroWorkResult, guess: int | None) -> str:
    """The guess is for SKIP LOCKED, in milliseconds."""
    result.guess = guess = _guess(guess)
    low, high = result.guide.values["skip_locked_s"]
    wait_low, wait_high = result.guide.values["for_update_s"]

    def ms(seconds):
        return None if seconds is None else round(seconds * 1000)

    rows = [
        ("lease + SKIP LOCKED, ms (median)", guess, ms(result.median("lease_skip_locked")),
         f"{low * 1000:,.0f} to {high * 1000:,.0f}"),
        ("lease + FOR UPDATE, ms (median)", None, ms(result.median("lease_for_update")),
         f"{wait_low * 1000:,.0f} to {wait_high * 1000:,.0f}"),
        ("every job exactly once", None, "yes" if result.every_job_once else "NO", None),
    ]
    verdict = f"<p class='pgq-verdict'>{escape(result.verdict())}</p>"
    return comparison_html(rows, version=result.server_version) + verdict + result.chart_svg() + _pre(result.summary())


def run_and_wait(panel: ExperimentPanel, timeout: float | None = None) -> Any:
    """Press Run unless the learner already has, then wait for the result.
    Lets a notebook run top to bottom while a reader can still type a guess
    and press Run by hand first."""
    if panel.result is None and not panel.runner.busy:
        panel.run_button.click()
    result = panel.wait(timeout)
    if result is None:  # experiments always return a result; None means nothing ran
        raise RuntimeError("Pressing Run started no experiment, so there is no result to show.")
    return result
