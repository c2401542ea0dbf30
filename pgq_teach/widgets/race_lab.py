"""The race lab (lesson 01): pick how many workers drain how many jobs, and
how they claim; guess how many jobs run more than once; run it on the live
server and see the count beside the guide's, with a timeline of every run.
`SweepLab` runs the naive race for 1 to 16 workers and charts the duplicates.

All the computing happens in `experiments.race` (run_race, RaceResult,
sweep_workers); this module only lays out controls and turns a result into HTML.

Headless:

    lab = RaceLab(db)
    lab.run_button.click()
    result = lab.wait()      # the RaceResult, or the experiment's error raised again
"""

from __future__ import annotations

from html import escape

import ipywidgets as W

from .. import tables
from ..databases import Database
from ..experiments.race import (
    STYLES,
    RaceResult,
    SweepResult,
    guide_rows,
    run_race,
    style_name,
    sweep_workers,
)
from ..tables import Table
from .common import comparison_html, result_html
from .lab import ExperimentPanel

GUESS_LABEL = "Your guess: how many jobs will run more than once?"
_WIDE = {"description_width": "initial"}


def number_box(value: int, low: int, high: int, description: str, step: int = 1) -> W.BoundedIntText:
    """A bounded whole number with a real <label>, changed on Enter or leaving the box."""
    return W.BoundedIntText(
        value=value,
        min=low,
        max=high,
        step=step,
        description=description,
        continuous_update=False,
        style=_WIDE,
        layout=W.Layout(width="24em"),  # the label and a box for 5 digits; not the lab's whole width
    )


def _headline(result: RaceResult) -> str:
    stopped = " <i>(stopped early)</i>" if result.stopped else ""
    return (
        f'<p class="pgq-headline" style="font-size:1.2em">Jobs run more than once: '
        f'<b class="pgq-run-twice">{result.run_more_than_once:,}</b> of {result.jobs:,}'
        f" <span style='color:#555'>({escape(style_name(result.mode))})</span>{stopped}</p>"
    )


def _guide_table(result: RaceResult) -> str:
    rows, attrs = [], []
    for version, text in guide_rows().items():
        matched = version == result.compared_version
        mark = f" ◀ compared with this server (PostgreSQL {result.server_version})" if matched else ""
        rows.append([f"PostgreSQL {version}", text + mark])
        attrs.append({"style": f"font-weight:{'bold' if matched else 'normal'}"})
    title = f"guide #{result.guide.number}: {result.guide.experiment} — jobs claimed more than once"
    heads = tables.columns("the guide's server", "jobs claimed more than once")
    return f"<div>{escape(title)}</div>" + Table(heads, rows, css="pgq-guide", row_attrs=attrs).html()


def _timing(result: RaceResult) -> str:
    return (
        f'<p class="pgq-timing">Elapsed <b>{result.elapsed_s:.2f} s</b> for {result.total_runs:,} runs. '
        f"Ideal: {result.serial_ideal_s:.2f} s serial (one job at a time), "
        f"{result.shared_ideal_s:.2f} s with perfect sharing across {result.workers} workers.</p>"
    )


def render(result: RaceResult) -> str:
    """The whole result panel: headline, comparison, the guide, timing (the timeline is shown apart)."""
    table = comparison_html(result.comparison(), version=result.server_version)
    return "".join([_headline(result), table, _guide_table(result), _timing(result)])


def timeline(result: RaceResult) -> list:
    """The race's runs in one lane per worker."""
    return [result.timeline()]


class RaceLab(ExperimentPanel):
    """Workers, jobs, work per job and claim style; a guess; Run, Stop, progress;
    then the result beside the guide's figure #1."""

    def __init__(
        self, db: Database, *, workers: int = 8, jobs: int = 400, work_ms: int = 10, mode: str = "naive"
    ):
        self.db = db
        # Number boxes, not sliders: a box's <label> names it to a screen reader, where ipywidgets'
        # slider handle has no accessible name (axe-core: aria-input-field-name).
        self.workers = number_box(workers, 1, 16, "workers (1 to 16)")
        self.jobs = number_box(jobs, 10, 2_000, "jobs (10 to 2,000)", step=10)
        self.work_ms = number_box(work_ms, 0, 50, "work per job, ms (0 to 50)")
        self.mode = W.Dropdown(
            options=[(label, key) for key, label in STYLES.items()],
            value=mode,
            description="claim",
            style=_WIDE,
            layout=W.Layout(width="28em"),
        )
        self._settings: dict = {}
        super().__init__(
            self._experiment,
            render,
            charts=timeline,
            guess_label=GUESS_LABEL,
            guess_unit="jobs",
            guess_plausible=(0, 2_000),
            settings=[self.workers, self.jobs, self.work_ms, self.mode],
            css_class="pgq-race-lab",
        )

    def settings(self) -> dict:
        """What the next run will use, read from the controls."""
        return {
            "workers": self.workers.value,
            "jobs": self.jobs.value,
            "work_ms": self.work_ms.value,
            "mode": self.mode.value,
        }

    def start(self) -> bool:
        if self.runner.busy:
            return False
        # Read the controls now, on the caller's thread: moving a slider
        # during a run must not change the run.
        self._settings = self.settings()
        return super().start()

    def _experiment(self, *, progress, stop, guess) -> RaceResult:
        return run_race(self.db, **self._settings, guess=guess, progress=progress, stop=stop)


def sweep_chart(result: SweepResult) -> list:
    """Duplicates against the number of workers."""
    return [result.chart()]


def sweep_html(result: SweepResult) -> str:
    return result_html(result)


class SweepLab(ExperimentPanel):
    """The naive race for 1 to 16 workers, charted: duplicates against worker count."""

    def __init__(
        self,
        db: Database,
        *,
        jobs: int = 200,
        work_ms: int = 10,
        workers: tuple[int, ...] = tuple(range(1, 17)),
    ):
        super().__init__(
            lambda *, progress, stop, guess: sweep_workers(
                db, workers=workers, jobs=jobs, work_ms=work_ms, guess=guess, progress=progress, stop=stop
            ),
            sweep_html,
            charts=sweep_chart,
            guess_label="Your guess: with 4 workers, how many jobs run more than once?",
            guess_unit="jobs",
            guess_plausible=(0, jobs),
            css_class="pgq-sweep-lab",
        )
