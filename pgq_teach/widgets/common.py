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


def sessions_html(rows: list[dict], *, css: str = "pgq-session") -> str:
    """The guide's activity query (sql/stats_sessions.sql) as a table, one row
    (class `css`) per session holding a transaction ID or a snapshot."""
    if not rows:
        return "<p>No session holds a transaction ID or a snapshot.</p>"
    names = list(rows[0])
    kinds = {"xact_age": tables.SECONDS}
    heads = [Column(n, kinds.get(n, tables.TEXT)) for n in names]
    # pids and transaction IDs are names, not amounts: no thousands separators
    cells = [[r[n] if n in kinds or r[n] is None else str(r[n]) for n in names] for r in rows]
    return Table(heads, cells, row_attrs=[{"class": css}] * len(rows)).html()


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
    ):
        self.minimum, self.maximum = minimum, maximum
        self.label = W.HTML(value=escape(description))
        shown = "" if value is None else f"{value:g}"
        self.box = W.Text(value=shown, placeholder="no guess", layout=W.Layout(width=GUESS_WIDTH))
        super().__init__([self.label, self.box], layout=W.Layout(align_items="center", grid_gap="8px"))
        self.add_class("pgq-guess")

    @property
    def value(self) -> float | None:
        text = self.box.value.strip().replace(",", "")
        try:
            number = float(text)
        except ValueError:
            return None
        if (
            not math.isfinite(number)
            or (self.minimum is not None and number < self.minimum)
            or (self.maximum is not None and number > self.maximum)
        ):
            return None
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
