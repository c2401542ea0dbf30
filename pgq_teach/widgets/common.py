"""Pieces every lab widget shares: a background runner that never prints,
the guess / this server / guide comparison, and small HTML helpers."""

from __future__ import annotations

import threading
from html import escape
from typing import Any, Callable

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
    return f'<div class="pgq-error" style="color:#b00020"><b>{escape(type(exc).__name__)}:</b> {escape(str(exc))}</div>'


def comparison_html(rows: list[tuple[str, Any, Any, Any]], *, version: str = "") -> str:
    """A table of (measure, your guess, this server, the guide)."""
    head = "<tr><th>measure</th><th>your guess</th><th>this server</th><th>the guide</th></tr>"

    def cell(v):
        if v is None:
            return "<td>–</td>"
        if isinstance(v, float):
            return f"<td>{v:,.2f}</td>"
        if isinstance(v, int):
            return f"<td>{v:,}</td>"
        return f"<td>{escape(str(v))}</td>"

    body = "".join(f"<tr><td>{escape(m)}</td>{cell(g)}{cell(s)}{cell(r)}</tr>" for m, g, s, r in rows)
    note = f"<caption style='caption-side:bottom'>this server: PostgreSQL {escape(version)}</caption>" if version else ""
    style = "<style>.pgq-compare td,.pgq-compare th{padding:2px 10px;text-align:left}</style>"
    return f'{style}<table class="pgq-compare" style="border-collapse:collapse">{head}{body}{note}</table>'


def prediction(description: str, value: int = 0, *, minimum: int = 0, maximum: int = 1_000_000) -> W.BoundedIntText:
    """The 'predict, then run' field."""
    return W.BoundedIntText(value=value, min=minimum, max=maximum, description=description,
                            style={"description_width": "initial"})


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

    def __enter__(self) -> "ProgressRelay":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.finished.set()
        self.thread.join()


class ExperimentPanel(W.VBox):
    """Predict, then run: a guess field, Run and Stop, a progress bar, and the
    result, for any experiment function.

    `experiment(progress, stop)` runs on a thread and returns a result object;
    `render(result, guess)` turns it into HTML (the comparison table, a chart).
    Settings widgets passed in `settings` sit above the buttons; the
    experiment reads them itself. Headless: `panel.run_button.click()`, then
    `panel.wait()` returns the result or raises the experiment's error.
    """

    def __init__(
        self,
        experiment: Callable[[Callable[[int, int], None], threading.Event], Any],
        render: Callable[[Any, int | None], str],
        *,
        guess_label: str | None = None,
        guess_value: int = 0,
        settings: list[W.Widget] | None = None,
        css_class: str = "pgq-panel",
    ):
        self.experiment, self.render = experiment, render
        self.guess = prediction(guess_label, guess_value) if guess_label else None
        self.run_button = W.Button(description="Run", button_style="primary", icon="play")
        self.stop_button = W.Button(description="Stop", icon="stop", disabled=True)
        self.progress = W.IntProgress(value=0, min=0, max=100, description="progress")
        self.status = W.HTML(value="")
        self.output = W.HTML(value="")
        self.runner = Runner(self._done, self._failed)
        self.run_button.on_click(lambda _: self.start())
        self.stop_button.on_click(lambda _: self.runner.stop())
        controls = list(settings or []) + ([self.guess] if self.guess else [])
        super().__init__(controls + [W.HBox([self.run_button, self.stop_button, self.progress]),
                                     self.status, self.output])
        self.add_class(css_class)
        self.output.add_class("pgq-result")
        self.status.add_class("pgq-status")

    @property
    def result(self) -> Any:
        return self.runner.result

    def start(self) -> bool:
        if self.runner.busy:
            return False
        self.run_button.disabled, self.stop_button.disabled = True, False
        self.progress.value = 0
        self.status.value = "running…"
        return self.runner.start(self._run)

    def _run(self, stop: threading.Event) -> Any:
        with ProgressRelay(self._progress) as relay:
            return self.experiment(relay.update, stop)

    def _progress(self, done: int, total: int) -> None:
        self.progress.max = max(total, 1)
        self.progress.value = min(done, total)

    def _finish(self) -> None:
        self.run_button.disabled, self.stop_button.disabled = False, True

    def _done(self, result: Any) -> None:
        guess = self.guess.value if self.guess else None
        self.output.value = self.render(result, guess)
        self.status.value = "stopped early" if getattr(result, "stopped", False) else "done"
        self._finish()

    def _failed(self, exc: BaseException) -> None:
        self.status.value = error_html(exc)
        self._finish()

    def wait(self, timeout: float | None = None) -> Any:
        return self.runner.wait(timeout)
