"""One way to show a table, in a notebook and in a terminal, and the human
formats every figure goes through on its way to the screen.

A table is data: its columns (a title, a kind, a unit) and its rows of plain
values. `Table.html()` draws it for a notebook or a widget (padded cells,
right-aligned numbers, a header row, the class `pgq-table`), and
`Table.text()` lays it out to the terminal's width with `rich`. Every cell
passes through `human` or its column's format, so a `None` shows as `–`, a
`timedelta` as `35.4 s`, and a count of one as `1 buffer`, never raw.
"""

from __future__ import annotations

import io
import re
import shutil
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from html import escape, unescape
from typing import Any

NONE = "–"  # what a missing value shows, in every table and line

# Kinds of column: how a cell's value is read and shown.
TEXT = "text"  # shown as it is (through `human`)
COUNT = "count"  # a whole number of `unit`s; the unit sits in the header
NUMBER = "number"  # a measured number with `digits` decimals
SECONDS = "seconds"  # a duration in seconds (or a timedelta)
MILLISECONDS = "ms"  # a duration in milliseconds
BYTES = "bytes"  # a size in bytes
KINDS = (TEXT, COUNT, NUMBER, SECONDS, MILLISECONDS, BYTES)

STYLE = (
    "<style>"
    "table.pgq-table{border-collapse:collapse;margin:6px 0}"
    "table.pgq-table td,table.pgq-table th{padding:4px 12px;text-align:left;vertical-align:top;"
    "border-bottom:1px solid #ddd}"
    "table.pgq-table th{font-weight:600;border-bottom:2px solid #999}"
    "table.pgq-table .pgq-num{text-align:right;font-variant-numeric:tabular-nums}"
    "table.pgq-table td.pgq-num{white-space:nowrap}"
    "table.pgq-table td.pgq-words{white-space:normal}"
    "table.pgq-table caption{caption-side:bottom;text-align:left;padding-top:4px;color:#555}"
    "table.pgq-compact td,table.pgq-compact th{padding:3px 6px}"
    "</style>"
)


class Markup(str):
    """A cell's HTML, written by the course (never by a learner or the server),
    shown as it is in a notebook and without its tags in a terminal."""


def plural(count: float, unit: str, many: str | None = None) -> str:
    """`unit` in the form that goes with `count`: 1 buffer, 2 buffers, 0 rows."""
    if count == 1:
        return unit
    if many is not None:
        return many
    if unit.endswith(("s", "x", "ch", "sh")):
        return unit + "es"
    if unit.endswith("y") and unit[-2:-1] not in ("a", "e", "o", "u"):
        return unit[:-1] + "ies"
    return unit + "s"


def count(n: int | None, unit: str, many: str | None = None) -> str:
    """A count with its unit, thousands separated: `1 buffer`, `2,048 buffers`, `–`."""
    if n is None:
        return NONE
    return f"{n:,} {plural(n, unit, many)}"


def number(value: float | None, digits: int = 2) -> str:
    """A number with thousands separators: whole numbers as they are, others to `digits` places."""
    if value is None:
        return NONE
    if isinstance(value, int):
        return f"{int(value):,}"
    return f"{value:,.{digits}f}"


def duration(seconds: float | timedelta | None) -> str:
    """A duration as a person reads it: `0.03 ms`, `882 ms`, `35.4 s`, `2 min 5 s`, `1 h 0 min`."""
    if seconds is None:
        return NONE
    if isinstance(seconds, timedelta):
        seconds = seconds.total_seconds()
    sign, s = ("-", -seconds) if seconds < 0 else ("", seconds)
    if s < 1:
        ms = s * 1000
        shown = f"{ms:.0f}" if ms >= 99.95 else f"{ms:.1f}" if ms >= 9.995 else f"{ms:.2f}"
        return f"{sign}{shown} ms"
    if s < 59.95:
        return f"{sign}{s:.1f} s"
    whole = round(s)
    if whole < 3600:
        return f"{sign}{whole // 60} min {whole % 60} s"
    return f"{sign}{whole // 3600:,} h {whole % 3600 // 60} min"


def milliseconds(ms: float | None) -> str:
    """A duration given in milliseconds, shown as `duration` shows it."""
    return NONE if ms is None else duration(ms / 1000)


def size(n_bytes: float | None) -> str:
    """A size in bytes as PostgreSQL's pg_size_pretty counts it (1 kB = 1,024 bytes): `29 MB`."""
    if n_bytes is None:
        return NONE
    value, unit = float(n_bytes), "bytes"
    for bigger in ("kB", "MB", "GB", "TB"):
        if abs(value) < 1024:
            break
        value, unit = value / 1024, bigger
    if unit == "bytes":
        return count(int(n_bytes), "byte")
    return f"{value:,.1f} {unit}" if abs(value) < 10 else f"{value:,.0f} {unit}"


def human(value: Any) -> str:
    """Any value as a cell shows it: `–` for None, a duration for a timedelta,
    yes/no for a bool, thousands separators for numbers (two places for a float)."""
    if value is None:
        return NONE
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, timedelta):
        return duration(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)


@dataclass(frozen=True)
class Column:
    """A column: its title, the kind of value it holds, and the unit of a count
    (singular: "buffer") or of a number ("s"), which the header names so each
    cell is a bare number."""

    title: str
    kind: str = TEXT
    unit: str = ""
    digits: int = 2

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"a column's kind is one of {', '.join(KINDS)}, not {self.kind!r}")

    @property
    def numeric(self) -> bool:
        """Whether its cells are numbers, set right-aligned so their digits line up."""
        return self.kind != TEXT

    @property
    def header(self) -> str:
        """The title, with the unit its cells leave out: "empty claim, buffers", "at, s"."""
        if not self.unit:
            return self.title
        return f"{self.title}, {plural(2, self.unit) if self.kind == COUNT else self.unit}"

    def cell(self, value: Any) -> str:
        """The value as this column shows it (strings pass through as they are)."""
        if isinstance(value, Markup):
            return value
        if value is None or isinstance(value, (str, bool, timedelta)):
            return human(value)
        if self.kind == SECONDS:
            return duration(value)
        if self.kind == MILLISECONDS:
            return milliseconds(value)
        if self.kind == BYTES:
            return size(value)
        if self.kind == NUMBER:
            return number(value, self.digits)
        return human(value)


def columns(*specs: str | Column) -> list[Column]:
    """Columns from titles (text columns) or Column objects, mixed."""
    return [s if isinstance(s, Column) else Column(s) for s in specs]


@dataclass
class Table:
    """A table as data. `rows` hold plain values (or `Markup` for a cell's
    HTML); `row_attrs`, one mapping per row, put attributes on each row's
    `<tr>` (a class, `data-*`) for the browser tests and a lab's styles."""

    columns: Sequence[Column]
    rows: Sequence[Sequence[Any]]
    css: str = ""  # more classes beside pgq-table
    caption: str = ""
    row_attrs: Sequence[Mapping[str, str]] = field(default_factory=list)

    def cells(self) -> list[list[str]]:
        """Every row's cells as the screen shows them."""
        return [
            [column.cell(value) for column, value in zip(self.columns, row, strict=True)] for row in self.rows
        ]

    def html(self) -> str:
        """The table for a notebook or a widget, with its style."""
        numeric = [c.numeric for c in self.columns]
        head = "".join(cell_tag("th", c.header, n) for c, n in zip(self.columns, numeric, strict=True))
        body = []
        for i, (cells, values) in enumerate(zip(self.cells(), self.rows, strict=True)):
            attrs = self.row_attrs[i] if i < len(self.row_attrs) else {}
            shown = "".join(
                cell_tag("td", cell, n, words=n and isinstance(value, str))
                for cell, n, value in zip(cells, numeric, values, strict=True)
            )
            body.append(f"<tr{attributes(attrs)}>{shown}</tr>")
        caption = f"<caption>{escape(self.caption)}</caption>" if self.caption else ""
        classes = escape(f"pgq-table {self.css}".strip())
        return f'{STYLE}<table class="{classes}">{caption}<tr>{head}</tr>{"".join(body)}</table>'

    def text(self, width: int | None = None) -> str:
        """The table for a terminal, laid out by rich to `width` columns (the terminal's own
        width, or COLUMNS, when not given); long text wraps between words. A table whose
        columns cannot fit without breaking a word or a figure is shown as records instead:
        each row's first cell, then its other cells with their headers, wrapped."""
        width = width or terminal_width()
        rows = [[plain(cell) for cell in cells] for cells in self.cells()]
        headers = [column.header for column in self.columns]
        least = word_widths(rows, headers)
        if sum(least) + COLUMN_GAP * (len(least) - 1) <= width:
            laid_out = self.rich_text(rows, least, width)
            shown = set(laid_out.split())
            # rich crops what it cannot fit at the right edge: every word must be there whole
            if all(
                word in shown
                for text in [*headers, *(c for row in rows for c in row)]
                for word in text.split()
            ):
                return laid_out
        return self.records(rows, headers, width)

    def rich_text(self, rows: list[list[str]], least: list[int], width: int) -> str:
        from rich import box
        from rich.console import Console
        from rich.table import Table as RichTable

        table = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, caption=self.caption or None)
        for column, at_least in zip(self.columns, least, strict=True):
            table.add_column(
                column.header,
                justify="right" if column.numeric else "left",
                overflow="fold",
                min_width=at_least,
            )
        for row in rows:
            table.add_row(*row)
        out = io.StringIO()
        Console(file=out, width=width, color_system=None, highlight=False, emoji=False, markup=False).print(
            table
        )
        return "\n".join(line.rstrip() for line in out.getvalue().rstrip("\n").splitlines())

    def records(self, rows: list[list[str]], headers: list[str], width: int) -> str:
        """The rows one after another, for a terminal too narrow for the table's columns."""
        blocks = [fit(self.caption, width)] if self.caption else []
        for row in rows:
            # a header and its value wrap as one (no-break spaces, put back after), never apart
            pairs = (
                f"{header}: {cell}".replace(" ", "\xa0")
                for header, cell in zip(headers[1:], row[1:], strict=True)
            )
            rest = fit("  " + "; ".join(pairs), width, indent="  ").replace("\xa0", " ")
            blocks.append(fit(row[0], width) + "\n" + rest)
        return "\n".join(blocks)


def cell_tag(tag: str, cell: str, numeric: bool, words: bool = False) -> str:
    """One `<td>` or `<th>`: escaped unless it is Markup; a number's cell right-aligned.
    A figure's cell never breaks ("2,048", "35.4 s"); a header, and `words` (text such as
    the guide's figure with the server and the run it was measured on, in a column of numbers), may
    wrap, so a table narrows to a narrow window's output area instead of overflowing it."""
    shown = cell if isinstance(cell, Markup) else escape(cell)
    classes = ' class="pgq-num pgq-words"' if words else " class=pgq-num" if numeric else ""
    return f"<{tag}{classes}>{shown}</{tag}>"


COLUMN_GAP = 3  # characters between two columns of a terminal table (rich's SIMPLE_HEAD box)


def word_widths(rows: list[list[str]], headers: list[str]) -> list[int]:
    """Each column's least width in a terminal: its longest word, in its cells and its header
    ("12,001–12,346", "installed", "PgQueuer"), so that rich, which keeps words whole where it
    can, breaks no figure and no word."""
    return [
        max((len(w) for w in [*headers[i].split(), *(w for row in rows for w in row[i].split())]), default=1)
        for i in range(len(headers))
    ]


def attributes(attrs: Mapping[str, str]) -> str:
    """HTML attributes, escaped: ` class="pgq-step" data-job="2"`."""
    return "".join(f' {name}="{escape(str(value))}"' for name, value in attrs.items())


def plain(cell: str) -> str:
    """A cell for a terminal: a Markup cell loses its tags, and its entities read as characters."""
    return unescape(re.sub(r"<[^>]+>", "", cell)) if isinstance(cell, Markup) else cell


def terminal_width() -> int:
    """The terminal's width in characters (COLUMNS when set; 80 when not a terminal)."""
    return shutil.get_terminal_size((80, 24)).columns


def fit(text: str, width: int | None = None, indent: str = "") -> str:
    """Prose lines wrapped to the terminal's width (a table's lines are left to `Table.text`)."""
    width = width or terminal_width()
    lines = []
    for line in text.splitlines():
        lead = line[: len(line) - len(line.lstrip())]
        wrapped = textwrap.wrap(
            line, width=width, subsequent_indent=lead + indent, break_long_words=True, break_on_hyphens=False
        )
        lines.extend(wrapped or [""])
    return "\n".join(lines)
