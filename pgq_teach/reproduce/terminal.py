"""The command's terminal side: a progress bar, and Ctrl-C that stops the run
cleanly (the figures measured so far are kept and reported)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO, TypeVar

from .registry import ENTRIES

T = TypeVar("T")
BAR_WIDTH = 30


class ProgressBar:
    """progress(figure, index, count, done, total) drawn in place on a
    terminal; where the output is not a terminal (CI logs), one line per figure."""

    def __init__(self, stream: TextIO | None = None, every_s: float = 0.2):
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.every_s = every_s
        self.last_draw = 0.0
        self.last_figure: tuple[str, int] | None = None
        self.prefix = ""
        self.lock = threading.Lock()

    def server(self, line: str) -> None:
        """A new server begins (--compare runs two)."""
        self.prefix = line.split(" · ")[0] + " "

    def __call__(self, number: int, index: int, count: int, done: int, total: int) -> None:
        with self.lock:
            if not self.live:
                if self.last_figure != (self.prefix, number):
                    self.last_figure = (self.prefix, number)
                    print(
                        f"{self.prefix}[{index + 1}/{count}] #{number}: {ENTRIES[number].experiment}",
                        file=self.stream,
                        flush=True,
                    )
                return
            now = time.monotonic()
            if now - self.last_draw < self.every_s and done < total:
                return
            self.last_draw = now
            fraction = (index + min(done, total) / max(total, 1)) / max(count, 1)
            filled = int(fraction * BAR_WIDTH)
            text = (
                f"\r{self.prefix}[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {fraction:4.0%} "
                f"#{number} ({index + 1}/{count}): {ENTRIES[number].experiment}"
            )
            self.stream.write(text[:160].ljust(161))
            self.stream.flush()

    def finish(self) -> None:
        if self.live:
            self.stream.write("\r" + " " * 161 + "\r")
            self.stream.flush()


def run_until_done(work: Callable[[threading.Event], T], say: Callable[[str], None]) -> tuple[T, bool]:
    """Run `work(stop)` on a thread. A first Ctrl-C sets `stop` and waits for
    the work to wind down; a second one gives up at once. Returns the work's
    value and whether it was interrupted."""
    stop = threading.Event()
    box: dict[str, object] = {}

    finished = threading.Event()

    def target() -> None:
        try:
            box["value"] = work(stop)
        except BaseException as exc:  # raised again on the caller's thread
            box["error"] = exc
        finally:
            finished.set()

    thread = threading.Thread(target=target, name="pgq-teach reproduce", daemon=True)
    thread.start()
    interrupted = False
    # Wait on an event, not thread.join(): a Ctrl-C inside join() can leave the
    # thread looking finished while it still runs (CPython 3.11).
    while not finished.is_set():
        try:
            finished.wait(0.2)
        except KeyboardInterrupt:
            if interrupted:
                raise
            interrupted = True
            stop.set()
            say(
                "\nstopping: finishing the step in flight, keeping what was measured "
                "(Ctrl-C again to abandon it)"
            )
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"], interrupted  # type: ignore[return-value]
