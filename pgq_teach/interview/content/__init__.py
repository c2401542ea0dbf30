"""The interview rehearsal's content, loaded from the YAML files beside this
module: the opening prompt and clarify topics, the scenarios (the interviewer's
answers and load profile), the steps with their rubrics and model answers, the
follow-up questions and the trade-off table.

The files are the single source for the widget, the CLI and the notebook; this
module only reads them into frozen records and checks their shape, so a broken
edit fails here, with the file and entry named, not halfway through a rehearsal.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from ...errors import BadInput

LEVELS = (1, 2, 3)


def load_file(name: str) -> dict[str, Any]:
    """One content file as a dict, read from the installed package."""
    path = resources.files(__name__).joinpath(f"{name}.yaml")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise BadInput(f"content file {name}.yaml must hold a mapping")
    return data


@dataclass(frozen=True)
class JobKind:
    """One kind of job in a scenario: how many each order makes and how long one takes."""

    name: str
    per_order: float
    work_ms: float
    slo: str
    partner: str


@dataclass(frozen=True)
class Scenario:
    """A load profile and the interviewer's answers to the clarify questions."""

    key: str
    title: str
    orders_per_day: float
    peak_orders_per_s: float
    retention_days: float
    batch: int
    jobs: tuple[JobKind, ...]
    answers: dict[str, str]

    @property
    def avg_orders_per_s(self) -> float:
        return self.orders_per_day / 86_400

    @property
    def jobs_per_order(self) -> float:
        return sum(j.per_order for j in self.jobs)

    @property
    def work_ms(self) -> float:
        """The average work per job, weighted by how many of each kind an order makes."""
        return sum(j.per_order * j.work_ms for j in self.jobs) / self.jobs_per_order


@dataclass(frozen=True)
class Level:
    """One level of a rubric dimension: what the interviewer hears, and an example answer."""

    level: int
    name: str
    says: str
    example: str


@dataclass(frozen=True)
class Rubric:
    dimension: str
    levels: tuple[Level, ...]

    def level(self, n: int) -> Level:
        return self.levels[n - 1]


@dataclass(frozen=True)
class InterviewStep:
    """A step of the rehearsal, scored on one interviewer dimension."""

    key: str
    title: str
    minutes: float
    prompt: str
    hints: tuple[str, ...]
    red_flags: tuple[str, ...]
    rubric: Rubric
    model: str


@dataclass(frozen=True)
class SqlStep:
    """One SQL statement a model answer quotes (shown) or needs to be checked (setup)."""

    text: str
    rows: int
    shown: bool


@dataclass(frozen=True)
class FollowUp:
    key: str
    topic: str
    question: str
    model_text: str
    sql: tuple[SqlStep, ...]

    def model(self) -> str:
        """The model answer with the SQL it quotes."""
        shown = [s.text.strip() for s in self.sql if s.shown]
        return "\n\n".join([self.model_text, *shown])


@dataclass(frozen=True)
class Cell:
    text: str
    source: str


@dataclass(frozen=True)
class TradeOffRow:
    key: str
    title: str
    cells: dict[str, Cell]


def rubric_of(where: str, data: dict[str, Any]) -> Rubric:
    levels = data.get("levels") or {}
    if sorted(levels) != list(LEVELS):
        raise BadInput(f"{where}: a rubric has levels 1, 2 and 3, got {sorted(levels)}")
    return Rubric(
        str(data["dimension"]),
        tuple(Level(n, levels[n]["name"], levels[n]["says"], levels[n]["example"]) for n in LEVELS),
    )


@cache
def opening() -> dict[str, Any]:
    """The interviewer's opening prompt, the clarify instructions and the topics."""
    return load_file("prompt")


@cache
def scenarios() -> dict[str, Scenario]:
    out = {}
    for key, s in load_file("scenarios").items():
        topics = set(opening()["topics"])
        if set(s["answers"]) != topics:
            raise BadInput(f"scenarios.yaml {key}: answers must cover exactly {sorted(topics)}")
        out[key] = Scenario(
            key,
            s["title"],
            float(s["orders_per_day"]),
            float(s["peak_orders_per_s"]),
            float(s["retention_days"]),
            int(s["batch"]),
            tuple(
                JobKind(name, float(j["per_order"]), float(j["work_ms"]), j["slo"], j["partner"])
                for name, j in s["jobs"].items()
            ),
            dict(s["answers"]),
        )
    return out


@cache
def steps_and_communication() -> tuple[tuple[InterviewStep, ...], Rubric]:
    data = load_file("steps")
    communication = rubric_of("steps.yaml communication", data.pop("communication")["rubric"])
    steps = tuple(
        InterviewStep(
            key,
            s["title"],
            float(s["minutes"]),
            s["prompt"],
            tuple(s["hints"]),
            tuple(s["red_flags"]),
            rubric_of(f"steps.yaml {key}", s["rubric"]),
            s["model"],
        )
        for key, s in data.items()
    )
    return steps, communication


@cache
def follow_ups() -> dict[str, FollowUp]:
    return {
        key: FollowUp(
            key,
            f["topic"],
            f["question"],
            f["model"],
            tuple(SqlStep(s["text"], int(s["rows"]), bool(s["shown"])) for s in f.get("sql") or []),
        )
        for key, f in load_file("follow_ups").items()
    }


@cache
def trade_offs() -> tuple[dict[str, str], tuple[TradeOffRow, ...]]:
    """(system key -> name, the rows); every row has a cell with a source for every system."""
    data = load_file("tradeoffs")
    systems = dict(data["systems"])
    rows = []
    for key, row in data["rows"].items():
        cells = {s: Cell(row[s]["text"], row[s]["source"]) for s in systems if s in row}
        if set(cells) != set(systems) or not all(c.source for c in cells.values()):
            raise BadInput(f"tradeoffs.yaml {key}: every system needs a cell with a source")
        rows.append(TradeOffRow(key, row["title"], cells))
    return systems, tuple(rows)
