"""What every experiment's result shares: the server it ran on, the learner's
guess, the guide's figure, whether it was stopped early, the footer of its
summary, and the rows that set the guess, this server and the guide side by side.

Widgets draw these rows; they never work them out (or change a result) themselves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .. import charts
from ..databases import Database
from ..guide import GuideFigure

# One row of a comparison table: (measure, your guess, this server, the guide).
Comparison = tuple[str, Any, Any, Any]
NO_GUESS = "no guess"
# progress(done, total): how far a long experiment has got, for a progress bar.
Progress = Callable[[int, int], None]


def tell(progress: Progress | None, done: int, total: int) -> None:
    """Report progress, when the caller asked for it."""
    if progress is not None:
        progress(done, total)


def server_fields(db: Database) -> dict[str, Any]:
    """The result fields that say which server measured it."""
    return {"server_version": db.server.version, "server_major": db.server.major}


class ResultNote(str):
    """A line of a result's summary that says what its comparison table does not: the run's
    settings and whether it stopped, a fact of its own, the guide's section. A view shows the
    table and these lines under it (`Result.notes`); the terminal shows the whole summary."""


def note(line: str) -> ResultNote:
    """`line`, marked as one of its result's notes."""
    return ResultNote(line)


def guess_text(guess: float | None, unit: str = "") -> str:
    """A guess as a person reads it: "no guess" when the learner made none."""
    if guess is None:
        return NO_GUESS
    return f"{guess:,g}{unit}"


@dataclass(kw_only=True)
class Result:
    """The base of every experiment result (keyword-only fields, so a result
    lists its own measurements first)."""

    server_version: str
    server_major: int
    guide: GuideFigure
    guess: float | None = None
    stopped: bool = False

    @property
    def guess_cell(self) -> Any:
        """The guess as its table cell shows it: "no guess" when none was made."""
        return NO_GUESS if self.guess is None else self.guess

    def comparison(self) -> list[Comparison]:
        """Rows of (measure, your guess, this server, the guide)."""
        return []

    def report(self) -> list[str]:
        """The summary, line by line; the lines its table lacks are marked with `note(line)`."""
        raise NotImplementedError(f"{type(self).__name__} has no report()")

    def summary(self) -> str:
        """The whole result as text, for the terminal and `reproduce`."""
        return "\n".join(self.report())

    def notes(self) -> list[str]:
        """What a view shows under the comparison table: the summary's notes, each as one
        line. The table holds the rest, and its caption the server."""
        return [line.strip() for line in self.report() if isinstance(line, ResultNote)]

    def footer(self) -> list[str]:
        """The last lines of every summary: the guide's figure (a note: the table has its
        value, not its section) and this server (the table's caption)."""
        return [note(f"  {self.guide}"), f"  this server: PostgreSQL {self.server_version}"]

    @property
    def stopped_note(self) -> str:
        return " (stopped early)" if self.stopped else ""


R = TypeVar("R", bound=Result)


def finish(
    result: type[R],
    db: Database,
    *,
    guess: float | None = None,
    stopped: bool | threading.Event = False,
    **fields: Any,
) -> R:
    """An experiment's result, made in one place: its own `fields`, the server
    `db` is on, the learner's `guess` (None: no guess), and whether the run
    ended early (`stopped`: a bool, or the run's stop event, set if it was)."""
    if isinstance(stopped, threading.Event):
        stopped = stopped.is_set()
    return result(guess=guess, stopped=stopped, **server_fields(db), **fields)


def guide_bars(
    rows: Sequence[dict[str, Any]],
    *,
    label: str,
    value: str,
    heading: str,
    unit: str,
    guide: tuple[str, float],
    tooltip: Sequence[str] = (),
) -> charts.Chart:
    """Bars (one row each, named by `label`, as long as `value`) in whole
    `unit`s, with the guide's figure (label, value) drawn across them as a
    dashed rule."""
    return charts.bars(
        rows,
        label=label,
        value=value,
        heading=heading,
        value_axis=charts.axis(value, unit),
        refs=[charts.Reference(*guide)],
        tooltip=tooltip,
    )


@dataclass(frozen=True)
class GuideAdvice(GuideFigure):
    """A rule from the guide's prose rather than one of its numbered figures
    (lessons 10 and 11 teach its operations and switching advice), shown with
    the section it comes from and never with a figure number."""

    def __str__(self) -> str:
        return f"the guide ({self.experiment}): {self.figure}"


def advice(section: str, rule: str) -> GuideAdvice:
    """The guide's advice from `section`, to stand where a result shows the guide."""
    return GuideAdvice(0, section, rule)
