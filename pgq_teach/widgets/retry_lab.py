"""The retry lab (lesson 06): one job and a "Fail it" button. After each
failure it shows the wait fail.sql set, then makes the job due at once so the
next click need not wait (and says so). The fifth failure makes it dead and
keeps its last error.

Thin: the work is `FailureStepper` in pgq_teach.experiments.retries. Each
click runs two short statements on the caller's thread, so `wait()` has
nothing to wait for; it is there so the lab drives like every other:
`lab.fail_button.click(); lab.wait()`.

The waits are drawn as bars (`ScheduleResult.chart`, charts.bars): they double, and bars show a
doubling at a glance where a table of numbers does not.
"""

from __future__ import annotations

from functools import partial
from html import escape

import ipywidgets as W

from .. import measurements
from ..databases import Database
from ..experiments.results import server_fields
from ..experiments.retries import FailureStep, FailureStepper, JitterHerdResult, ScheduleResult, herd
from .common import ExperimentPanel, chart_box, error_html, guess_field, result_html, show_charts, styled


def steps_html(steps: list[FailureStep]) -> str:
    rows = "".join(
        f'<tr class="pgq-failure" data-status="{escape(s.status)}">'
        f"<td>{s.attempt}</td><td>{escape(s.status)}</td>"
        f"<td>{f'{round(s.wait_s):,} s' if s.status == 'ready' else '–'}</td>"
        f"<td>{escape(s.last_error)}</td></tr>"
        for s in steps
    )
    return (
        '<table class="pgq-failures"><tr><th>failure</th><th>job is now</th><th>wait set</th>'
        f"<th>last error</th></tr>{rows}</table>"
    )


def one_chart(result: ScheduleResult | JitterHerdResult) -> list:
    """For an ExperimentPanel: the result's bars (its comparison and summary are result_html)."""
    return [result.chart()]


class RetryLab(W.VBox):
    """Fail one job, click by click."""

    def __init__(self, db, *, max_attempts: int = 5):
        self.db, self.max_attempts = db, max_attempts
        self.stepper: FailureStepper | None = None
        self.fail_button = styled(
            W.Button(
                description="Fail it",
                button_style="danger",
                icon="bolt",
                tooltip="claim the job and fail it with 'HTTP 503 from webhook'",
            ),
            "pgq-fail",
        )
        self.reset_button = styled(
            W.Button(description="Reset", icon="refresh", tooltip="a fresh job"), "pgq-reset"
        )
        self.guess = guess_field(
            "Your guess: the longest wait the failures before dead will set, in seconds", minimum=0
        )
        self.status = styled(W.HTML(value=""), "pgq-status")
        self.table = styled(W.HTML(value=""), "pgq-failures-table")
        self.chart = chart_box()
        self.output = styled(W.HTML(value=""), "pgq-result")
        self.fail_button.on_click(lambda _: self.fail())
        self.reset_button.on_click(lambda _: self.reset())
        super().__init__(
            [
                self.guess,
                W.HBox([self.fail_button, self.reset_button]),
                self.status,
                self.table,
                self.chart,
                self.output,
            ]
        )
        self.add_class("pgq-retry-lab")
        self.reset()

    @property
    def steps(self) -> list[FailureStep]:
        return list(self.stepper.steps) if self.stepper else []

    @property
    def result(self) -> ScheduleResult:
        return ScheduleResult(
            steps=self.steps, max_attempts=self.max_attempts, guess=self.guess.value, **server_fields(self.db)
        )

    def reset(self) -> None:
        if self.stepper is not None:
            self.stepper.close()
        self.stepper = FailureStepper(self.db, max_attempts=self.max_attempts)
        self.fail_button.disabled = False
        self.status.value = (
            f"job {self.stepper.job_id} is ready: max_attempts {self.max_attempts}. Press Fail it."
        )
        self.table.value = steps_html([])
        show_charts(self.chart, [])
        self.output.value = ""

    def fail(self) -> FailureStep | None:
        stepper = self.stepper
        if stepper is None:  # reset() makes one; it runs in __init__
            return None
        try:
            step = stepper.fail_once()
        except Exception as exc:  # shown where the learner looks
            self.status.value = error_html(exc)
            return None
        if step.status == "dead":
            measurements.record(measurements.RETRY_WAITS_S, self.result.waits_s)
            self.status.value = (
                f"failure {step.attempt}: the job is <b>dead</b>, its last error kept. Reset for a fresh job."
            )
            self.fail_button.disabled = True
        else:
            self.status.value = (
                f"failure {step.attempt}: fail.sql set a wait of {round(step.wait_s):,} s. "
                "The lab made the job due at once instead of waiting it out."
            )
        self.table.value = steps_html(stepper.steps)
        if any(s.status == "ready" for s in stepper.steps):
            # the comparison, with the learner's guess, once the job is dead
            show_charts(self.chart, [self.result.chart()])
            self.output.value = result_html(self.result) if step.status == "dead" else ""
        return step

    def wait(self, timeout: float | None = None) -> ScheduleResult:
        return self.result

    def close(self) -> None:
        if self.stepper is not None:
            self.stepper.close()
        self.fail_button.disabled = self.reset_button.disabled = True


class HerdLab(ExperimentPanel):
    """1,000 jobs fail within a moment, each in its own transaction, with
    fail.sql or with its jittered teaching variant: when do they come due?"""

    def __init__(self, db: Database, *, jitter: bool, jobs: int = 1_000):
        super().__init__(
            partial(herd, db, jobs, jitter=jitter),
            result_html,
            charts=one_chart,
            css_class="pgq-herd-lab",
            guess_label=f"Your guess: over how many seconds will the {jobs:,} first retries spread?",
        )

    def _done(self, result: JitterHerdResult) -> None:
        if result.jitter:
            measurements.record(measurements.JITTER_SPREAD_S, round(result.spread_s, 2))
        super()._done(result)
