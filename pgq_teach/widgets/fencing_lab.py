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
from html import escape

import ipywidgets as W

from .. import measurements
from ..databases import Database
from ..experiments.fencing import HANDLERS, Event, FencingResult, LongJobResult, long_job, stale_worker
from .common import (
    ExperimentPanel,
    Runner,
    chart_box,
    error_html,
    guess_field,
    result_html,
    show_charts,
    styled,
)

PLAY_STEP_S = 0.6


def steps_html(events: list[Event], shown: int) -> str:
    rows = "".join(
        f'<tr class="pgq-step-row"><td>{n}</td><td>{e.t_s:.2f} s</td><td>{escape(e.lane)}</td>'
        f"<td>{escape(e.what)}</td></tr>"
        for n, e in enumerate(events[:shown], start=1)
    )
    return (
        f'<table class="pgq-steps"><tr><th>step</th><th>at</th><th>who</th><th>what</th></tr>{rows}</table>'
    )


def long_job_chart(result: LongJobResult) -> list:
    """For an ExperimentPanel: the runs chart (`LongJobResult.chart`)."""
    return [result.chart()]


class FencingLab(W.VBox):
    """Run the stalled-worker sequence, then step or play through it."""

    def __init__(self, db, lease_s: float = 1.0):
        self.db, self.lease_s = db, lease_s
        self.shown = 0
        self._closed = False
        self._play_thread: threading.Thread | None = None
        self._play_stop = threading.Event()
        self.handler = W.ToggleButtons(options=list(HANDLERS), value="plain", description="handler")
        self.guess = guess_field("Your guess: receipts in the customer's inbox", minimum=0, maximum=10)
        self.run_button = styled(W.Button(description="Run", button_style="primary", icon="play"), "pgq-run")
        self.step_button = styled(
            W.Button(description="Step", icon="step-forward", disabled=True), "pgq-step-button"
        )
        self.play_button = styled(W.Button(description="Play", icon="forward", disabled=True), "pgq-play")
        self.status = styled(W.HTML(value=""), "pgq-status")
        self.chart = styled(chart_box(), "pgq-timeline")
        self.steps = styled(W.HTML(value=""), "pgq-steps-table")
        self.output = styled(W.HTML(value=""), "pgq-result")
        self.runner = Runner(self._done, self._failed)
        self.run_button.on_click(lambda _: self.start())
        self.step_button.on_click(lambda _: self.step())
        self.play_button.on_click(lambda _: self.play())
        super().__init__(
            [
                W.HBox([self.handler, self.guess]),
                W.HBox([self.run_button, self.step_button, self.play_button]),
                self.status,
                self.chart,
                self.steps,
                self.output,
            ]
        )
        self.add_class("pgq-fencing-lab")

    @property
    def result(self) -> FencingResult | None:
        return self.runner.result

    def start(self) -> bool:
        if self._closed or self.runner.busy:
            return False
        self._play_stop.set()
        self.run_button.disabled = self.step_button.disabled = self.play_button.disabled = True
        self.status.value = f"running: A claims, stalls past its {self.lease_s:g} s lease…"
        handler, guess = self.handler.value, self.guess.value
        return self.runner.start(
            lambda stop: stale_worker(self.db, self.lease_s, handler=handler, guess=guess, stop=stop)
        )

    def wait(self, timeout: float | None = 60) -> FencingResult | None:
        return self.runner.wait(timeout)

    def _done(self, result: FencingResult) -> None:
        if result.handler == "plain":
            measurements.record(measurements.STALE_COMPLETION_ROWS, result.a_rows)
        self.shown = 0
        self.output.value = ""
        self._draw()
        self.status.value = f"done: {len(result.events)} steps. Press Step, or Play."
        self.run_button.disabled = False
        self.step_button.disabled = self.play_button.disabled = False

    def _failed(self, exc: BaseException) -> None:
        self.status.value = error_html(exc)
        self.run_button.disabled = False

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
        show_charts(self.chart, [result.chart(self.shown)])
        self.steps.value = steps_html(result.events, self.shown)
        if self.shown == len(result.events):
            self.step_button.disabled = self.play_button.disabled = True
            self.output.value = result_html(result)

    def close(self) -> None:
        self._closed = True
        self._play_stop.set()
        self.runner.stop()
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
        )

    def _done(self, result: LongJobResult) -> None:
        if not result.heartbeat:
            measurements.record(measurements.RUNS_WITHOUT_HEARTBEAT, result.times_run)
        super()._done(result)
