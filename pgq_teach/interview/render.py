"""What the rehearsal shows in words: the attempt's summary (scores with their trend,
time, every follow-up answer), the trade-off table with a source per cell, and the
one-page summary of the design, its SQL and the learner's numbers, in Markdown and in
HTML laid out to print."""

from __future__ import annotations

import re
from html import escape

from ..errors import BadInput
from ..statements import statement
from . import content
from .answers import model_answer
from .catalog import STEPS, follow_up
from .estimation import drain_quote, readable, scenario_estimate, work_estimate
from .rehearsal import Rehearsal


def clock_text(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


def trend_text(scores: list[int | None]) -> str:
    return " → ".join("–" if s is None else str(s) for s in scores)


def summary_lines(r: Rehearsal) -> list[str]:
    """The attempt's summary: scores with their trend, time, and every follow-up answer."""
    out = [f"scenario: {r.scenario.title}", "scores (1 weak, 2 hire, 3 strong hire), oldest first:"]
    out += [f"  {d:<18} {trend_text(scores)}" for d, scores in r.trend()]
    out += [
        f"  {s.title:<18} time {clock_text(r.spent(s.key))} of {clock_text(r.seconds_for(s.key))}"
        for s in STEPS
    ]
    out.append("follow-ups:")
    for key in r.follow_up_keys:
        out.append(f"  {follow_up(key).question}")
        out.append(f"    you: {r.follow_up_answer(key) or '(not answered)'}")
    return out


# --- the trade-off table and the one-page summary -------------------------------------


def trade_off_markdown() -> str:
    """The trade-off table, each cell with its source as a footnote number."""
    systems, rows = content.trade_offs()
    sources: list[str] = []
    out = ["| | " + " | ".join(systems.values()) + " |", "|---" * (len(systems) + 1) + "|"]
    for row in rows:
        cells = []
        for key in systems:
            cell = row.cells[key]
            if cell.cited not in sources:
                sources.append(cell.cited)
            cells.append(f"{cell.text} [{sources.index(cell.cited) + 1}]")
        out.append(f"| **{row.title}** | " + " | ".join(cells) + " |")
    out += ["", *[f"[{n}] {s}" for n, s in enumerate(sources, 1)]]
    return "\n".join(out)


SUMMARY_SQL = ("claim", "complete", "fail", "reap", "cleanup_done")


def summary_markdown(server_version: str = "") -> str:
    """One page: the design, its SQL, the stored measurements with their lesson and time."""
    out = ["# The PostgreSQL job queue on one page", ""]
    if server_version:
        out += [f"Measured on PostgreSQL {server_version}.", ""]
    out += ["## The design", ""]
    out += [
        f"- **{s.title}**: " + " ".join(model_answer(s.key, "flash-sale", board=False).split())
        for s in STEPS
        if s.key != "estimation"
    ]
    out += ["", "## My numbers", ""]
    drain = drain_quote()
    out.append(
        f"- drain (lesson 11): {readable(float(drain.value))} {drain.unit}, {drain.source}"
        if drain
        else "- drain: not measured yet (lesson 11)"
    )
    work = work_estimate("flash-sale")
    out += [f"- flash sale: {line}" for line in [work.binding(), *work.lines()]]
    try:
        out += [f"- flash sale: {line}" for line in scenario_estimate("flash-sale").lines()]
    except BadInput as exc:
        out.append(f"- estimate: {exc}")
    out += ["", "## The SQL", ""]
    for name in SUMMARY_SQL:
        out += [f"`sql/{name}.sql`", "", "```sql", statement(name).text, "```", ""]
    return "\n".join(out)


def summary_html(server_version: str = "") -> str:
    """The same page as HTML, laid out to print on one sheet."""
    body, in_code = [], False
    for line in summary_markdown(server_version).splitlines():
        if line.startswith("```"):
            body.append("<pre class='pgq-sql'>" if not in_code else "</pre>")
            in_code = not in_code
        elif in_code:
            body.append(escape(line))
        elif line.startswith("# "):
            body.append(f"<h1>{inline(line[2:])}</h1>")
        elif line.startswith("## "):
            body.append(f"<h2>{inline(line[3:])}</h2>")
        elif line.startswith("- "):
            body.append(f"<div>• {inline(line[2:])}</div>")
        elif line.strip():
            body.append(f"<p>{inline(line)}</p>")
    style = (
        "<style>.pgq-summary{font:12px/1.35 sans-serif;max-width:60em}.pgq-summary h1{font-size:18px}"
        ".pgq-summary h2{font-size:14px;margin:8px 0 2px}.pgq-summary pre{font-size:10px;margin:2px 0;"
        "background:#f6f6f6;padding:4px}@media print{.pgq-summary pre{white-space:pre-wrap}}</style>"
    )
    return style + "<div class='pgq-summary'>" + "\n".join(body) + "</div>"


def inline(text: str) -> str:
    """Markdown's `code`, **bold** and *italic*, for the summary's own lines."""
    html = escape(text)
    html = re.sub(r"`([^`]+)`", r"<code>\1</code>", html)
    html = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", html)
    return re.sub(r"\*([^*]+)\*", r"<i>\1</i>", html)
