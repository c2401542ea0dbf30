"""What a registry entry is: one guide figure, the experiment that measures
it at which sizes (full, and smaller with --quick where the figure scales),
and four steps kept apart so each can be tested alone:

- `perform(db, sizes, progress, stop)` runs the experiment at those sizes and
  returns its result (not `run`: that word is the queue's, a job run by a handler);
- `measure(result, sizes)` reads plain values off the experiment's result object;
- `describe(values)` says them in one line, "this server's measurement";
- `judge(values, major)` gives the verdict (see verdicts.py).

Most figures need no code of their own for the perform, the measure and the
describe steps: `calls`, `reads` and `says` build them from the experiment,
the attribute paths and a line with blanks. A figure writes a function only
where a step does more than that; its judge is always its own.

`must`, where set, is the claim every server must show (the command exits 1,
and CI fails, when it does not hold); `timing` marks figures about time, which
are reported and never failed on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, TypedDict

from ..databases import Database
from ..experiments.results import Progress
from .verdicts import FigureVerdict

Values = dict[str, Any]
Perform = Callable[[Database, Values, Progress | None, threading.Event], Any]
Measure = Callable[[Any, Values], Values]
Describe = Callable[[Values], str]
Judge = Callable[[Values, int], FigureVerdict]
GUIDE_VERSIONS = {16: "16.15", 18: "18.4"}  # the guide measured on these two


def guide_major(major: int) -> int:
    """The guide's major to set beside a server's: 16 up to 16, else 18."""
    return 16 if major <= 16 else 18


class Sizes(TypedDict):
    """An entry's sizes (see Entry), for figures that share them: `Entry(..., **sizes)`."""

    full: Values
    quick: Values | None
    shrunk: str


@dataclass(frozen=True)
class Entry:
    number: int
    experiment: str  # what runs, as the table names it
    guide: dict[int, str]  # the guide's figure in short, on 16 and on 18: guide.figure(n).by_major
    perform: Perform
    measure: Measure
    describe: Describe
    judge: Judge
    full: Values = field(default_factory=dict)
    quick: Values | None = None  # None: the figure does not scale, --quick runs it in full
    shrunk: str = ""  # what --quick changed, said on every row it shrank
    must: Callable[[Values], bool] | None = None  # the claim every server must show
    must_claim: str = ""  # that claim in words
    timing: bool = False

    def sizes(self, quick: bool) -> Values:
        return dict(self.quick) if quick and self.quick is not None else dict(self.full)

    def shrinks(self, quick: bool) -> bool:
        return quick and self.quick is not None

    def verdict(
        self, result: Any, sizes: Values, major: int
    ) -> tuple[Values, str, FigureVerdict, bool | None]:
        """The values, their line, the verdict, and whether the must claim held (None: no such claim)."""
        values = self.measure(result, sizes)
        held = self.must(values) if self.must else None
        return values, self.describe(values), self.judge(values, major), held


def seconds(value: float) -> str:
    return f"{value * 1000:.1f} ms" if value < 0.1 else f"{value:.2f} s"


def scaled(figure: float, size: float, guide_size: float) -> float:
    """The guide's figure scaled to a smaller run (a --quick one)."""
    return figure * size / guide_size


def near(value: float, target: float, slack: float = 0.25) -> bool:
    """Within `slack` (a fraction) of `target`."""
    return target * (1 - slack) <= value <= target * (1 + slack)


def calls(experiment: Callable[..., Any], *, steps: bool = True, **fixed: Any) -> Perform:
    """The perform step of a figure whose experiment takes its sizes as keywords:
    `experiment(db, **fixed, **sizes)`, with progress and stop where it takes
    them (`steps`)."""

    def perform(db: Database, sizes: Values, progress: Progress | None, stop: threading.Event) -> Any:
        more = {"progress": progress, "stop": stop} if steps else {}
        return experiment(db, **fixed, **sizes, **more)

    return perform


def reads(*names: str, sizes: Iterable[str] = (), **paths: str) -> Measure:
    """The measure step of a figure whose values are plain attributes: the
    named `sizes` as they were given, each of `names` off the result as it is
    called there, and each of `paths` off the result by its attribute path
    (`removed_while_held="during.removed"`)."""
    given = tuple(sizes)
    getters = {name: attrgetter(name) for name in names} | {k: attrgetter(p) for k, p in paths.items()}

    def measure(result: Any, run_sizes: Values) -> Values:
        values = {name: run_sizes[name] for name in given}
        values.update((name, get(result)) for name, get in getters.items())
        return values

    return measure


def says(line: str) -> Describe:
    """The describe step of a figure said in one line: `line`'s blanks
    (str.format fields such as `{jobs:,}`) filled in from the values."""
    return line.format_map
