"""The interview rehearsal's content, loaded from the YAML files beside this
module: the opening prompt and clarify topics, the scenarios (the interviewer's
answers and load profile), the steps with their rubrics and model answers, the
follow-up questions and the trade-off table.

The files are the single source for the widget, the CLI and the notebook; this
module only reads them into frozen records and checks their shape, so a broken
edit fails here, with the file and entry named, not halfway through a rehearsal.

Each scenario is a file of its own in `scenarios/`: its load profile, its partners
and their quotas, the interviewer's answers, its hard parts by key, and for every
step the model answer (a section per hard part the step answers), the strong-hire
example and the rubric notes written for that scenario. `steps.yaml` holds only
what every scenario shares: the prompt, hints, red flags, the rubric's levels and
the mechanisms' SQL the deep dive writes on the board.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from ... import measurements
from ...errors import BadInput

LEVELS = (1, 2, 3)


def load_file(name: str) -> dict[str, Any]:
    """One content file as a dict, read from the installed package (`name` may be
    `scenarios/flash-sale`)."""
    path = resources.files(__name__).joinpath(f"{name}.yaml")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise BadInput(f"content file {name}.yaml must hold a mapping")
    return data


@dataclass(frozen=True)
class JobKind:
    """One kind of job in a scenario: how many each order makes, how long one takes
    (wall time, mostly waiting on its partner), the CPU its handler burns, what it
    stores in the object store, and its deadline (in words and in seconds)."""

    name: str
    per_order: float
    work_ms: float
    cpu_ms: float
    stored_bytes: float
    slo: str
    slo_s: float
    partner: str


@dataclass(frozen=True)
class Partner:
    """An outside system some kinds call: its quota (None when the interviewer gave
    none) and how long it is down at a time (0 when not said)."""

    key: str
    name: str
    quota_per_s: float | None
    kinds: tuple[str, ...]
    outage_minutes: float
    note: str


@dataclass(frozen=True)
class HardPart:
    """What makes this scenario hard, and the steps whose model answer has a section for it."""

    key: str
    title: str
    steps: tuple[str, ...]


@dataclass(frozen=True)
class ScenarioStep:
    """One step written for one scenario: the rubric notes (what a strong answer covers
    here), the strong-hire example, and the model answer as (section key, text) pairs."""

    notes: str
    strong_hire: str
    sections: tuple[tuple[str, str], ...]

    def section(self, key: str) -> str:
        return dict(self.sections).get(key, "")


@dataclass(frozen=True)
class Scenario:
    """A load profile and the interviewer's answers to the clarify questions."""

    key: str
    title: str
    orders_per_day: float
    day_hours: float
    peak_orders_per_s: float
    peak_minutes: float
    retention_days: float
    batch: int
    jobs: tuple[JobKind, ...]
    partners: tuple[Partner, ...]
    answers: dict[str, str]
    hard_parts: tuple[HardPart, ...]
    steps: dict[str, ScenarioStep]

    @property
    def avg_orders_per_s(self) -> float:
        """Orders a second averaged over the whole day (what storage and retention see)."""
        return self.orders_per_day / 86_400

    @property
    def busy_orders_per_s(self) -> float:
        """Orders a second over the hours the orders arrive in (what an outage piles up)."""
        return self.orders_per_day / (self.day_hours * 3600)

    def kind(self, name: str) -> JobKind:
        return next(j for j in self.jobs if j.name == name)

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
class SqlStep:
    """One SQL statement a model answer quotes (shown) or needs to be checked (setup).
    `name` titles a shown mechanism ("the claim"); `params` fill its psql-style
    placeholders (`:id`, `:'lease'`) when a test or a lesson runs it."""

    text: str
    rows: int
    shown: bool
    name: str = ""
    params: tuple[tuple[str, Any], ...] = ()


def sql_steps(where: str, items: list[dict[str, Any]] | None) -> tuple[SqlStep, ...]:
    out = []
    for n, s in enumerate(items or []):
        if s.get("shown") and "name" not in s and where.startswith("steps.yaml"):
            raise BadInput(f"{where} sql {n}: a shown mechanism needs a name")
        out.append(
            SqlStep(
                s["text"],
                int(s["rows"]),
                bool(s["shown"]),
                str(s.get("name", "")),
                tuple((s.get("params") or {}).items()),
            )
        )
    return tuple(out)


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
    sql: tuple[SqlStep, ...] = ()


@dataclass(frozen=True)
class QuotedFigures:
    """A sentence a follow-up's model answer adds once the learner has run the lab that
    measures it: `says`, its `{fields}` filled from the stored figures of `measurement`
    (a `Measurement` in pgq_teach.measurements, named as in `measurement: NAME`)."""

    measurement: measurements.Measurement
    says: str

    def quote(self) -> str | None:
        """The sentence with the learner's own figures and when they were taken; None
        before the lab has run."""
        # Imported here: estimation imports the catalog, which loads this module.
        from ..estimation import quote, readable

        found = quote(self.measurement)
        if found is None or not isinstance(found.value, dict):
            return None
        figures = {k: v if isinstance(v, str) else readable(float(v)) for k, v in found.value.items()}
        return f"{self.says.strip().format_map(figures)} ({found.source})"


@dataclass(frozen=True)
class FollowUp:
    key: str
    topic: str
    question: str
    model_text: str
    sql: tuple[SqlStep, ...]
    measured: tuple[QuotedFigures, ...] = ()

    def model(self) -> str:
        """The model answer, the learner's own measurements it quotes (those already
        taken), and the SQL it quotes."""
        quoted = [q for q in (m.quote() for m in self.measured) if q]
        shown = [s.text.strip() for s in self.sql if s.shown]
        return "\n\n".join([" ".join([self.model_text, *quoted]), *shown])


@dataclass(frozen=True)
class Cell:
    text: str
    source: str
    read: str = ""  # when a web page was read: vendors' pages change, so a fact carries its date

    @property
    def cited(self) -> str:
        """The source as a footnote gives it: a web page with the date it was read."""
        return f"{self.source} (read {self.read})" if self.read else self.source


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
        # a step's strong-hire example is written per scenario (catalog.rubric_for)
        tuple(Level(n, levels[n]["name"], levels[n]["says"], levels[n].get("example", "")) for n in LEVELS),
    )


@cache
def opening() -> dict[str, Any]:
    """The interviewer's opening prompt, the clarify instructions and the topics."""
    return load_file("prompt")


SCENARIO_FILES = ("small-store", "flash-sale", "multi-tenant-saas")


def scenario_of(key: str, s: dict[str, Any], step_keys: tuple[str, ...]) -> Scenario:
    """One scenario file read and checked: its answers cover every clarify topic, its
    partners name its kinds, every step is written for it, and every hard part names
    steps that have a section for it."""
    where = f"scenarios/{key}.yaml"
    topics = set(opening()["topics"])
    if set(s["answers"]) != topics:
        raise BadInput(f"{where}: answers must cover exactly {sorted(topics)}")
    jobs = tuple(
        JobKind(
            name,
            float(j["per_order"]),
            float(j["work_ms"]),
            float(j["cpu_ms"]),
            float(j.get("stored_bytes", 0)),
            j["slo"],
            float(j["slo_s"]),
            j["partner"],
        )
        for name, j in s["jobs"].items()
    )
    partners = tuple(
        Partner(
            pk,
            p["name"],
            None if p.get("quota_per_s") is None else float(p["quota_per_s"]),
            tuple(p["kinds"]),
            float(p.get("outage_minutes", 0)),
            p.get("note", ""),
        )
        for pk, p in s["partners"].items()
    )
    kinds = {j.name for j in jobs}
    for p in partners:
        if not set(p.kinds) <= kinds:
            raise BadInput(f"{where} partner {p.key}: unknown kinds {sorted(set(p.kinds) - kinds)}")
    hard = tuple(HardPart(hk, h["title"], tuple(h["steps"])) for hk, h in s["hard_parts"].items())
    if set(s["steps"]) != set(step_keys):
        raise BadInput(f"{where}: steps must be written for exactly {list(step_keys)}")
    steps = {
        sk: ScenarioStep(v["notes"], v["strong_hire"], tuple((k, str(t)) for k, t in v["model"].items()))
        for sk, v in s["steps"].items()
    }
    for h in hard:
        for sk in h.steps:
            if sk not in steps:
                raise BadInput(f"{where} hard part {h.key}: no step {sk!r}")
    return Scenario(
        key,
        s["title"],
        float(s["orders_per_day"]),
        float(s.get("day_hours", 24)),
        float(s["peak_orders_per_s"]),
        float(s["peak_minutes"]),
        float(s["retention_days"]),
        int(s["batch"]),
        jobs,
        partners,
        dict(s["answers"]),
        hard,
        steps,
    )


@cache
def scenarios() -> dict[str, Scenario]:
    step_keys = tuple(st.key for st in steps_and_communication()[0])
    return {key: scenario_of(key, load_file(f"scenarios/{key}"), step_keys) for key in SCENARIO_FILES}


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
            sql_steps(f"steps.yaml {key}", s.get("sql")),
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
            sql_steps(f"follow_ups.yaml {key}", f.get("sql")),
            measured_of(f"follow_ups.yaml {key}", f.get("measured")),
        )
        for key, f in load_file("follow_ups").items()
    }


def measured_of(where: str, data: Any) -> tuple[QuotedFigures, ...]:
    """A follow-up's quoted measurements, each `measurement: NAME` resolved here, so a
    name that no Measurement has fails on loading, not in a rehearsal."""
    out = []
    for entry in data or []:
        name = str(entry.get("measurement", "")).removeprefix("measurement:").strip()
        which = getattr(measurements, name, None)
        if not isinstance(which, measurements.Measurement):
            raise BadInput(f"{where}: {name!r} is no measurement in pgq_teach.measurements")
        out.append(QuotedFigures(which, str(entry["says"])))
    return tuple(out)


def cell_of(data: dict[str, Any], read: str) -> Cell:
    """A trade-off cell; one that cites a web page is dated (its own `read`, or the file's)."""
    web = str(data["source"]).startswith("https://")
    return Cell(data["text"], data["source"], str(data.get("read", read)) if web else "")


@cache
def trade_offs() -> tuple[dict[str, str], tuple[TradeOffRow, ...]]:
    """(system key -> name, the rows); every row has a cell with a source for every system."""
    data = load_file("tradeoffs")
    systems = dict(data["systems"])
    rows = []
    for key, row in data["rows"].items():
        cells = {s: cell_of(row[s], data["read"]) for s in systems if s in row}
        if set(cells) != set(systems) or not all(c.source for c in cells.values()):
            raise BadInput(f"tradeoffs.yaml {key}: every system needs a cell with a source")
        rows.append(TradeOffRow(key, row["title"], cells))
    return systems, tuple(rows)
