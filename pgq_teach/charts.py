"""The course's charts, on Altair: Vega-Lite v5 specs that JupyterLab draws
itself, with tooltips, legends and formatted axes (CONTRIBUTING.md says why
Altair, pinned at 5.5.0).

The vocabulary is small: `bars` (one bar a measurement), `lines` (one line a
series) and `timeline` (runs, and numbered moments, in lanes over time), each
with the guide's figure, or another reference, drawn as a dashed rule named in
the legend (`Reference`), and `axis` for a title with its unit over formatted
ticks. Experiments build their charts from their
results with these; a notebook shows a chart by displaying it, a widget puts it
in an Output (`widgets.common.show_charts`).

Building the first chart imports Altair (`OnFirstUse`) and sets its renderer to
the mime bundle JupyterLab reads, drawn as SVG: real <text> elements that the
browser tests can measure.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import math
import sys
import textwrap
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any


class OnFirstUse:
    """Altair, imported when a chart is first built rather than with this module.
    Why: its import (jsonschema and its schemas) costs seconds of CPU, and every
    `pgq-teach` command imports this module through the experiments, so a command
    that only refuses bad input (tests/test_bad_input.py) paid them too."""

    def __init__(self) -> None:
        self.module: ModuleType | None = None

    def __getattr__(self, name: str) -> Any:
        if self.module is None:
            defer_iri_grammar()
            module = importlib.import_module("altair")
            module.renderers.enable("mimetype", embed_options={"renderer": "svg", "actions": False})
            self.module = module
        return getattr(self.module, name)


IRI_GRAMMAR = "rfc3987_syntax"


class DeferredIriGrammar(ModuleType):
    """Stands in for rfc3987_syntax until something uses it, then loads it and hands over.
    It carries the real module's spec, file and path, so importing a submodule or asking
    where it lives still works; one lock, so two threads' first checks load it once."""

    def __init__(self, spec: importlib.machinery.ModuleSpec):
        super().__init__(spec.name)
        self.__spec__, self.__file__ = spec, spec.origin
        if spec.submodule_search_locations is not None:
            self.__path__ = list(spec.submodule_search_locations)
        self.__loading = threading.Lock()

    def load(self) -> ModuleType:
        with self.__loading:
            if sys.modules.get(self.__name__) is self:
                del sys.modules[self.__name__]
            return importlib.import_module(self.__name__)

    def is_valid_syntax(self, term: str, value: str) -> bool:
        return bool(self.load().is_valid_syntax(term, value))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name != "__all__":  # the import system asking: not a use
            raise AttributeError(name)
        return getattr(self.load(), name)


def defer_iri_grammar() -> None:
    """Why: Altair imports jsonschema, and jsonschema imports rfc3987_syntax as it loads, which
    builds an Earley parser for RFC 3987's grammar: 1.6 s of CPU in every kernel's first chart,
    more than the rest of Altair's import, though no chart checks an IRI. Until something does,
    a stand-in takes its place (jsonschema's IRI check then loads it, and behaves the same:
    tests/test_charts.py). Nothing to do where it is loaded already or not installed."""
    spec = None if IRI_GRAMMAR in sys.modules else importlib.util.find_spec(IRI_GRAMMAR)
    if spec is not None:
        sys.modules[IRI_GRAMMAR] = DeferredIriGrammar(spec)


if TYPE_CHECKING:
    import altair as alt
else:
    alt = OnFirstUse()

WIDTH = 440  # the plot's width in px; the legend sits to its right, the whole fits a 720 px widget
# A legend below the plot instead (`legend_below`): a long legend ("a job run more than once")
# beside the plot made the whole about 650 px, past a notebook's output area in an 800 px window
# (about 610 px); below it, the chart is the plot and its axis titles, and reads the same wide.
LANE_PX = 24  # one lane or one bar
MAX_ROWS = 6_000  # beyond this a browser slows down and the eye sees no more
BLUE, RED, GREY = "#1f77b4", "#d62728", "#555555"
ORANGE = "#ff7f0e"
if TYPE_CHECKING:
    Chart = alt.LayerChart | alt.Chart


@dataclass(frozen=True)
class Reference:
    """A value to draw across a chart as a dashed rule, such as the guide's
    figure: `label` names it in the legend and the tooltip; `meaning` says what
    such a line is ("the guide's figure", "the ideal times"), in the legend's title.
    A label that starts "guide #" means the guide's figure unless told otherwise."""

    label: str
    value: float
    meaning: str = ""

    @property
    def what(self) -> str:
        """What the dashed line is, for the legend's title."""
        if self.meaning:
            return self.meaning
        return "the guide's figure" if self.label.startswith("guide #") else "a reference"


def dashed_title(refs: Sequence[Reference]) -> str:
    """The title of the dashed rules' legend: what they are, never just "dashed"."""
    meanings = list(dict.fromkeys(r.what for r in refs))
    lines = "dashed line" if len(refs) == 1 else "dashed lines"
    return f"{lines}: {', '.join(meanings)}"


def values(rows: Sequence[dict[str, Any]]) -> alt.Data:
    """Rows as inline data, at most MAX_ROWS of them."""
    return alt.Data(values=list(rows)[:MAX_ROWS])


def title(text: str) -> alt.TitleParams:
    """A chart title, wrapped so a long one never runs past the chart."""
    return alt.TitleParams(textwrap.wrap(text, 70), anchor="start", fontSize=13)


def axis(name: str, unit: str = "", fmt: str = ",.0f", **options: Any) -> alt.Axis:
    """An axis titled with its unit ("jobs drained", "MB" -> "jobs drained (MB)")
    whose ticks are formatted numbers, never 2.5e+04. A unit that is the name
    ("buffers") is said once."""
    text = f"{name} ({unit})" if unit not in ("", name) else name
    return alt.Axis(title=text, format=fmt, labelFlush=True, **options)


def finish(layers: list[alt.Chart], heading: str, height: Any, legend_below: bool = False) -> alt.LayerChart:
    """Layer the marks, title them, size them and set the course's look."""
    return (
        alt.layer(*layers)
        .properties(title=title(heading), width=WIDTH, height=height)
        .configure_legend(labelLimit=320, titleLimit=320, orient="bottom" if legend_below else "right")
        .configure_axis(labelLimit=260, titleLimit=420)
    )


def references(refs: Sequence[Reference], channel: str, scale_axis: alt.Axis) -> list[alt.Chart]:
    """Each reference as a dashed rule across the chart along `channel` ("x" or
    "y"), told apart by dash in a legend of its own, with a tooltip."""
    if not refs:
        return []
    rows = [{"reference": r.label, "value": r.value} for r in refs]
    position = {
        channel: alt.Y("value:Q", axis=scale_axis) if channel == "y" else alt.X("value:Q", axis=scale_axis)
    }
    return [
        alt.Chart(values(rows))
        .mark_rule(color=GREY, size=2)
        .encode(
            strokeDash=alt.StrokeDash(
                "reference:N",
                legend=alt.Legend(title=dashed_title(refs)),
                scale=alt.Scale(range=[[6, 3], [2, 2], [8, 3, 2, 3]]),
            ),
            tooltip=[alt.Tooltip("reference:N"), alt.Tooltip("value:Q", format=",.4~f")],
            **position,
        )
    ]


def bars(
    rows: Sequence[dict[str, Any]],
    *,
    label: str,
    value: str,
    heading: str,
    value_axis: alt.Axis,
    refs: Sequence[Reference] = (),
    colour: str | None = None,
    fmt: str = ",.0f",
    tooltip: Sequence[str] = (),
    log: bool = False,
) -> alt.LayerChart:
    """Horizontal bars, one a row: `label` names the bar, `value` its length,
    printed at its end with `fmt`; `colour` (a field) colours and keys them.
    The axis runs a fifth past the longest bar or rule, so the printed values
    stay inside the plot, clear of the legend. With `log`, the axis is
    logarithmic (powers of ten), so bars that differ a hundredfold all read
    (every value must then be above 0)."""
    longest = max([row[value] for row in rows] + [r.value for r in refs] + [1e-9])
    scale = alt.Scale(domainMax=longest * 1.2)
    if log:
        smallest = min([row[value] for row in rows] + [r.value for r in refs] + [longest])
        low, high = 10 ** math.floor(math.log10(smallest)), longest * 3
        scale = alt.Scale(type="log", domainMin=low, domainMax=high)
        ticks = [10**n for n in range(round(math.log10(low)), math.ceil(math.log10(high)) + 1)]
        value_axis = value_axis.copy()
        value_axis.values = [t for t in ticks if t <= high]
    base = alt.Chart(values(rows)).encode(
        y=alt.Y(f"{label}:N", sort=None, title=None),
        x=alt.X(f"{value}:Q", axis=value_axis, scale=scale),
        tooltip=[alt.Tooltip(f"{label}:N"), alt.Tooltip(f"{value}:Q", format=fmt), *tooltip],
    )
    bar = base.mark_bar(height=LANE_PX - 8)
    if colour:
        bar = bar.encode(color=alt.Color(f"{colour}:N", legend=alt.Legend(title=None)))
    text = base.mark_text(align="left", dx=3, fontSize=11).encode(text=alt.Text(f"{value}:Q", format=fmt))
    return finish([bar, text, *references(refs, "x", value_axis)], heading, alt.Step(LANE_PX))


def lines(
    rows: Sequence[dict[str, Any]],
    *,
    x: str,
    y: str,
    heading: str,
    x_axis: alt.Axis,
    y_axis: alt.Axis,
    series: str | None = None,
    refs: Sequence[Reference] = (),
    height: int = 200,
    tooltip: Sequence[str] = (),
    legend_below: bool = False,
) -> alt.LayerChart:
    """Lines with a dot at each point: x and y are fields; `series` (a field)
    draws one line a value, keyed in the legend (below the plot with `legend_below`);
    `refs` are horizontal rules."""
    encoding: dict[str, Any] = {
        "x": alt.X(f"{x}:Q", axis=x_axis),
        "y": alt.Y(f"{y}:Q", axis=y_axis),
        "tooltip": [alt.Tooltip(f"{x}:Q", format=",.4~f"), alt.Tooltip(f"{y}:Q", format=",.4~f"), *tooltip],
    }
    if series:
        encoding["color"] = alt.Color(f"{series}:N", sort=None, legend=alt.Legend(title=None))
        encoding["tooltip"].insert(0, alt.Tooltip(f"{series}:N"))
    dots = alt.OverlayMarkDef(size=30 if len(rows) <= 60 else 8)  # many points: small dots, a clear line
    chart = alt.Chart(values(rows)).mark_line(point=dots, strokeWidth=2).encode(**encoding)
    return finish([chart, *references(refs, "y", y_axis)], heading, height, legend_below)


def timeline(
    rows: Sequence[dict[str, Any]],
    *,
    heading: str,
    kinds: dict[str, str],
    lanes: Sequence[str],
    time_axis: alt.Axis,
    marks: Sequence[dict[str, Any]] = (),
    refs: Sequence[Reference] = (),
    legend_below: bool = False,
) -> alt.LayerChart:
    """Runs in lanes over time: rows of lane, start, end (seconds) and kind;
    `marks` are moments in lanes: rows of lane, time, kind and a short label
    (a step's number) drawn inside a dot, or "" for a small dot. `kinds` maps each kind of run or
    mark to its colour, keyed in the legend; every row's other fields show in
    its tooltip; with `legend_below`, the legend sits under the plot."""
    y = alt.Y("lane:N", sort=list(lanes), scale=alt.Scale(domain=list(lanes)), title=None)
    colour = alt.Color(
        "kind:N",
        scale=alt.Scale(domain=list(kinds), range=list(kinds.values())),
        legend=alt.Legend(title=None),
    )
    layers = [
        alt.Chart(values(rows))
        .mark_bar(height=LANE_PX - 8)
        .encode(y=y, x=alt.X("start:Q", axis=time_axis), x2="end:Q", color=colour, tooltip=tips(rows))
    ]
    if marks:
        at = alt.Chart(values(marks)).encode(y=y, x=alt.X("time:Q", axis=time_axis), tooltip=tips(marks))
        size = alt.condition("datum.label", alt.value(220), alt.value(70))  # room for a label, or a dot
        layers.append(at.mark_circle(opacity=1).encode(color=colour, size=size))
        layers.append(at.mark_text(color="white", fontSize=11, fontWeight="bold").encode(text="label:N"))
    return finish([*layers, *references(refs, "x", time_axis)], heading, alt.Step(LANE_PX + 6), legend_below)


def tips(rows: Sequence[dict[str, Any]]) -> list[alt.Tooltip]:
    """A tooltip of every field the rows carry, numbers to four places at most."""
    fields = list(rows[0]) if rows else []
    sample = rows[0] if rows else {}
    return [
        alt.Tooltip(f"{name}:Q", format=",.4~f")
        if isinstance(sample[name], (int, float)) and not isinstance(sample[name], bool)
        else alt.Tooltip(f"{name}:N")
        for name in fields
    ]


def lane_blocks(spans: list[tuple[float, float, bool]], min_s: float) -> list[tuple[float, float, bool]]:
    """Merge one lane's runs (start, end, highlight) into blocks at least
    `min_s` wide; a block is highlighted when any run in it is, so a duplicate
    never disappears into its neighbours, and a crowded lane stays readable."""
    blocks: list[list] = []
    for start, end, hot in sorted(spans):
        end = max(end, start + min_s)
        last = blocks[-1] if blocks else None
        if last is not None and start - last[1] < min_s and last[2] == hot:
            last[1] = max(last[1], end)
        else:
            blocks.append([start, end, hot])
    return [tuple(b) for b in blocks]


def thin(points: Sequence[tuple[float, float]], most: int = 200) -> list[tuple[float, float]]:
    """At most about `most` of a series' (x, y) points, in order: the highest of
    each run of neighbours, so a peak survives. A chart needs no more, and a
    notebook stores every point it draws."""
    step = -(-len(points) // most)  # ceiling division
    return (
        [max(points[i : i + step], key=lambda p: p[1]) for i in range(0, len(points), step)] if points else []
    )


def spread(times: Sequence[float], gap: float) -> list[float]:
    """Times moved later where needed so that marks drawn at them in one lane
    stand at least `gap` apart (two steps at nearly the same moment stay readable)."""
    placed: list[float] = []
    for t in times:
        placed.append(max(t, placed[-1] + gap) if placed else t)
    return placed
