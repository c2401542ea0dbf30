"""Pieces every lab widget shares: a background runner that never prints,
the guess / this server / guide comparison, and small HTML helpers."""

from __future__ import annotations

import inspect
import math
import threading
from collections.abc import Callable, Sequence
from html import escape
from typing import Any, TypeVar

import ipywidgets as W


class Runner:
    """Runs one experiment at a time on a thread.

    The thread never prints: it reports through `on_done(result)` and
    `on_error(exc)`, which should only set widget traits. `wait()` joins the
    thread and raises again any error it hit, so a notebook cell (and nbval)
    sees the failure.
    """

    def __init__(self, on_done: Callable[[Any], None], on_error: Callable[[BaseException], None]):
        self.on_done, self.on_error = on_done, on_error
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None
        self.result: Any = None
        self.error: BaseException | None = None

    @property
    def busy(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def start(self, fn: Callable[[threading.Event], Any]) -> bool:
        """Start fn(stop_event) unless one is already running; False if busy."""
        if self.busy:
            return False
        self.stop_event = threading.Event()
        self.result, self.error = None, None

        def body():
            try:
                self.result = fn(self.stop_event)
            except BaseException as exc:  # kept, shown, and raised again by wait()
                self.error = exc
                self.on_error(exc)
            else:
                self.on_done(self.result)

        self.thread = threading.Thread(target=body, daemon=True)
        self.thread.start()
        return True

    def stop(self) -> None:
        self.stop_event.set()

    def wait(self, timeout: float | None = None) -> Any:
        if self.thread is not None:
            self.thread.join(timeout)
            if self.thread.is_alive():
                raise TimeoutError(f"the experiment was still running after {timeout} s")
        if self.error is not None:
            raise self.error
        return self.result


def error_html(exc: BaseException) -> str:
    """A clear, one-paragraph error for a widget's status area."""
    return (
        f'<div class="pgq-error" style="color:#b00020"><b>{escape(type(exc).__name__)}:</b> '
        f"{escape(str(exc))}</div>"
    )


TABLE_STYLE = (
    "<style>.pgq-table{border-collapse:collapse}"
    ".pgq-table td,.pgq-table th{padding:4px 12px;text-align:left;border-bottom:1px solid #ddd}"
    "</style>"
)
GUESS_WIDTH = "12em"  # wide enough to read what you type (at least 8 characters)


def cell_html(value: Any) -> str:
    if value is None:
        return "<td>–</td>"
    if isinstance(value, float):
        return f"<td>{value:,.2f}</td>"
    if isinstance(value, int):
        return f"<td>{value:,}</td>"
    return f"<td>{escape(str(value))}</td>"


def comparison_html(rows: list[tuple[str, Any, Any, Any]], *, version: str = "") -> str:
    """A table of (measure, your guess, this server, the guide), from a result's comparison()."""
    head = "<tr><th>measure</th><th>your guess</th><th>this server</th><th>the guide</th></tr>"
    body = "".join(
        f"<tr><td>{escape(m)}</td>{cell_html(g)}{cell_html(s)}{cell_html(r)}</tr>" for m, g, s, r in rows
    )
    note = (
        f"<caption style='caption-side:bottom'>this server: PostgreSQL {escape(version)}</caption>"
        if version
        else ""
    )
    return f'{TABLE_STYLE}<table class="pgq-compare pgq-table">{head}{body}{note}</table>'


def result_html(result: Any) -> str:
    """Any experiment result: its comparison table, then its summary."""
    return (
        comparison_html(result.comparison(), version=result.server_version)
        + f"<pre class='pgq-summary'>{escape(result.summary())}</pre>"
    )


class Prediction(W.HBox):
    """The 'predict, then run' field: a label and a box wide enough to read.
    Empty means no guess; `value` is the number typed, or None (also when it
    is not a number or falls outside `minimum`..`maximum`)."""

    def __init__(
        self,
        description: str,
        value: float | None = None,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        empty: float | None = None,
    ):
        self.minimum, self.maximum, self.empty = minimum, maximum, empty
        self.label = W.HTML(value=escape(description))
        shown = "" if value is None or value == empty else f"{value:g}"
        self.box = W.Text(value=shown, placeholder="no guess", layout=W.Layout(width=GUESS_WIDTH))
        super().__init__([self.label, self.box], layout=W.Layout(align_items="center", grid_gap="8px"))
        self.add_class("pgq-guess")

    @property
    def value(self) -> float | None:
        text = self.box.value.strip().replace(",", "")
        try:
            number = float(text)
        except ValueError:
            return self.empty
        if (
            not math.isfinite(number)
            or (self.minimum is not None and number < self.minimum)
            or (self.maximum is not None and number > self.maximum)
        ):
            return self.empty
        return int(number) if number.is_integer() else number

    @value.setter
    def value(self, number: float | None) -> None:
        self.box.value = "" if number is None else f"{number:g}"


def guess_field(
    description: str,
    value: float | None = None,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
) -> Prediction:
    """The 'predict, then run' field: `value` is None until the learner types
    a number, so a result can say "no guess" rather than 0."""
    return Prediction(description, value, minimum=minimum, maximum=maximum)


def prediction(
    description: str, value: float = 0, *, minimum: float | None = 0, maximum: float | None = None
) -> Prediction:
    """The same wide field for lessons that read an unmade guess as 0 (their
    code formats `.value` as a number); new lessons use guess_field."""
    return Prediction(description, value, minimum=minimum, maximum=maximum, empty=0)


def accepts(function: Callable[..., Any], name: str) -> bool:
    """Whether `function` takes the keyword `name` (or any keyword)."""
    parameters = inspect.signature(function).parameters.values()
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in parameters)


def positional_count(function: Callable[..., Any]) -> int:
    parameters = inspect.signature(function).parameters.values()
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


class ProgressRelay:
    """Hands progress to a widget from one long-lived thread, at most every
    `interval` seconds, while the experiment's threads only record it.

    Why: a widget trait set from many short-lived worker threads sends its
    message from each of them, and that can leave the kernel (ipykernel 7)
    seconds late in reporting that the cell finished, which fails nbval's
    wait for output. One sender avoids it, and a bar needs no more than ten
    updates a second anyway."""

    def __init__(self, show: Callable[[int, int], None], interval: float = 0.1):
        self.show, self.interval = show, interval
        self.latest: tuple[int, int] | None = None
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.thread = threading.Thread(target=self._forward, daemon=True)

    def update(self, done: int, total: int) -> None:
        with self.lock:
            # worker threads report out of order: keep the furthest
            if self.latest is None or self.latest[1] != total or done > self.latest[0]:
                self.latest = (done, total)

    def _forward(self) -> None:
        shown = None
        while True:
            last_round = self.finished.wait(self.interval)
            with self.lock:
                latest = self.latest
            if latest is not None and latest != shown:
                self.show(*latest)
                shown = latest
            if last_round:
                return

    def __enter__(self) -> ProgressRelay:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.finished.set()
        self.thread.join()


def chart_box() -> W.Output:
    """Where a widget shows its charts: an Output, since a chart is drawn by
    JupyterLab from its Vega-Lite mime bundle, not written as HTML."""
    return styled(W.Output(), "pgq-chart-box")


def show_charts(box: W.Output, charts: Sequence[Any]) -> None:
    """Show these charts in `box` in place of what it showed (None is left
    out). Safe from a worker thread: it sets the Output's outputs, it prints nothing."""
    box.outputs = ()
    for chart in charts:
        if chart is not None:
            box.append_display_data(chart)


class ExperimentPanel(W.VBox):
    """Predict, then run: a guess field, Run and Stop, a progress bar, and the
    result, for any experiment function.

    `experiment(progress=, stop=, guess=)` runs on a thread and returns a
    result object, which carries the guess read when Run was pressed;
    `render(result)` turns it into HTML (the comparison table, the summary);
    `charts(result)`, when given, returns the charts to show above it.
    A new run clears the old result first.
    Settings widgets passed in `settings` sit above the buttons; the
    experiment reads them itself. Headless: `panel.run_button.click()`, then
    `panel.wait()` returns the result or raises the experiment's error.
    """

    def __init__(
        self,
        experiment: Callable[..., Any],
        render: Callable[..., str] = result_html,  # render(result), or render(result, guess) from before
        *,
        guess_label: str | None = None,
        guess_value: float | None = None,
        settings: list[W.Widget] | None = None,
        css_class: str = "pgq-panel",
        charts: Callable[[Any], Sequence[Any]] | None = None,
    ):
        self.experiment, self.render, self.charts = experiment, render, charts
        self.guess = guess_field(guess_label, guess_value) if guess_label else None
        self.run_button = W.Button(description="Run", button_style="primary", icon="play")
        self.stop_button = W.Button(description="Stop", icon="stop", disabled=True)
        self.progress = W.IntProgress(value=0, min=0, max=100, description="progress")
        self.status = styled(W.HTML(value=""), "pgq-status")
        self.output = styled(W.HTML(value=""), "pgq-result")
        self.chart_box = chart_box()
        self.runner = Runner(self._done, self._failed)
        self.run_guess: float | None = None
        self.run_button.on_click(lambda _: self.start())
        self.stop_button.on_click(lambda _: self.runner.stop())
        controls = list(settings or []) + ([self.guess] if self.guess else [])
        super().__init__(
            controls
            + [W.HBox([self.run_button, self.stop_button, self.progress]), self.status]
            + ([self.chart_box] if charts else [])
            + [self.output]
        )
        self.add_class(css_class)

    @property
    def result(self) -> Any:
        return self.runner.result

    def start(self) -> bool:
        if self.runner.busy:
            return False
        self.run_button.disabled, self.stop_button.disabled = True, False
        self.progress.value = 0
        self.output.value = ""  # the old result must not sit under "running…"
        show_charts(self.chart_box, [])
        self.status.value = "running…"
        self.run_guess = self.guess.value if self.guess else None  # read now, on the caller's thread
        return self.runner.start(lambda stop: self._run(stop, self.run_guess))

    def _run(self, stop: threading.Event, guess: float | None) -> Any:
        with ProgressRelay(self._progress) as relay:
            if accepts(self.experiment, "guess"):
                return self.experiment(progress=relay.update, stop=stop, guess=guess)
            # an experiment written as (progress, stop), from before results carried the guess
            return self.experiment(relay.update, stop)

    def _progress(self, done: int, total: int) -> None:
        self.progress.max = max(total, 1)
        self.progress.value = min(done, total)

    def _finish(self) -> None:
        self.run_button.disabled, self.stop_button.disabled = False, True

    def _done(self, result: Any) -> None:
        if positional_count(self.render) >= 2:  # a render(result, guess) from before
            self.output.value = self.render(result, self.run_guess)
        else:
            self.output.value = self.render(result)
        if self.charts:
            show_charts(self.chart_box, self.charts(result))
        self.status.value = "stopped early" if getattr(result, "stopped", False) else "done"
        self._finish()

    def _failed(self, exc: BaseException) -> None:
        self.status.value = error_html(exc)
        self._finish()

    def wait(self, timeout: float | None = None) -> Any:
        return self.runner.wait(timeout)

    def run_and_wait(self, timeout: float | None = None) -> Any:
        """Press Run unless the learner already has, then wait for the result.
        Lets a notebook run top to bottom while a reader can still type a guess
        and press Run by hand first."""
        if self.result is None and not self.runner.busy:
            self.run_button.click()
        result = self.wait(timeout)
        if result is None:  # experiments always return a result; None means nothing ran
            raise RuntimeError("Pressing Run started no experiment, so there is no result to show.")
        return result


WidgetT = TypeVar("WidgetT", bound=W.DOMWidget)


def styled(widget: WidgetT, *css: str) -> WidgetT:
    """The widget with these CSS classes added (the browser tests find widgets by
    class), so a lab builds and names a widget in one line."""
    for name in css:
        widget.add_class(name)
    return widget


def replay_button(description: str) -> W.Button:
    """The primary button that plays a lab's scripted sequence (class pgq-replay)."""
    button = W.Button(
        description=description, button_style="primary", icon="play", layout=W.Layout(width="auto")
    )
    return styled(button, "pgq-replay")
