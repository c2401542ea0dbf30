"""The fencing lab (lesson 05): the guide's stalled-worker sequence as a
timeline with lanes for A, B and the reaper, played step by step, with the
customer's inbox counted under a plain or an idempotent handler; and a chart
of a long job run with and without a heartbeat.

Thin: the runs are `stale_worker()` and `long_job()` from
pgq_teach.experiments.fencing. Headless: `lab.run_button.click(); lab.wait()`,
then `lab.step_button.click()` shows one more step, `lab.play_button.click()`
and `lab.wait_play()` show the rest.

The charts are the results' own (`FencingResult.chart(shown)`, named lanes
A, B and the reaper with numbered steps; `LongJobResult.chart()`, a lane for
the moving deadline), shown in an Output.
"""

from __future__ import annotations

import threading
from functools import partial

import ipywidgets as W

from .. import measurements, tables
from ..databases import Database
from ..experiments.fencing import HANDLERS, Event, FencingResult, LongJobResult, long_job, stale_worker
from ..tables import Column, Table
from .common import chart_box, guess_field, result_html, show_charts, styled
from .lab import ExperimentPanel, Lab, button

PLAY_STEP_S = 0.6


STEP_COLUMNS = [
    Column("step", tables.COUNT),
    Column("at", tables.NUMBER, unit="s"),
    Column("who"),
    Column("what"),
]


def steps_html(events: list[Event], shown: int) -> str:
    """The steps shown so far, one row (class pgq-step-row) each."""
    rows = [[n, e.t_s, e.lane, e.what] for n, e in enumerate(events[:shown], start=1)]
    return Table(
        STEP_COLUMNS, rows, css="pgq-steps", row_attrs=[{"class": "pgq-step-row"}] * len(rows)
    ).html()


def long_job_chart(result: LongJobResult) -> list:
    """For an ExperimentPanel: the runs chart (`LongJobResult.chart`)."""
    return [result.chart()]


class FencingLab(Lab):
    """Run the stalled-worker sequence, then step or play through it; done
    once every step is showing."""

    def __init__(self, db, lease_s: float = 1.0):
        self.db, self.lease_s = db, lease_s
        self.shown = 0
        self._play_thread: threading.Thread | None = None
        self._play_stop = threading.Event()
        self.handler = W.ToggleButtons(options=list(HANDLERS), value="plain", description="handler")
        self.guess = guess_field(
            "Your guess: receipts in the customer's inbox",
            unit="receipts",
            plausible=(0, 10),
            minimum=0,
            maximum=10,
        )
        self.run_button = button("Run", "pgq-run", button_style="primary", icon="play")
        self.step_button = button("Step", "pgq-step-button", icon="step-forward", disabled=True)
        self.play_button = button("Play", "pgq-play", icon="forward", disabled=True)
        self.chart = styled(chart_box(), "pgq-timeline")
        self.steps = styled(W.HTML(value=""), "pgq-steps-table")
        self.output = styled(W.HTML(value=""), "pgq-result")
        self.run_button.on_click(lambda _: self.start())
        self.step_button.on_click(lambda _: self.step())
        self.play_button.on_click(lambda _: self.play())
        status = styled(W.HTML(), "pgq-status")
        super().__init__(
            [
                W.HBox([self.handler, self.guess]),
                W.HBox([self.run_button, self.step_button, self.play_button]),
                status,
                self.chart,
                self.steps,
                self.output,
            ],
            css_class="pgq-fencing-lab",
            status=status,
            next_step="Pick a handler, type your guess, then press Run.",
        )

    @property
    def buttons(self) -> list[W.Button]:
        return [self.run_button]

    def enable(self, on: bool) -> None:
        super().enable(on)
        self.step_button.disabled = self.play_button.disabled = True  # on again once a run has steps

    def start(self) -> bool:
        self._play_stop.set()
        handler, guess = self.handler.value, self.guess.value
        return self.start_work(
            lambda stop: stale_worker(self.db, self.lease_s, handler=handler, guess=guess, stop=stop),
            f"running: A claims, stalls past its {self.lease_s:g} s lease…",
        )

    def wait(self, timeout: float | None = 60) -> FencingResult | None:
        return self.runner.wait(timeout)

    def show(self, result: FencingResult) -> None:
        if result.handler == "plain":
            measurements.record(measurements.STALE_COMPLETION_ROWS, result.a_rows)
        self.shown = 0
        self.output.value = ""
        self.step_button.disabled = self.play_button.disabled = False
        self._draw()

    def step(self) -> bool:
        """Show one more step; False when every step is showing."""
        result = self.result
        if result is None or self.shown >= len(result.events):
            return False
        self.shown += 1
        self._draw()
        return True

    def play(self) -> None:
        """Show the remaining steps one by one, on one thread."""
        if self.result is None or (self._play_thread is not None and self._play_thread.is_alive()):
            return
        self._play_stop = threading.Event()
        stop = self._play_stop
        self.step_button.disabled = self.play_button.disabled = True

        def loop() -> None:
            while not stop.is_set() and self.step():
                stop.wait(PLAY_STEP_S)

        self._play_thread = threading.Thread(target=loop, name="pgq-fencing play", daemon=True)
        self._play_thread.start()

    def wait_play(self, timeout: float = 30) -> None:
        if self._play_thread is not None:
            self._play_thread.join(timeout)

    def _draw(self) -> None:
        result = self.result
        if result is None:  # nothing has run yet
            return
        total = len(result.events)
        show_charts(self.chart, [result.chart(self.shown)])
        self.steps.value = steps_html(result.events, self.shown)
        if self.shown < total:
            self.say(f"{self.shown} of {total} steps shown. Press Step for one more, or Play for the rest.")
            return
        self.step_button.disabled = self.play_button.disabled = True
        self.output.value = result_html(result)
        other = "idempotent" if result.handler == "plain" else "plain"
        self.finish(
            f"done: all {total} steps shown, the result below. "
            f"Pick the {other} handler and press Run to compare."
        )

    def release(self) -> None:
        self._play_stop.set()
        self.wait_play(5)


class LongJobLab(ExperimentPanel):
    """A 3 s job under a 1 s lease on two library Workers, with or without a
    heartbeat: the runs chart, the comparison and the summary."""

    def __init__(self, db: Database, *, heartbeat: bool, lease_s: float = 1.0, work_s: float = 3.0):
        self.heartbeat = heartbeat
        super().__init__(
            partial(long_job, db, heartbeat=heartbeat, lease_s=lease_s, work_s=work_s),
            result_html,
            charts=long_job_chart,
            css_class="pgq-long-job-lab",
            guess_label=f"{'With' if heartbeat else 'Without'} a heartbeat, how many times will the "
            f"{work_s:g} s job run?",
            guess_unit="runs",
            guess_plausible=(1, 10),
        )

    def show(self, result: LongJobResult) -> None:
        if not result.heartbeat and not result.stopped:  # a stopped run counts no runs for lesson 05
            measurements.record(measurements.RUNS_WITHOUT_HEARTBEAT, result.times_run)
        super().show(result)
