"""Small SVG charts, drawn by hand so the course needs no plotting library
(a timeline, bars, and a line chart with axes, ticks and a legend: few
enough parts that matplotlib, its font cache and its first-import warnings
on stderr would cost more than they give).
Each returns an SVG string; notebooks show it with IPython.display.SVG and
widgets put it in an HTML widget."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

MAX_BARS = 6_000  # beyond this a browser slows down and the eye sees no more


def frame(width: int, height: int, body: list[str], title: str) -> str:
    """An SVG picture of the given size, its title as a tooltip and a caption."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="pgq-chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">'
        f"<title>{escape(title)}</title>"
        f'<text x="4" y="13" font-size="12">{escape(title)}</text>' + "".join(body) + "</svg>"
    )


BLUE, RED = "#1f77b4", "#d62728"
MIN_BLOCK_PX = 3  # narrower runs are merged into blocks, so a crowded lane stays readable


def lane_blocks(spans: list[tuple[float, float, bool]], px_per_s: float) -> list[tuple[float, float, bool]]:
    """Merge one lane's runs (start, end, highlight) into blocks at least
    MIN_BLOCK_PX wide; a block is highlighted when any run in it is, so a
    duplicate never disappears into its neighbours."""
    blocks: list[list] = []
    for start, end, hot in sorted(spans):
        end = max(end, start + MIN_BLOCK_PX / px_per_s)
        last = blocks[-1] if blocks else None
        if last is not None and start - last[1] < MIN_BLOCK_PX / px_per_s and last[2] == hot:
            last[1] = max(last[1], end)
        else:
            blocks.append([start, end, hot])
    return [tuple(b) for b in blocks]


def timeline(
    bars,
    lanes: int,
    span: float,
    *,
    width: int = 900,
    title: str = "",
    legend: tuple[tuple[str, bool], ...] = (),
) -> str:
    """bars: (lane, start, end, highlight) in seconds; one lane per worker.
    Runs too thin to see are merged into blocks (lane_blocks); `legend` names
    what blue (False) and red (True) mean."""
    left, top, lane_h = 76, 40 if legend else 22, 20
    plot_w = width - left - 10
    height = top + lanes * lane_h + 26
    body = []
    for i, (label, hot) in enumerate(legend):
        key_x = 4 + i * 260
        body.append(f'<rect x="{key_x}" y="20" width="14" height="12" fill="{RED if hot else BLUE}"/>')
        body.append(f'<text x="{key_x + 18}" y="30" font-size="13">{escape(label)}</text>')
    by_lane: dict[int, list] = {}
    for lane, start, end, hot in bars:
        by_lane.setdefault(lane, []).append((start, end, hot))
    for lane in range(lanes):
        y = top + lane * lane_h
        body.append(f'<text x="4" y="{y + 14}" font-size="13">worker {lane + 1}</text>')
        body.append(f'<rect x="{left}" y="{y}" width="{plot_w}" height="{lane_h - 2}" fill="#f3f3f3"/>')
        for start, end, hot in lane_blocks(by_lane.get(lane, []), plot_w / span)[:MAX_BARS]:
            x = left + plot_w * start / span
            w = min(plot_w * (end - start) / span, left + plot_w - x)
            body.append(
                f'<rect class="{"twice" if hot else "once"}" x="{x:.1f}" y="{y + 2}" '
                f'width="{w:.1f}" height="{lane_h - 6}" fill="{RED if hot else BLUE}"/>'
            )
    axis_y = top + lanes * lane_h + 16
    for i in range(5):
        t = span * i / 4
        anchor = ("start", "middle", "middle", "middle", "end")[i]
        body.append(
            f'<text x="{left + plot_w * i / 4:.0f}" y="{axis_y}" text-anchor="{anchor}" '
            f'font-size="12">{t:.2f} s</text>'
        )
    return frame(width, height, body, title)


def series(
    points: Sequence[tuple[int, Sequence[tuple[str, float]]]],
    *,
    width: int = 720,
    title: str = "",
    x_label: str = "",
    y_label: str = "",
) -> str:
    """A small line chart with axes: points of (x, [(series name, y), ...]),
    one line per series, a tick at every x, and a legend."""
    left, top, bottom, right = 56, 44, 40, 16
    height = 300
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = [x for x, _ in points]
    names = [name for name, _ in points[0][1]] if points else []
    top_y = max([y for _, ys in points for _, y in ys] + [1])
    colours = [BLUE, RED, "#2ca02c", "#9467bd"]

    def px(x: float) -> float:
        return left + plot_w * (x - min(xs)) / max(max(xs) - min(xs), 1)

    def py(y: float) -> float:
        return top + plot_h * (1 - y / top_y)

    body = [
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#333"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#333"/>',
    ]
    for x in xs:
        body.append(f'<text x="{px(x):.1f}" y="{top + plot_h + 14}" text-anchor="middle">{x}</text>')
    for i in range(5):
        y = top_y * i / 4
        body.append(f'<text x="{left - 4}" y="{py(y) + 4:.1f}" text-anchor="end">{y:,.0f}</text>')
        body.append(
            f'<line x1="{left}" y1="{py(y):.1f}" x2="{left + plot_w}" y2="{py(y):.1f}" stroke="#ddd"/>'
        )
    body.append(
        f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle">{escape(x_label)}</text>'
    )
    body.append(f'<text x="4" y="{top - 6}">{escape(y_label)}</text>')
    for n, name in enumerate(names):
        colour = colours[n % len(colours)]
        line = " ".join(f"{px(x):.1f},{py(dict(ys)[name]):.1f}" for x, ys in points)
        body.append(
            f'<polyline class="series" points="{line}" fill="none" stroke="{colour}" stroke-width="2"/>'
        )
        for x, ys in points:
            body.append(f'<circle cx="{px(x):.1f}" cy="{py(dict(ys)[name]):.1f}" r="3" fill="{colour}"/>')
        body.append(f'<rect x="{left + 10 + n * 250}" y="20" width="14" height="4" fill="{colour}"/>')
        body.append(f'<text x="{left + 28 + n * 250}" y="26">{escape(name)}</text>')
    return frame(width, height, body, title)


def bars(
    rows,
    *,
    width: int = 720,
    title: str = "",
    lines=(),
    unit: str = "s",
    fmt: str = "{:.2f}",
    right: int = 70,
) -> str:
    """Horizontal bars: rows of (label, value, note); lines of (label, value)
    drawn as dashed reference lines, such as the serial and shared ideals.
    `fmt` formats each value; `right` is the room kept for the value's text."""
    rows = list(rows)
    left, top, bar_h = 240, 22, 22
    plot_w = width - left - right
    top_value = max([v for _, v, _ in rows] + [v for _, v in lines] + [1e-9])
    height = top + len(rows) * bar_h + 30
    body = []
    for i, (label, value, note) in enumerate(rows):
        y = top + i * bar_h
        w = plot_w * value / top_value
        body.append(f'<text x="4" y="{y + 14}">{escape(label)}</text>')
        body.append(f'<rect x="{left}" y="{y + 3}" width="{w:.1f}" height="{bar_h - 8}" fill="#1f77b4"/>')
        body.append(
            f'<text x="{left + w + 4:.1f}" y="{y + 14}">{fmt.format(value)} {unit} {escape(note)}</text>'
        )
    for label, value in lines:
        x = left + plot_w * value / top_value
        body.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{height - 20}" '
            'stroke="#555" stroke-dasharray="4 3"/>'
        )
        body.append(f'<text x="{x + 2:.1f}" y="{height - 8}">{escape(label)}</text>')
    return frame(width, height, body, title)


def line(
    points,
    *,
    width: int = 720,
    height: int = 180,
    title: str = "",
    x_label: str = "",
    y_label: str = "",
    guide: tuple[str, float] | None = None,
) -> str:
    """One series as a line with dots: points are (x, y). `guide` draws a
    dashed horizontal reference, such as the guide's figure."""
    points = list(points)[:MAX_BARS]
    left, top, bottom, right = 70, 22, 34, 16
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = [x for x, _ in points] or [0]
    ys = [y for _, y in points] + ([guide[1]] if guide else [])
    x_max, y_max = max(max(xs), 1e-9), max(max(ys, default=0), 1e-9)

    def at(x: float, y: float) -> tuple[float, float]:
        return left + plot_w * x / x_max, top + plot_h * (1 - y / y_max)

    body = [
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#999"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#999"/>',
    ]
    for i in range(3):
        value = y_max * i / 2
        _, y = at(0, value)
        body.append(f'<text x="{left - 4}" y="{y + 4:.0f}" text-anchor="end">{value:,.4g}</text>')
    for i in range(5):
        value = x_max * i / 4
        x, _ = at(value, 0)
        body.append(f'<text x="{x:.0f}" y="{top + plot_h + 14}" text-anchor="middle">{value:,.4g}</text>')
    body.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{height - 4}" text-anchor="middle">{escape(x_label)}</text>'
    )
    body.append(f'<text x="4" y="{top + 10}" font-style="italic">{escape(y_label)}</text>')
    if guide:
        _, y = at(0, guide[1])
        body.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#555" '
            f'stroke-dasharray="4 3"/><text x="{left + plot_w - 2}" y="{y - 3:.1f}" '
            f'text-anchor="end">{escape(guide[0])}</text>'
        )
    if points:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (at(*p) for p in points))
        body.append(f'<polyline points="{path}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
        body += [
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="#1f77b4"/>' for x, y in (at(*p) for p in points)
        ]
    return frame(width, height, body, title)
