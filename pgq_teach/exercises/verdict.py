"""A check's verdict: passed or not, the evidence the server gave, and a hint
that names the failure. Plain data, so a widget, a notebook, the CLI and the
learner's progress file all read the same thing."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from html import escape
from typing import Any

from .. import tables
from ..guide import GuideFigure
from ..tables import Table

MAX_TEXT = 400  # characters of any one string a verdict keeps: learner data can be any size
MAX_ITEMS = 100  # items of any one list in a verdict's numbers
GRADED_ON = "your lessons' server never runs your SQL"


def cut(value: Any) -> Any:
    """`value` with every string cut to MAX_TEXT characters and every list to
    MAX_ITEMS items, so what a verdict saves or shows stays small."""
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[: MAX_TEXT - 1] + "…"
    if isinstance(value, (list, tuple)):
        return [cut(v) for v in value[:MAX_ITEMS]]
    if isinstance(value, dict):
        return {cut(k): cut(v) for k, v in list(value.items())[:MAX_ITEMS]}
    return value


@dataclass(frozen=True)
class Evidence:
    """One measured fact: what, the value found, and whether it is as it must be
    (None: reported, not judged)."""

    what: str
    found: str
    ok: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "what", cut(str(self.what)))
        object.__setattr__(self, "found", cut(str(self.found)))


@dataclass
class Verdict:
    exercise: str
    passed: bool
    headline: str
    evidence: list[Evidence] = field(default_factory=list)
    hint: str = ""
    refused: bool = False
    server_version: str = ""
    guide: GuideFigure | None = None
    numbers: dict[str, Any] = field(default_factory=dict)
    stopped: bool = False
    guess: Any = None

    def __post_init__(self) -> None:
        # The headline is one line, cut: a refusal's or an error's may quote the learner. The hint
        # is the course's own advice, kept whole: a hint cut mid-word leaves the learner guessing.
        self.headline = cut(" ".join(str(self.headline).split()))
        self.hint = str(self.hint)
        self.numbers = cut(self.numbers)

    @property
    def failures(self) -> list[Evidence]:
        return [e for e in self.evidence if e.ok is False]

    def summary(self) -> str:
        mark = "PASS" if self.passed else ("REFUSED" if self.refused else "NOT YET")
        lines = [f"{self.exercise}: {mark}: {self.headline}"]
        lines += [
            f"  {'✓' if e.ok else '✗' if e.ok is False else '·'} {e.what}: {e.found}" for e in self.evidence
        ]
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        if self.guide:
            lines.append(f"  {self.guide}")
        if self.server_version:
            lines.append(f"  {self.graded_on}")
        return "\n".join(lines)

    @property
    def graded_on(self) -> str:
        """Which server ran the learner's SQL: always the checker, never the lessons' server."""
        return f"graded on the checker: PostgreSQL {self.server_version}, a server of its own ({GRADED_ON})"

    def html(self) -> str:
        """Visible text: the verdict, a table of evidence, the hint."""
        color = "#1b5e20" if self.passed else "#b00020"
        mark = "Pass" if self.passed else ("Refused" if self.refused else "Not yet")
        rows = [["✓" if e.ok else "✗" if e.ok is False else "·", e.what, e.found] for e in self.evidence]
        evidence = tables.columns("ok", "what the checker looked at", "what it found")  # no empty <th>
        table = Table(evidence, rows, css="pgq-evidence").html() if rows else ""
        hint = f'<p class="pgq-hint"><b>Hint:</b> {escape(self.hint)}</p>' if self.hint else ""
        guide = f'<p class="pgq-guide" style="color:#555">{escape(str(self.guide))}</p>' if self.guide else ""
        version = (
            f'<p class="pgq-graded-on" style="color:#555">{escape(self.graded_on)}</p>'
            if self.server_version
            else ""
        )
        return (
            f'<div class="pgq-verdict" data-passed="{str(self.passed).lower()}">'
            f'<p class="pgq-verdict-headline" style="color:{color};font-weight:bold">{mark}: '
            f"{escape(self.headline)}</p>{table}{hint}{guide}{version}</div>"
        )

    def record(self) -> dict[str, Any]:
        """What the learner's progress file keeps of this verdict."""
        return {
            "passed": self.passed,
            "refused": self.refused,
            "headline": self.headline,
            "hint": self.hint,
            "at": time.strftime("%Y-%m-%d %H:%M:%S"),
        }

    @classmethod
    def from_evidence(
        cls,
        exercise: str,
        evidence: list[Evidence],
        hint: str,
        *,
        passed_headline: str,
        passed_hint: str | None = None,
        server_version: str = "",
        guide: GuideFigure | None = None,
        numbers: dict[str, Any] | None = None,
        stopped: bool = False,
    ) -> Verdict:
        """The verdict the evidence gives, as every check words it: passed when
        no judged fact failed (facts only reported, ok None, never fail it);
        the headline `passed_headline` on a pass, else one line counting the failed
        checks (the rows say which); the hint `passed_hint` on a pass when given, else `hint`."""
        failed = [e for e in evidence if e.ok is False]
        passed = not failed
        return cls(
            exercise,
            passed,
            passed_headline if passed else failed_headline(evidence),
            evidence,
            passed_hint if passed and passed_hint is not None else hint,
            server_version=server_version,
            guide=guide,
            numbers=numbers or {},
            stopped=stopped,
        )


def failed_headline(evidence: list[Evidence]) -> str:
    """'2 of 5 checks failed': the count alone, so the headline stays one line however
    many rows failed; the table beneath names them."""
    judged = [e for e in evidence if e.ok is not None]
    failed = [e for e in judged if e.ok is False]
    return f"{len(failed)} of {tables.count(len(judged), 'check')} failed"


def refused(exercise: str, reason: str, hint: str = "") -> Verdict:
    """A verdict on SQL that never ran: `hint` when the refusal named the habit behind it."""
    return Verdict(
        exercise,
        False,
        f"not run: {reason}",
        refused=True,
        hint=hint or "Write exactly one statement of the kind this exercise asks for, then Check again.",
    )
