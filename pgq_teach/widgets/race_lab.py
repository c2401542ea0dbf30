"""The race lab (lesson 01): pick how many workers drain how many jobs, and
how they claim; guess how many jobs run more than once; run it on the live
server and see the count beside the guide's, with a timeline of every run.

All the computing happens in `experiments.race` (run_race, RaceResult);
this module only lays out controls and turns a result into HTML.

Headless:

    lab = RaceLab(db)
    lab.run_button.click()
    result = lab.wait()      # the RaceResult, or the experiment's error raised again
"""

from __future__ import annotations

import re
from html import escape

import ipywidgets as W

from ..databases import Database
from ..experiments.race import MODES, RaceResult, run_race
from ..guide import figure
from .common import ExperimentPanel, comparison_html

GUIDE = figure(1)
# The only settings the guide measured; other settings make its figure a loose reference.
GUIDE_SETTINGS = {"mode": "naive", "workers": GUIDE.values["workers"],
                  "jobs": GUIDE.values["jobs"], "work_ms": GUIDE.values["work_ms"]}
GUESS_LABEL = "how many jobs run more than once?"
_WIDE = {"description_width": "initial"}


# --- reading the guide's figure #1 against this server ------------------------


def guide_rows() -> dict[int, str]:
    """The guide's count of jobs run more than once, by PostgreSQL major version."""
    pg16, pg18 = GUIDE.values["pg16"], GUIDE.values["pg18"]
    return {
        16: f"{min(pg16)}–{max(pg16)} (three runs: {', '.join(str(n) for n in pg16)})",
        18: f"{min(pg18)}–{max(pg18)}",
    }


def major_version(version: str) -> int | None:
    """16 from "16.15", 18 from "18beta1"; None when there is no leading number."""
    found = re.match(r"\s*(\d+)", version or "")
    return int(found.group(1)) if found else None


def guide_version_for(version: str) -> int:
    """Which of the guide's versions to compare with: this server's major
    version when the guide measured it, else the nearest (ties go newer)."""
    measured = sorted(guide_rows())
    major = major_version(version)
    if major is None:
        return measured[-1]
    return min(measured, key=lambda v: (abs(v - major), -v))


def guide_figure_for(result: RaceResult) -> str:
    """What the guide's column says for this run."""
    if result.mode != "naive":
        return "none: a claim that locks the row never hands it out twice"
    matched = guide_version_for(result.server_version)
    text = f"{guide_rows()[matched]} on PostgreSQL {matched}"
    settings = {"mode": result.mode, "workers": result.workers, "jobs": result.jobs, "work_ms": result.work_ms}
    if settings != GUIDE_SETTINGS:
        text += " (measured with 8 workers, 400 jobs, 10 ms; yours differ)"
    return text


# --- the result as HTML ---------------------------------------------------------


def _headline(result: RaceResult) -> str:
    stopped = " <i>(stopped early)</i>" if result.stopped else ""
    return (
        f'<p class="pgq-headline" style="font-size:1.2em">Jobs run more than once: '
        f'<b class="pgq-run-twice">{result.run_more_than_once:,}</b> of {result.jobs:,}'
        f" <span style='color:#555'>({escape(MODES[result.mode])})</span>{stopped}</p>"
    )


def _guide_table(result: RaceResult) -> str:
    matched = guide_version_for(result.server_version)
    rows = []
    for version, text in guide_rows().items():
        mark = f" ◀ compared with this server (PostgreSQL {escape(result.server_version)})" if version == matched else ""
        weight = "bold" if version == matched else "normal"
        rows.append(f"<tr style='font-weight:{weight}'><td>PostgreSQL {version}</td><td>{escape(text)}{mark}</td></tr>")
    return (
        f'<table class="pgq-guide"><caption style="text-align:left">guide #{GUIDE.number}: '
        f"{escape(GUIDE.experiment)} — jobs claimed more than once</caption>{''.join(rows)}</table>"
    )


def _timing(result: RaceResult) -> str:
    return (
        f'<p class="pgq-timing">Elapsed <b>{result.elapsed:.2f} s</b> for {result.total_runs:,} runs. '
        f"Ideal: {result.serial_ideal:.2f} s serial (one job at a time), "
        f"{result.shared_ideal:.2f} s with perfect sharing across {result.workers} workers.</p>"
    )


def render(result: RaceResult, guess: int | None) -> str:
    """The whole result panel: headline, comparison, the guide, timing, timeline."""
    table = comparison_html(
        [
            ("jobs run more than once", guess, result.run_more_than_once, guide_figure_for(result)),
            ("total runs", None, result.total_runs, None),
            ("jobs done", None, result.done, None),
            ("elapsed, s", None, result.elapsed, None),
        ],
        version=result.server_version,
    )
    return "".join([_headline(result), table, _guide_table(result), _timing(result), result.timeline_svg()])


# --- the widget -------------------------------------------------------------------


class RaceLab(ExperimentPanel):
    """Workers, jobs, work per job and claim mode; a guess; Run, Stop, progress;
    then the result beside the guide's figure #1."""

    def __init__(self, db: Database, *, workers: int = 8, jobs: int = 400, work_ms: int = 10,
                 mode: str = "naive"):
        self.db = db
        self.workers = W.IntSlider(value=workers, min=1, max=16, description="workers", style=_WIDE)
        self.jobs = W.IntSlider(value=jobs, min=10, max=2_000, step=10, description="jobs", style=_WIDE)
        self.work_ms = W.IntSlider(value=work_ms, min=0, max=50, description="work per job, ms", style=_WIDE)
        self.mode = W.Dropdown(options=[(label, key) for key, label in MODES.items()], value=mode,
                               description="claim", style=_WIDE, layout=W.Layout(width="28em"))
        self._settings: dict = {}
        super().__init__(self._experiment, render, guess_label=GUESS_LABEL,
                         settings=[self.workers, self.jobs, self.work_ms, self.mode],
                         css_class="pgq-race-lab")

    def settings(self) -> dict:
        """What the next run will use, read from the controls."""
        return {"workers": self.workers.value, "jobs": self.jobs.value, "work_ms": self.work_ms.value,
                "mode": self.mode.value, "guess": self.guess.value}

    def start(self) -> bool:
        if self.runner.busy:
            return False
        # Read the controls now, on the caller's thread: moving a slider
        # during a run must not change the run.
        self._settings = self.settings()
        return super().start()

    def _experiment(self, progress, stop) -> RaceResult:
        return run_race(self.db, **self._settings, progress=progress, stop=stop)
