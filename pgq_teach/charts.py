"""Small SVG charts, drawn by hand so the course needs no plotting library.
Each returns an SVG string; notebooks show it with IPython.display.SVG and
widgets put it in an HTML widget."""

from __future__ import annotations

from html import escape

MAX_BARS = 6_000  # beyond this a browser slows down and the eye sees no more


def _frame(width: int, height: int, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="pgq-chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">'
        f"<title>{escape(title)}</title>"
        f'<text x="4" y="13" font-size="12">{escape(title)}</text>' + "".join(body) + "</svg>"
    )


def timeline(bars, lanes: int, span: float, *, width: int = 720, title: str = "") -> str:
    """bars: (lane, start, end, highlight) in seconds; one lane per worker."""
    left, top, lane_h = 64, 22, 14
    plot_w = width - left - 10
    height = top + lanes * lane_h + 26
    body = []
    for lane in range(lanes):
        y = top + lane * lane_h
        body.append(f'<text x="4" y="{y + 10}">worker {lane + 1}</text>')
        body.append(f'<rect x="{left}" y="{y}" width="{plot_w}" height="{lane_h - 2}" fill="#f3f3f3"/>')
    for lane, start, end, hot in list(bars)[:MAX_BARS]:
        x = left + plot_w * start / span
        w = max(plot_w * (end - start) / span, 0.8)
        colour = "#d62728" if hot else "#1f77b4"
        body.append(
            f'<rect class="{"twice" if hot else "once"}" x="{x:.1f}" y="{top + lane * lane_h + 1}" '
            f'width="{w:.1f}" height="{lane_h - 4}" fill="{colour}"/>'
        )
    axis_y = top + lanes * lane_h + 14
    for i in range(5):
        t = span * i / 4
        anchor = ("start", "middle", "middle", "middle", "end")[i]
        body.append(f'<text x="{left + plot_w * i / 4:.0f}" y="{axis_y}" text-anchor="{anchor}">{t:.2f} s</text>')
    return _frame(width, height, body, title)


def bars(rows, *, width: int = 720, title: str = "", lines=(), unit: str = "s", fmt: str = "{:.2f}",
         right: int = 70) -> str:
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
        body.append(f'<text x="{left + w + 4:.1f}" y="{y + 14}">{fmt.format(value)} {unit} {escape(note)}</text>')
    for label, value in lines:
        x = left + plot_w * value / top_value
        body.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{height - 20}" stroke="#555" stroke-dasharray="4 3"/>'
        )
        body.append(f'<text x="{x + 2:.1f}" y="{height - 8}">{escape(label)}</text>')
    return _frame(width, height, body, title)


def line(points, *, width: int = 720, height: int = 180, title: str = "", x_label: str = "",
         y_label: str = "", guide: tuple[str, float] | None = None) -> str:
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

    body = [f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#999"/>',
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#999"/>']
    for i in range(3):
        value = y_max * i / 2
        _, y = at(0, value)
        body.append(f'<text x="{left - 4}" y="{y + 4:.0f}" text-anchor="end">{value:,.4g}</text>')
    for i in range(5):
        value = x_max * i / 4
        x, _ = at(value, 0)
        body.append(f'<text x="{x:.0f}" y="{top + plot_h + 14}" text-anchor="middle">{value:,.4g}</text>')
    body.append(f'<text x="{left + plot_w / 2:.0f}" y="{height - 4}" text-anchor="middle">{escape(x_label)}</text>')
    body.append(f'<text x="4" y="{top + 10}" font-style="italic">{escape(y_label)}</text>')
    if guide:
        _, y = at(0, guide[1])
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#555" '
                    f'stroke-dasharray="4 3"/><text x="{left + plot_w - 2}" y="{y - 3:.1f}" '
                    f'text-anchor="end">{escape(guide[0])}</text>')
    if points:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (at(*p) for p in points))
        body.append(f'<polyline points="{path}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
        body += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="#1f77b4"/>' for x, y in (at(*p) for p in points)]
    return _frame(width, height, body, title)
