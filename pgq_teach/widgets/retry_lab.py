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

import ipywidgets as W

from .. import measurements, tables
from ..databases import Database
from ..experiments.results import finish
from ..experiments.retries import FailureStep, FailureStepper, JitterHerdResult, ScheduleResult, herd
from ..tables import Column, Table
from .common import chart_box, error_html, guess_field, result_html, show_charts, styled
from .lab import ExperimentPanel, Lab, button

FAILURE_COLUMNS = [
    Column("failure", tables.COUNT),
    Column("job is now"),
    Column("wait set", tables.NUMBER, "s", digits=0),  # one format: "160 s" beside "3,600 s"
    Column("last error"),
]


def steps_html(steps: list[FailureStep]) -> str:
    """One row (class pgq-failure, data-status) per failure so far."""
    rows = [[s.attempt, s.status, s.wait_s if s.status == "ready" else None, s.last_error] for s in steps]
    attrs = [{"class": "pgq-failure", "data-status": s.status} for s in steps]
    return Table(FAILURE_COLUMNS, rows, css="pgq-failures", row_attrs=attrs).html()


def one_chart(result: ScheduleResult | JitterHerdResult) -> list:
    """For an ExperimentPanel: the result's bars (its comparison and summary are result_html)."""
    return [result.chart()]


class RetryLab(Lab):
    """Fail one job, click by click; done once it is dead."""

    def __init__(self, db, *, max_attempts: int = 5):
        self.db, self.max_attempts = db, max_attempts
        self.stepper: FailureStepper | None = None
        self.fail_button = button(
            "Fail it",
            "pgq-fail",
            button_style="danger",
            icon="bolt",
            tooltip="claim the job and fail it with 'HTTP 503 from webhook'",
        )
        self.reset_button = button("Reset", "pgq-reset", icon="refresh", tooltip="a fresh job")
        self.guess = guess_field(
            "Your guess: the longest wait the failures before dead will set, in seconds",
            unit="s",
            plausible=(0, 86_400),
            minimum=0,
        )
        self.table = styled(W.HTML(value=""), "pgq-failures-table")
        self.chart = chart_box()
        self.output = styled(W.HTML(value=""), "pgq-result")
        self.fail_button.on_click(lambda _: self.fail())
        self.reset_button.on_click(lambda _: self.reset())
        status = styled(W.HTML(), "pgq-status")
        super().__init__(
            [
                self.guess,
                W.HBox([self.fail_button, self.reset_button]),
                status,
                self.table,
                self.chart,
                self.output,
            ],
            css_class="pgq-retry-lab",
            status=status,
        )
        self.reset()

    @property
    def buttons(self) -> list[W.Button]:
        return [self.fail_button, self.reset_button]

    @property
    def steps(self) -> list[FailureStep]:
        return list(self.stepper.steps) if self.stepper else []

    @property
    def result(self) -> ScheduleResult:
        return finish(
            ScheduleResult, self.db, steps=self.steps, max_attempts=self.max_attempts, guess=self.guess.value
        )

    def reset(self) -> None:
        if self.closed:
            return
        if self.stepper is not None:
            self.stepper.close()
        self.stepper = FailureStepper(self.db, max_attempts=self.max_attempts)
        self.fail_button.disabled = False
        self.say(f"job {self.stepper.job_id} is ready: max_attempts {self.max_attempts}. Press Fail it.")
        self.table.value = steps_html([])
        show_charts(self.chart, [])
        self.output.value = ""

    def fail(self) -> FailureStep | None:
        stepper = self.stepper
        if stepper is None or self.closed:  # reset() makes one; it runs in __init__
            return None
        try:
            step = stepper.fail_once()
        except Exception as exc:  # shown where the learner looks
            self.say(error_html(exc))
            return None
        if step.status == "dead":
            measurements.record(measurements.RETRY_WAITS_S, self.result.waits_s)
            self.finish(
                f"done: failure {step.attempt} made the job <b>dead</b>, its last error kept. "
                "Press Reset for a fresh job."
            )
            self.fail_button.disabled = True
        else:
            self.say(
                f"failure {step.attempt}: fail.sql set a wait of {round(step.wait_s):,} s. "
                "The lab made the job due at once instead of waiting it out. Press Fail it again."
            )
        self.table.value = steps_html(stepper.steps)
        if any(s.status == "ready" for s in stepper.steps):
            # the comparison, with the learner's guess, once the job is dead
            show_charts(self.chart, [self.result.chart()])
            self.output.value = result_html(self.result) if step.status == "dead" else ""
        return step

    def wait(self, timeout: float | None = None) -> ScheduleResult:
        """Each click has finished by the time it returns: nothing to wait for."""
        return self.result

    def release(self) -> None:
        if self.stepper is not None:
            self.stepper.close()


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
            guess_unit="s",
            guess_plausible=(0, 600),
        )

    def show(self, result: JitterHerdResult) -> None:
        if result.jitter:
            measurements.record(measurements.JITTER_SPREAD_S, round(result.spread_s, 2))
        super().show(result)
