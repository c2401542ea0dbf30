"""The lifecycle every lab widget shares, written once: `Lab`.

A lab is view plumbing around an experiment (the model lives in
`pgq_teach.experiments`): it lays out controls, runs the experiment's work on
a thread so the kernel stays free, and shows what comes back. `Lab` owns the
parts each lab used to copy:

- one status line (class `pgq-status`, or the lab's own) that always says what
  to do next, what is running, or that the lab is done;
- the done state: the class `pgq-done` on the lab, set by `finish(text)` when
  the lab's run has ended and cleared by the next `say()` or run;
- `run(work, message)`: the work runs on a `Runner` thread while the lab's
  `buttons` are disabled; `wait()` joins it and raises again any error;
- `close()`: stop the work, let the lab `release()` what it holds, disable
  the buttons, and say so.

`ExperimentPanel` is the common lab: predict, then Run, Stop, a progress bar
and the result. Headless, every lab drives the same way:
`lab.run_button.click(); lab.wait()`, then read `lab.result`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as W

from .common import FOCUS_STYLE, chart_box, error_html, guess_field, result_html, show_charts, styled

DONE = "pgq-done"  # the class a lab carries once its run has ended (the browser tests look for it)
CLOSED_TEXT = "closed: run the cell that made the lab again to start over"
# Every lab's tables get padding and every lab's text wraps, whatever drew them:
# zero specificity (:where), so a table's own style still wins.
LAB_STYLE = (
    "<style>"
    ":where(.pgq-lab) td, :where(.pgq-lab) th { padding: 4px 10px; }"
    ".pgq-lab .pgq-status, .pgq-lab .pgq-lab-status, .pgq-lab .pgq-third-status,"
    " .pgq-lab .pgq-guess .widget-html-content { white-space: normal; line-height: 1.4; height: auto; }"
    ".pgq-lab .widget-html-content { white-space: normal; }"
    ".pgq-lab .widget-dropdown select { text-overflow: clip; }"
    f"{FOCUS_STYLE}"
    "</style>"
)


def button(description: str, css: str | None = None, **options: Any) -> W.Button:
    """A button as wide as its label (ipywidgets' default width cuts a long one
    short with '…'), with the CSS class the browser tests find it by."""
    made = W.Button(description=description, layout=W.Layout(width="auto"), **options)
    return styled(made, css) if css else made


class Runner:
    """Runs one piece of work at a time on a thread.

    The thread never prints: it reports through `on_done(result)` and
    `on_error(exc)`, which should only set widget traits; an error in
    `on_done` (a result the lab cannot draw) goes to `on_error` too. `wait()` joins the
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
                # inside the try: a result the lab cannot draw is an error shown and raised
                # again by wait(), not a traceback on a thread that leaves "running…" behind
                self.on_done(self.result)
            except BaseException as exc:  # kept, shown, and raised again by wait()
                self.error = exc
                self.on_error(exc)

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


class ProgressRelay:
    """Hands progress to a widget from one long-lived thread, at most every
    `interval` seconds, while the experiment's threads only record it.

    Why: a widget trait set from many short-lived worker threads sends its
    message from each of them, and that can leave the kernel (ipykernel 7)
    seconds late in reporting that the cell finished, which fails nbval's
    wait for output. One sender avoids it.

    Four updates a second still read as a moving bar, and each update costs the
    kernel, JupyterLab and the browser a message and a redraw: measured on 2
    CPUs, a bar updated ten times a second took about 0.13 of a CPU while it
    ran, four times a second about 0.08."""

    def __init__(self, show: Callable[[int, int], None], interval: float = 0.25):
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


def wrapping_row(*widgets: W.Widget) -> W.HBox:
    """Controls (buttons, a progress bar, number boxes) in a row that wraps onto a second line
    when the output area is narrow, rather than shrinking each one or cutting its label."""
    return W.HBox(list(widgets), layout=W.Layout(flex_flow="row wrap"))


def progress_bar(description: str = "progress") -> W.IntProgress:
    return W.IntProgress(value=0, min=0, max=100, description=description)


def show_progress(bar: W.IntProgress, done: int, total: int) -> None:
    bar.max = max(total, 1)
    bar.value = min(done, total)


class Lab(W.VBox):
    """The base of every lab: a status line, the done state, work on a thread,
    and close(). A subclass builds its controls, passes them in `children`,
    lists what to disable while work runs in `buttons`, and draws a finished
    run's result in `show(result)`."""

    closed = False  # until close(); a class default, so a lab's parts may ask before it is built
    stop_button: W.Button | None = None  # a lab with a Stop sets it: usable only while work runs

    def __init__(
        self,
        children: list[W.Widget],
        *,
        css_class: str,
        status: W.HTML | None = None,
        next_step: str = "",
    ):
        self.status = status if status is not None else styled(W.HTML(), "pgq-status")
        self.status.add_class("pgq-lab-status")
        self.runner = Runner(self._ended, self._failed)
        style = W.HTML(LAB_STYLE, layout=W.Layout(display="none"))
        super().__init__([style, *children])
        styled(self, "pgq-lab", css_class)
        self.say(next_step)

    # --- what a subclass provides ----------------------------------------------------

    @property
    def buttons(self) -> list[W.Button]:
        """The controls that must not be pressed while work runs (and once closed)."""
        return []

    def show(self, result: Any) -> None:
        """Draw a finished run's result and say what comes next. Runs on the
        work's thread: set widget traits only, never print."""
        self.finish("done")

    def release(self) -> None:
        """Close the sessions and connections the lab holds (called once, by close())."""

    # --- the status line and the done state -------------------------------------------

    @property
    def done(self) -> bool:
        return DONE in self._dom_classes

    def say(self, html: str) -> None:
        """Put `html` on the status line: what is running, or what to do next."""
        self.status.value = html
        self.remove_class(DONE)

    def finish(self, html: str) -> None:
        """The lab's run has ended: `html` on the status line, and the done state."""
        self.status.value = html
        self.add_class(DONE)

    # --- work on a thread -----------------------------------------------------------------

    @property
    def result(self) -> Any:
        return self.runner.result

    @property
    def busy(self) -> bool:
        """Whether work is running. False before the lab is built: a lab's
        sessions may ask while the lab is still making them."""
        runner = getattr(self, "runner", None)
        return runner is not None and runner.busy

    def start_work(self, work: Callable[[threading.Event], Any], message: str) -> bool:
        """Start work(stop_event) on the lab's thread, saying `message`, without waiting for it.
        False if the lab is closed or already running."""
        if self.closed or self.runner.busy:
            return False
        self.enable(False)
        self.say(message)
        # Stop is enabled before the thread starts: work that ends at once re-disables it
        # from its own thread, and a later write here would leave it enabled after the run.
        if self.stop_button is not None:
            self.stop_button.disabled = False
        started = self.runner.start(work)
        if not started and self.stop_button is not None:
            self.stop_button.disabled = True
        return started

    def stop(self) -> None:
        """Ask the running work to stop at its next check."""
        self.runner.stop()

    def wait(self, timeout: float | None = None) -> Any:
        """Wait for the running work; return its result or raise its error again."""
        return self.runner.wait(timeout)

    def enable(self, on: bool) -> None:
        """Make the lab's buttons usable (or not); Stop is usable only while work runs."""
        for control in self.buttons:
            control.disabled = not on or self.closed
        if self.stop_button is not None:
            self.stop_button.disabled = True

    def _ended(self, result: Any) -> None:
        self.enable(True)
        self.show(result)

    def _failed(self, exc: BaseException) -> None:
        self.enable(True)
        self.say(error_html(exc))

    # --- the end --------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the work, release what the lab holds, disable it. Safe to call twice."""
        if self.closed:
            return
        self.closed = True
        self.runner.stop()
        if self.runner.thread is not None:
            self.runner.thread.join(60)
        self.release()
        self.enable(False)
        self.say(CLOSED_TEXT)


class ExperimentPanel(Lab):
    """Predict, then run: a guess field, Run and Stop, a progress bar, and the
    result, for any experiment function.

    `experiment(progress=, stop=, guess=)` runs on a thread and returns a
    result object, which carries the guess read when Run was pressed;
    `render(result)` turns it into HTML (the comparison table, the summary);
    `charts(result)`, when given, returns the charts to show above it.
    A guess field (`guess_label`) shows its `guess_unit` and its plausible range
    (`guess_plausible`, low and high), and says when a guess falls outside it.
    A new run clears the old result first.
    Settings widgets passed in `settings` sit above the buttons; the
    experiment reads them itself. Headless: `panel.run_button.click()`, then
    `panel.wait()` returns the result or raises the experiment's error.
    """

    def __init__(
        self,
        experiment: Callable[..., Any],
        render: Callable[[Any], str] = result_html,
        *,
        guess_label: str | None = None,
        guess_value: float | None = None,
        guess_unit: str = "",
        guess_plausible: tuple[float, float] | None = None,
        settings: list[W.Widget] | None = None,
        css_class: str = "pgq-panel",
        charts: Callable[[Any], Sequence[Any]] | None = None,
    ):
        self.experiment, self.render, self.charts = experiment, render, charts
        self.has_settings = bool(settings)
        if guess_label and guess_plausible is None:
            raise ValueError("a guess field needs its plausible range (guess_plausible) and its unit")
        self.guess = (
            guess_field(guess_label, guess_value, unit=guess_unit, plausible=guess_plausible)
            if guess_label and guess_plausible is not None
            else None
        )
        self.run_button = button("Run", button_style="primary", icon="play")
        self.stop_button = button("Stop", icon="stop", disabled=True)
        self.progress = progress_bar()
        self.output = styled(W.HTML(value=""), "pgq-result")
        self.chart_box = chart_box()
        self.run_guess: float | None = None
        self.run_button.on_click(lambda _: self.start())
        self.stop_button.on_click(lambda _: self.stop())
        controls = list(settings or []) + ([self.guess] if self.guess else [])
        status = styled(W.HTML(), "pgq-status")
        super().__init__(
            controls
            + [W.HBox([self.run_button, self.stop_button, self.progress]), status]
            + ([self.chart_box] if charts else [])
            + [self.output],
            css_class=css_class,
            status=status,
            next_step="Type your guess, then press Run." if self.guess else "Press Run.",
        )

    @property
    def buttons(self) -> list[W.Button]:
        return [self.run_button]

    def start(self) -> bool:
        if self.closed or self.runner.busy:
            return False
        self.progress.value = 0
        self.output.value = ""  # the old result must not sit under "running…"
        show_charts(self.chart_box, [])
        self.run_guess = self.guess.value if self.guess else None  # read now, on the caller's thread
        guess = self.run_guess
        return self.start_work(lambda stop: self._run(stop, guess), "running…")

    def _run(self, stop: threading.Event, guess: float | None) -> Any:
        with ProgressRelay(lambda done, total: show_progress(self.progress, done, total)) as relay:
            return self.experiment(progress=relay.update, stop=stop, guess=guess)

    def show(self, result: Any) -> None:
        self.output.value = self.render(result)
        if self.charts:
            show_charts(self.chart_box, self.charts(result))
        if getattr(result, "stopped", False):
            self.finish("stopped early: the result so far is below. Press Run to run it again.")
        else:
            self.progress.value = self.progress.max
            self.finish(f"done: the result is below. {self.again_text()}")

    def again_text(self) -> str:
        """What a learner can change before running again: only what this panel has."""
        what = [w for w, has in (("your guess", self.guess), ("a setting", self.has_settings)) if has]
        return f"Change {' or '.join(what)} and press Run again." if what else "Press Run to run it again."

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
