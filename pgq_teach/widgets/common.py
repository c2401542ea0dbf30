"""Pieces every lab widget shares: the guess field, the guess / this server /
guide comparison, and small HTML helpers. The lab lifecycle (work on a thread,
the status line, the done state) is `widgets.lab.Lab`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any, TypeVar

import ipywidgets as W

from .. import tables
from ..tables import Column, Table


def error_html(exc: BaseException) -> str:
    """A clear, one-paragraph error for a widget's status area."""
    return (
        f'<div class="pgq-error" style="color:#b00020"><b>{escape(type(exc).__name__)}:</b> '
        f"{escape(str(exc))}</div>"
    )


GUESS_WIDTH = "12em"  # wide enough to read what you type (at least 8 characters)
COMPARED = tables.columns(
    "measure",
    Column("your guess", tables.NUMBER),
    Column("this server", tables.NUMBER),
    Column("the guide", tables.NUMBER),
)


def comparison_html(rows: list[tuple[str, Any, Any, Any]], *, version: str = "") -> str:
    """A table of (measure, your guess, this server, the guide), from a result's comparison()."""
    caption = f"this server: PostgreSQL {version}" if version else ""
    return Table(COMPARED, rows, css="pgq-compare", caption=caption).html()


SLOT_ONLY = "catalog_xmin"  # a column of sql/stats_sessions.sql that only a replication slot fills


def sessions_html(rows: list[dict], *, css: str = "pgq-session") -> str:
    """The guide's activity query (sql/stats_sessions.sql) as a table, one row
    (class `css`) per session holding a transaction ID or a snapshot."""
    if not rows:
        return "<p>No session holds a transaction ID or a snapshot.</p>"
    # Only a logical slot has a catalog_xmin: when no row has one, its column of dashes is left
    # out and the caption says so; with it, ten columns were 656 px in an 800 px window's
    # 620 px output area.
    names = [n for n in rows[0] if n != SLOT_ONLY or any(r[n] is not None for r in rows)]
    caption = "" if SLOT_ONLY in names else f"{SLOT_ONLY}: none (only a logical replication slot has one)"
    kinds = {"xact_age": tables.SECONDS}
    heads = [Column(breakable(n), kinds.get(n, tables.TEXT)) for n in names]
    # pids and transaction IDs are names, not amounts: no thousands separators
    cells = [[r[n] if n in kinds or r[n] is None else breakable(str(r[n])) for n in names] for r in rows]
    # Nine columns: close padding, and a line may break after an underscore (backend_xmin,
    # pgq_09_bloat_and_vacuum), so the table fits a notebook's output at 1366 px.
    attrs = [{"class": css}] * len(rows)
    return Table(heads, cells, row_attrs=attrs, css="pgq-compact", caption=caption).html()


def breakable(text: str) -> tables.Markup:
    """`text`, escaped, that a browser may wrap after each underscore."""
    return tables.Markup(escape(text).replace("_", "_<wbr>"))


def result_html(result: Any) -> str:
    """Any experiment result, shown once: its comparison table, then its notes
    (`result.notes()`: the run's settings, the facts the table lacks, the guide's section).
    The whole summary is for the terminal and `reproduce`; repeated under the table it was a
    second copy of every number (issue 45)."""
    return comparison_html(result.comparison(), version=result.server_version) + notes_html(result.notes())


def notes_html(lines: list[str]) -> str:
    """A result's notes under its table, one line each, in the notebook's own font."""
    if not lines:
        return ""
    return "<div class='pgq-notes'>" + "".join(f"<div>{escape(line)}</div>" for line in lines) + "</div>"


# Keyboard users see where they are: a ring on the focused field, button and menu of the
# course's widgets (JupyterLab's own is a faint 1 px border), and a guess's label wraps
# rather than being cut. Shared by every guess field and every lab (widgets.lab.LAB_STYLE).
FOCUS_STYLE = (
    ".pgq-guess input:focus-visible, .pgq-lab input:focus-visible, .pgq-lab button:focus-visible,"
    " .pgq-lab select:focus-visible, .pgq-lab textarea:focus-visible"
    " { outline: 3px solid #1a5fb4 !important; outline-offset: 2px; }"  # ipywidgets sets outline: none
    ".pgq-guess .widget-label { white-space: normal; overflow: visible; height: auto;"
    " line-height: 1.4; max-width: none; flex: 0 1 auto; }"
    ".pgq-guess .widget-text { width: auto; max-width: 100%; align-items: center; }"
)


def plausible_text(low: float, high: float, unit: str) -> str:
    """A guess's plausible range in words: "0 to 1,000 MB"."""
    return f"{tables.human(low)} to {tables.human(high)}{' ' + unit if unit else ''}"


def number_text(number: float) -> str:
    """A typed number as the learner typed it, with thousands separators: 100,000; 0.5."""
    return f"{number:,.0f}" if float(number).is_integer() else f"{number:,g}"


class Prediction(W.VBox):
    """The 'predict, then run' field: a real `<label>` tied to its input (the
    Text widget's description), a box wide enough to read, the guess's unit
    and a plausible range beside it, and one sentence under it when the number
    typed is out of that range (kept as the guess: a learner may mean it).

    Empty means no guess; `value` is the number typed, or None (also when it
    is not a number or falls outside the hard `minimum`..`maximum`, which the
    sentence then says)."""

    def __init__(
        self,
        description: str,
        value: float | None = None,
        *,
        unit: str,
        plausible: tuple[float, float],
        minimum: float | None = None,
        maximum: float | None = None,
    ):
        low, high = plausible
        self.unit, self.plausible = unit, plausible
        self.minimum, self.maximum = minimum, maximum
        shown = "" if value is None else f"{value:g}"
        self.box = W.Text(
            value=shown,
            placeholder="no guess",
            description=description,
            style={"description_width": "initial"},
            layout=W.Layout(width="auto"),
        )
        self.box.add_class("pgq-guess-box")
        self.range_text = plausible_text(low, high, unit)
        self.unit_label = styled(
            W.HTML(
                f"{escape(unit)} <span class='pgq-guess-range'>(plausible: {escape(self.range_text)})</span>"
            ),
            "pgq-guess-unit",
        )
        self.note = styled(W.HTML(value=""), "pgq-guess-note")
        style = W.HTML(f"<style>{FOCUS_STYLE}</style>", layout=W.Layout(display="none"))
        row = W.HBox(
            [self.box, self.unit_label],
            layout=W.Layout(align_items="center", grid_gap="8px", flex_flow="row wrap"),
        )
        super().__init__([style, row, self.note])
        self.add_class("pgq-guess")
        self.box.observe(lambda _change: self._check(), "value")
        self._check()

    @property
    def label(self) -> str:
        """What the field asks (its `<label>`)."""
        return self.box.description

    def _number(self) -> float | None:
        text = self.box.value.strip().replace(",", "")
        try:
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) else None

    def _refused(self, number: float) -> bool:
        return (self.minimum is not None and number < self.minimum) or (
            self.maximum is not None and number > self.maximum
        )

    def problem(self) -> str:
        """The one sentence the field shows under itself, or "" when the guess reads well."""
        text = self.box.value.strip()
        if not text:
            return ""
        number = self._number()
        if number is None:
            return f"“{text[:20]}” is not a number, so it is not counted as a guess."
        unit = f" {self.unit}" if self.unit else ""
        if self._refused(number):
            if self.minimum is not None and self.maximum is not None:
                bounds = f"from {tables.human(self.minimum)} to {tables.human(self.maximum)}{unit}"
            elif self.minimum is not None:
                bounds = f"at least {tables.human(self.minimum)}{unit}"
            else:
                bounds = f"at most {tables.human(self.maximum)}{unit}"
            return f"{number_text(number)}{unit} is not counted as a guess: it must be {bounds}."
        low, high = self.plausible
        if number < low or number > high:
            return (
                f"{number_text(number)}{unit} is outside the plausible {self.range_text}: check the unit"
                " (it still counts as your guess)."
            )
        return ""

    def _check(self) -> None:
        said = self.problem()
        self.note.value = f"<span role='status'>{escape(said)}</span>" if said else ""

    @property
    def value(self) -> float | None:
        number = self._number()
        if number is None or self._refused(number):
            return None
        return int(number) if number.is_integer() else number

    @value.setter
    def value(self, number: float | None) -> None:
        self.box.value = "" if number is None else f"{number:g}"


def guess_field(
    description: str,
    value: float | None = None,
    *,
    unit: str,
    plausible: tuple[float, float],
    minimum: float | None = None,
    maximum: float | None = None,
) -> Prediction:
    """The 'predict, then run' field: `value` is None until the learner types
    a number, so a result can say "no guess" rather than 0. `unit` is shown
    beside the box ("MB", "jobs", "times"), `plausible` (low, high) as the range a
    sensible guess falls in: a guess outside it is kept, with a sentence saying so;
    `minimum`/`maximum`, when given, are hard limits outside which it is no guess."""
    if plausible[0] > plausible[1]:  # checked before any widget is made
        raise ValueError(f"a plausible range runs from low to high, not {plausible[0]} to {plausible[1]}")
    return Prediction(description, value, unit=unit, plausible=plausible, minimum=minimum, maximum=maximum)


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
