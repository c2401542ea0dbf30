"""The fencing lab (lesson 05): the guide's stalled-worker sequence as a
timeline with lanes for A, B and the reaper, played step by step, with the
customer's inbox counted under a plain or an idempotent handler; and a chart
of a long job run with and without a heartbeat.

Thin: the runs are `stale_worker()` and `long_job()` from
pgq_teach.experiments.fencing. Headless: `lab.run_button.click(); lab.wait()`,
then `lab.step_button.click()` shows one more step, `lab.play_button.click()`
and `lab.wait_play()` show the rest.

The charts are drawn here rather than with `charts.timeline`, which names its
lanes "worker N" and draws unlabelled bars: this story needs named lanes
(A, B, the reaper) and numbered steps, and the lease chart a lane for the
moving deadline.
"""

from __future__ import annotations

import threading
from functools import partial
from html import escape

import ipywidgets as W

from .. import measurements, tables
from ..charts import frame
from ..databases import Database
from ..experiments.fencing import HANDLERS, Event, FencingResult, LongJobResult, long_job, stale_worker
from ..tables import Column, Table
from .common import guess_field, result_html, styled
from .lab import ExperimentPanel, Lab, button

LANES = ("A", "B", "reaper")
PLAY_STEP_S = 0.6
LEFT, TOP, LANE_H = 70, 24, 30


def lanes(names: tuple[str, ...], width: int) -> list[str]:
    body = []
    for i, name in enumerate(names):
        y = TOP + i * LANE_H
        body.append(f'<text x="4" y="{y + 18}">{escape(name)}</text>')
        body.append(
            f'<rect x="{LEFT}" y="{y}" width="{width - LEFT - 10}" height="{LANE_H - 4}" fill="#f3f3f3"/>'
        )
    return body


def axis(span: float, y: int, width: int) -> list[str]:
    plot_w = width - LEFT - 10
    anchors = ("start", "middle", "middle", "middle", "end")  # the ends stay inside the picture
    return [
        f'<text x="{LEFT + plot_w * i / 4:.0f}" y="{y}" text-anchor="{anchors[i]}">'
        f"{span * i / 4:.1f} s</text>"
        for i in range(5)
    ]


def steps_svg(result: FencingResult, shown: int, *, width: int = 720) -> str:
    """The sequence's first `shown` steps as numbered marks in their lanes;
    A's lease drawn as a band from its claim to its deadline."""
    span = max(result.events[-1].t_s * 1.15, result.lease_s * 1.3)
    plot_w = width - LEFT - 10
    body = lanes(LANES, width)

    def x(t: float) -> float:
        return LEFT + plot_w * t / span

    claim = result.events[0].t_s
    y_a = TOP
    body.append(
        f'<rect class="pgq-lease" x="{x(claim):.1f}" y="{y_a + 2}" '
        f'width="{x(claim + result.lease_s) - x(claim):.1f}" height="{LANE_H - 8}" fill="#c6dbef"/>'
    )
    body.append(
        f'<text x="{x(claim + result.lease_s) - 3:.1f}" y="{y_a + 16}" text-anchor="end">A\'s lease</text>'
    )
    # Steps at nearly the same moment are spread a little so each number stays readable.
    last_x: dict[str, float] = {}
    for n, event in enumerate(result.events[:shown], start=1):
        lane = LANES.index(event.lane)
        cx = max(x(event.t_s), last_x.get(event.lane, -99) + 16)
        last_x[event.lane] = cx
        cy = TOP + lane * LANE_H + (LANE_H - 4) / 2
        hot = "0 row" in event.what
        body.append(
            f'<circle class="pgq-step" cx="{cx:.1f}" cy="{cy:.1f}" r="7" '
            f'fill="{"#d62728" if hot else "#1f77b4"}"/>'
        )
        body.append(f'<text x="{cx:.1f}" y="{cy + 4:.1f}" text-anchor="middle" fill="white">{n}</text>')
    height = TOP + len(LANES) * LANE_H + 20
    body += axis(span, height - 6, width)
    return frame(
        width, height, body, f"A stalls past its {result.lease_s:g} s lease ({result.handler} handler)"
    )


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


def long_job_svg(result: LongJobResult, *, width: int = 720) -> str:
    """Each run of the handler as a bar in its worker's lane (red when its
    completion was fenced out), and a 'lease ends' lane with a tick where the
    deadline stood at each look: still with no heartbeat, marching with one."""
    names = (*(f"W{n}" for n in range(1, result.workers + 1)), "lease ends")
    span = (
        max([r.end_s for r in result.runs] + [t + left for t, _, left in result.lease_samples] + [1.0]) * 1.05
    )
    plot_w = width - LEFT - 10

    def x(t: float) -> float:
        return LEFT + plot_w * t / span

    body = lanes(names, width)
    for r in result.runs:
        y = TOP + names.index(r.worker) * LANE_H
        colour = "#1f77b4" if r.outcome == "done" else "#d62728"
        body.append(
            f'<rect class="pgq-run {r.outcome}" x="{x(r.start_s):.1f}" y="{y + 3}" '
            f'width="{x(r.end_s) - x(r.start_s):.1f}" height="{LANE_H - 10}" fill="{colour}"/>'
        )
        body.append(f'<text x="{x(r.start_s) + 3:.1f}" y="{y + 17}" fill="white">token {r.token}</text>')
    y = TOP + result.workers * LANE_H
    for t, _, left in result.lease_samples:
        body.append(
            f'<line class="pgq-deadline" x1="{x(t + left):.1f}" y1="{y + 3}" x2="{x(t + left):.1f}" '
            f'y2="{y + LANE_H - 7}" stroke="#555"/>'
        )
    height = TOP + len(names) * LANE_H + 20
    body += axis(span, height - 6, width)
    title = (
        f"{result.work_s:g} s of work, {result.lease_s:g} s lease, "
        f"{'with' if result.heartbeat else 'without'} a heartbeat"
    )
    return frame(width, height, body, title)


def long_job_html(result: LongJobResult) -> str:
    """For an ExperimentPanel: the chart, then the result's comparison and summary."""
    return long_job_svg(result) + result_html(result)


class FencingLab(Lab):
    """Run the stalled-worker sequence, then step or play through it; done
    once every step is showing."""

    def __init__(self, db, lease_s: float = 1.0):
        self.db, self.lease_s = db, lease_s
        self.shown = 0
        self._play_thread: threading.Thread | None = None
        self._play_stop = threading.Event()
        self.handler = W.ToggleButtons(options=list(HANDLERS), value="plain", description="handler")
        self.guess = guess_field("Your guess: receipts in the customer's inbox", minimum=0, maximum=10)
        self.run_button = button("Run", "pgq-run", button_style="primary", icon="play")
        self.step_button = button("Step", "pgq-step-button", icon="step-forward", disabled=True)
        self.play_button = button("Play", "pgq-play", icon="forward", disabled=True)
        self.chart = styled(W.HTML(value=""), "pgq-timeline")
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
        return self.run(
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
        self.chart.value = steps_svg(result, self.shown)
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
            long_job_html,
            css_class="pgq-long-job-lab",
            guess_label=f"{'With' if heartbeat else 'Without'} a heartbeat, how many times will the "
            f"{work_s:g} s job run?",
        )

    def show(self, result: LongJobResult) -> None:
        if not result.heartbeat:
            measurements.record(measurements.RUNS_WITHOUT_HEARTBEAT, result.times_run)
        super().show(result)
