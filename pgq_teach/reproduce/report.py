"""What a reproduction found: one row per figure, the server and machine it
ran on, and the same as a terminal table, Markdown and JSON. A comparison
sets two reports (PostgreSQL 16 and 18) side by side beside the guide's two columns."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import tables
from ..tables import Table
from .entry import GUIDE_VERSIONS, guide_major
from .verdicts import STOPPED, FigureVerdict


@dataclass
class ReportRow:
    figure: int
    experiment: str
    guide: dict[int, str]  # the guide's figure on 16 and on 18
    measured: str
    verdict: FigureVerdict
    shrunk: str = ""  # what --quick changed for this row, if anything
    must: bool = False  # a figure with a claim every server must show
    must_claim: str = ""
    held: bool | None = None  # whether that claim held here (None: not measured yet)
    timing: bool = False
    values: dict[str, Any] = field(default_factory=dict)
    took_s: float = 0.0

    @property
    def failed(self) -> bool:
        """A must-show claim that did not hold here (a stopped run fails nothing)."""
        return self.must and self.verdict.kind != STOPPED and not self.held

    def measured_text(self) -> str:
        return self.measured + (f" [quick: {self.shrunk}]" if self.shrunk else "")

    def guide_text(self, major: int) -> str:
        shown = guide_major(major)
        return f"{self.guide[shown]} (PG {GUIDE_VERSIONS[shown]})"


@dataclass
class Report:
    server_line: str
    server_version: str
    major: int
    cpus: int
    machine: str
    date: str
    quick: bool
    rows: list[ReportRow] = field(default_factory=list)
    load: float | None = None  # the 1-minute load average at the start: timings on a busy machine stretch
    stopped: bool = False
    not_run: list[int] = field(default_factory=list)  # figures asked for but not reached before a stop

    @property
    def failures(self) -> list[ReportRow]:
        return [r for r in self.rows if r.failed]

    @property
    def ok(self) -> bool:
        return not self.failures

    def heading(self) -> list[str]:
        load = f", load {self.load:.1f}" if self.load is not None else ""
        lines = [
            f"server: {self.server_line}",
            f"machine: {self.machine}, {self.cpus} CPUs{load}; date: {self.date}",
        ]
        if self.quick:
            lines.append("--quick: smaller sizes where a figure scales; each shrunk row says so")
        return lines

    def footing(self) -> list[str]:
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r.verdict.kind] = counts.get(r.verdict.kind, 0) + 1
        lines = ["; ".join(f"{n} {kind}" for kind, n in counts.items()) or "nothing measured"]
        held = [r for r in self.rows if r.must and r.held]
        if held:
            lines.append("* must hold on every server; held here: " + ", ".join(f"#{r.figure}" for r in held))
        if self.stopped:
            lines.append(
                "stopped early (Ctrl-C); not run: " + (", ".join(f"#{n}" for n in self.not_run) or "none")
            )
        for r in self.failures:
            lines.append(f"FAILED #{r.figure}: every server must show {r.must_claim}; here: {r.verdict}")
        return lines

    def table(self, width: int | None = None) -> str:
        """The terminal table, laid out to the terminal's width; each verdict's
        reason under its experiment."""
        head = ("#", "experiment", "guide's figure", "this server", "verdict")
        body = [
            (
                f"{r.figure}{'*' if r.must else ''}",
                r.experiment + (f"\nwhy: {r.verdict.reason}" if r.verdict.reason else ""),
                r.guide_text(self.major),
                r.measured_text(),
                r.verdict.kind,
            )
            for r in self.rows
        ]
        return Table(tables.columns(*head), body).text(width)

    def text(self, width: int | None = None) -> str:
        """Heading, table and footing for a terminal `width` characters wide (its own, when not given)."""
        heading, footing = (
            tables.fit("\n".join(lines), width, indent="  ") for lines in (self.heading(), self.footing())
        )
        return "\n\n".join([heading, self.table(width), footing])

    def markdown(self) -> str:
        lines = ["# The guide's figures on this server", ""]
        lines += [f"- {line}" for line in self.heading()]
        lines += ["", "| # | experiment | guide's figure | this server | verdict |", "|---|---|---|---|---|"]
        for r in self.rows:
            verdict = (
                str(r.verdict) + must_note(r) + (" (timing: reported, never failed on)" if r.timing else "")
            )
            lines.append(
                f"| {r.figure} | {cell(r.experiment)} | {cell(r.guide_text(self.major))} | "
                f"{cell(r.measured_text())} | {cell(verdict)} |"
            )
        return "\n".join([*lines, "", *self.footing(), ""])

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        for row, r in zip(data["rows"], self.rows, strict=True):
            row["verdict"] = {"kind": r.verdict.kind, "reason": r.verdict.reason}
            row["failed"] = r.failed
        data["ok"] = self.ok
        return data

    def write(self, folder: Path, stem: str = "reproduce") -> list[Path]:
        return write_pair(folder, stem, self.markdown(), self.as_json())


def must_note(row: ReportRow) -> str:
    if not row.must or row.held is None:
        return ""
    return f" (must show {row.must_claim}: {'held' if row.held else 'DID NOT HOLD'})"


def verdict_cell(row: ReportRow | None, with_reason: bool) -> str:
    if row is None:
        return ""
    return str(row.verdict) if with_reason else row.verdict.kind


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def write_pair(folder: Path, stem: str, markdown: str, data: dict[str, Any]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    md, js = folder / f"{stem}.md", folder / f"{stem}.json"
    md.write_text(markdown)
    js.write_text(json.dumps(data, indent=2, default=str) + "\n")
    return [md, js]


# --- two majors side by side -------------------------------------------------------


@dataclass
class MajorsComparison:
    reports: list[Report]  # oldest major first

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.reports)

    def grid(self, reasons_inline: bool = False) -> tuple[tuple[str, ...], list[tuple[str, ...]], list[str]]:
        """Header, rows, and the reasons to print under them (or, with
        `reasons_inline`, each in its own verdict cell and none under)."""
        head = (
            "#",
            "experiment",
            *(f"guide PG {v}" for v in GUIDE_VERSIONS.values()),
            *(f"PG {r.server_version}" for r in self.reports),
            *(f"verdict {r.major}" for r in self.reports),
        )
        numbers = sorted({row.figure for r in self.reports for row in r.rows})
        rows, reasons = [], []
        for n in numbers:
            found = [next((row for row in r.rows if row.figure == n), None) for r in self.reports]
            first = next(row for row in found if row is not None)
            rows.append(
                (
                    str(n),
                    first.experiment,
                    *(first.guide[m] for m in GUIDE_VERSIONS),
                    *(row.measured_text() if row else "not run" for row in found),
                    *(verdict_cell(row, reasons_inline) for row in found),
                )
            )
            why = [
                f"{r.major}: {row.verdict.reason}"
                for r, row in zip(self.reports, found, strict=True)
                if row and row.verdict.reason and not reasons_inline
            ]
            reasons.append("; ".join(why))
        return head, rows, reasons

    def heading(self) -> list[str]:
        return [line for r in self.reports for line in r.heading()[:1]] + self.reports[0].heading()[1:]

    def text(self, width: int | None = None) -> str:
        """Both majors side by side, laid out to the terminal's width; the reasons
        under each experiment."""
        head, rows, reasons = self.grid()
        body = [
            (n, experiment + (f"\nwhy: {why}" if why else ""), *rest)
            for (n, experiment, *rest), why in zip(rows, reasons, strict=True)
        ]
        table = Table(tables.columns(*head), body).text(width)
        footing = [f"PG {r.major}: " + " / ".join(r.footing()) for r in self.reports]
        return "\n\n".join(
            [tables.fit("\n".join(self.heading()), width), table, tables.fit("\n".join(footing), width)]
        )

    def markdown(self) -> str:
        head, rows, _ = self.grid(reasons_inline=True)
        lines = ["# The guide's figures on PostgreSQL 16 and 18, side by side", ""]
        lines += [f"- {line}" for line in self.heading()]
        lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(cell(c) for c in cells) + " |" for cells in rows]
        lines.append("")
        lines += [f"PG {r.major}: " + " / ".join(r.footing()) for r in self.reports]
        return "\n".join(lines) + "\n"

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "reports": [r.as_json() for r in self.reports]}

    def write(self, folder: Path) -> list[Path]:
        written = write_pair(folder, "compare", self.markdown(), self.as_json())
        for r in self.reports:
            written += r.write(folder, f"reproduce-pg{r.major}")
        return written
