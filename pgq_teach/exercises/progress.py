"""The learner's progress file (`progress.json`), checked when it is read.

One entry per exercise key ("05/complete"):

    {"latest": {"passed": bool, "refused": bool, "headline": str, "hint": str, "at": str, "sql": str},
     "passed": bool, "passed_sql": str, "passed_verdict": {the passing check's record}}

Only a verdict writes it (`exercises.record`), so an entry that is not of this
shape was not written by pgq-teach: `check` raises ValueError naming the
first thing wrong, and `learner.load` then moves the file aside with a
warning. An exercise counts as passed only when its entry says `passed: true`
(a JSON true, never the text "no") beside the SQL that passed.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

NAME = "progress"


@dataclass(frozen=True)
class Try:
    """One check as the progress file keeps it."""

    passed: bool
    refused: bool
    headline: str
    hint: str
    at: str
    sql: str = ""


@dataclass(frozen=True)
class ProgressEntry:
    """An exercise's entry: the latest try, and the pass if there was one."""

    latest: Try | None = None
    passed: bool = False
    passed_sql: str | None = None
    passed_verdict: Try | None = None

    @property
    def done(self) -> bool:
        return self.passed and self.passed_sql is not None


def _typed(where: str, value: Any, kind: type | tuple[type, ...]) -> Any:
    """`value` if it is of `kind` (a bool is not an int here), else ValueError."""
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ValueError(f"{where} is {type(value).__name__} {str(value)[:40]!r}")
    return value


def read_try(where: str, raw: Any) -> Try:
    _typed(where, raw, dict)
    values = {}
    for f in fields(Try):
        if f.name in raw:
            values[f.name] = _typed(f"{where}.{f.name}", raw[f.name], bool if f.type == "bool" else str)
        elif f.name != "sql":
            raise ValueError(f"{where} has no {f.name}")
    return Try(**values)


def read_entry(key: str, raw: Any) -> ProgressEntry:
    """The entry for `key`, or ValueError naming what is wrong."""
    _typed(key, raw, dict)
    unknown = set(raw) - {f.name for f in fields(ProgressEntry)}
    if unknown:
        raise ValueError(f"{key} holds {', '.join(sorted(unknown))}")
    latest = read_try(f"{key}.latest", raw["latest"]) if "latest" in raw else None
    passed = _typed(f"{key}.passed", raw.get("passed", False), bool)
    passed_sql = _typed(f"{key}.passed_sql", raw["passed_sql"], str) if "passed_sql" in raw else None
    verdict = read_try(f"{key}.passed_verdict", raw["passed_verdict"]) if "passed_verdict" in raw else None
    if verdict is not None and not verdict.passed:
        raise ValueError(f"{key}.passed_verdict is not a pass")
    return ProgressEntry(latest, passed, passed_sql, verdict)


def check(data: dict[str, Any]) -> None:
    """The schema check for `learner.load`: ValueError if any entry is not of the shape above."""
    for key, raw in data.items():
        read_entry(key, raw)


def entries(data: dict[str, Any]) -> dict[str, ProgressEntry]:
    """Every entry, read (data already passed `check`)."""
    return {key: read_entry(key, raw) for key, raw in data.items()}
