"""The system-design interview rehearsal: its logic. The content (the opening,
the scenarios, the steps and rubrics, the model answers, the follow-ups, the
trade-off table) lives in `pgq_teach/content/interview/` and is loaded by
`pgq_teach.interview_content`.

A rehearsal runs as a real round does: an open prompt, a clarify step answered
from one scenario (drawn at random, never the same twice in a row), the
estimate right after the requirements, then the design, a deep dive and the
trade-offs. Each step is scored on one interviewer dimension at three levels,
shown only when the learner ends the step; the learner scores themselves, and
ticks the step's red-flag checklist about their own answer (a checklist, not a
detector: the course does not guess flags from the text). Follow-ups are drawn
at random per rehearsal, and every answer is saved.

The estimate is worked in one unit system (commits/s, row writes/s, WAL
bytes/s, storage/day) and set against what the learner's own server measured
for the same batch size (`measure_capacity`, recorded as
`measurements.CAPACITY_12`), with headroom. Every quoted server figure comes
from the measurement store, with its lesson and time.

The widget (`widgets/rehearsal.py`) and `pgq-teach interview` are two views of
one attempt, kept in the learner file `rehearsal`: every change re-reads the
file and changes only what the learner just did, so the terminal and the
notebook continue the same attempt until the learner finishes it.
"""

from __future__ import annotations

import contextlib
import functools
import math
import random
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from . import interview_content as content
from . import learner, measurements
from .databases import Database
from .errors import BadInput
from .experiments import capacity
from .experiments.results import Comparison, Result, guess_text
from .guide import GuideFigure, figure
from .statements import run, statement

FILE = "rehearsal"
HEADROOM = 0.5  # the queue may use at most half of what one session measured: the store needs the rest
FOLLOW_UPS_PER_REHEARSAL = 5
ROW_WRITES_PER_JOB = 4  # insert, claim, completion, cleanup's delete
DEAD_VERSIONS_PER_JOB = 3  # the claim's, the completion's and the delete's old versions

STEPS, COMMUNICATION = content.steps_and_communication()
STEP_KEYS = tuple(s.key for s in STEPS)
DIMENSIONS = tuple([s.rubric.dimension for s in STEPS] + [COMMUNICATION.dimension])
SCENARIOS = content.scenarios()
FOLLOW_UPS = content.follow_ups()
WITH_SQL = tuple(key for key, f in FOLLOW_UPS.items() if f.sql)  # the model answers that quote SQL
DEFAULT_MINUTES = sum(s.minutes for s in STEPS) + 8  # and about eight minutes of follow-ups


def step(key: str) -> content.InterviewStep:
    for s in STEPS:
        if s.key == key:
            return s
    raise BadInput(f"no step {key!r}; the steps are {', '.join(STEP_KEYS)}")


def scenario_named(key: str) -> content.Scenario:
    if key not in SCENARIOS:
        raise BadInput(f"no scenario {key!r}; the scenarios are {', '.join(SCENARIOS)}")
    return SCENARIOS[key]


def follow_up(key: str) -> content.FollowUp:
    if key not in FOLLOW_UPS:
        raise BadInput(f"no follow-up {key!r}; known: {', '.join(FOLLOW_UPS)}")
    return FOLLOW_UPS[key]


def percent(share: float) -> str:
    """A share as a percentage; under 1 % with one decimal, so a small share never reads 0 %."""
    return f"{share:.1%}" if 0 < share < 0.01 else f"{share:.0%}"


def run_model_sql(db: Database, key: str) -> list[int]:
    """Run the SQL a follow-up's model answer quotes on `db`, every step in order on an
    emptied jobs table, inside one transaction that is rolled back: the rows each step
    reported (RETURNING rows, or rows changed). Nothing stays, so a lesson can show that
    the answer works on its own database."""
    steps = follow_up(key).sql
    if not steps:
        raise BadInput(f"follow-up {key!r} quotes no SQL; these do: {', '.join(WITH_SQL)}")
    rows = []
    with db.connection() as conn, conn.transaction(force_rollback=True):
        run(conn, "lab/reset_jobs")
        for sql_step in steps:
            cur = conn.execute(sql_step.text)
            rows.append(len(cur.fetchall()) if cur.description else max(cur.rowcount, 0))
    return rows


def fmt(value: float) -> str:
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.2f}" if abs(value) < 10 else f"{value:,.1f}"


# --- the learner's measurements ---------------------------------------------------


@dataclass(frozen=True)
class Quote:
    """A stored measurement ready to speak: its value, unit, and where and when it was taken."""

    value: Any
    unit: str
    lesson: str
    at: str

    @property
    def source(self) -> str:
        return f"measured in lesson {self.lesson} at {self.at}"


def quote(which: measurements.Measurement) -> Quote | None:
    """The stored run of `which`, or None if its lesson has not run on this machine."""
    found = measurements.read(which)
    if found is None or found.get("value") is None:
        return None
    return Quote(
        found["value"], found.get("unit") or which.unit, which.lesson, found.get("at", "time unknown")
    )


def drain_quote() -> Quote | None:
    """Lesson 11's drain rate, exactly as lesson 11 stored it."""
    return quote(measurements.DRAIN_JOBS_PER_S_11)


def measure_capacity(db: Database, *, guess: float | None = None, **kwargs: Any) -> capacity.Capacity:
    """Run the capacity experiment on `db` and keep it in the measurement store,
    where the estimate reads it."""
    result = capacity.measure(db, guess=guess, **kwargs)
    if not result.stopped:
        measurements.record(measurements.CAPACITY_12, result.as_record())
    return result


@dataclass(frozen=True)
class Measured:
    """What the server measured at one batch size, one session (see `experiments.capacity`)."""

    batch: int
    commits_per_s: float
    wal_bytes_per_s: float
    wal_bytes_per_job: float
    insert_wal_bytes_per_job: float
    bytes_per_job: float
    source: str


def measured_at(batch: int) -> Measured:
    """The stored capacity run at `batch`; BadInput if lesson 12 has not measured that batch."""
    q = quote(measurements.CAPACITY_12)
    if q is None:
        raise BadInput("no capacity measured yet: run lesson 12's capacity cell (interview.measure_capacity)")
    runs = q.value.get("runs", {})
    if str(batch) not in runs:
        raise BadInput(f"no capacity measured at batch {batch}; measured at {', '.join(runs)}")
    r = runs[str(batch)]
    return Measured(
        batch,
        float(r["commits_per_s"]),
        float(r["wal_bytes_per_s"]),
        float(r["wal_bytes_per_job"]),
        float(r["insert_wal_bytes_per_job"]),
        float(q.value["bytes_per_job"]),
        f"{q.source}, one session, synchronous_commit={q.value.get('synchronous_commit')}",
    )


# --- the estimate ----------------------------------------------------------------


@dataclass(kw_only=True)
class Estimate(Result):
    """A load set against measured capacity at the same batch size, in one unit system.

    Commits: one claim and one batched completion per batch (the enqueue rides the
    order's own commit). Row writes: insert, claim, completion, delete. WAL: the
    measured bytes per job of the claim and completion plus the insert's. The guess
    is the learner's commits a second at peak."""

    jobs_per_s: float
    avg_jobs_per_s: float
    batch: int
    work_ms: float
    keep_minutes: float
    measured: Measured
    workers: int
    commits_per_s: float
    row_writes_per_s: float
    dead_per_s: float
    wal_bytes_per_s: float
    storage_bytes_per_day: float
    rows_kept: float
    autovacuum_trigger_rows: float
    commit_share: float
    wal_share: float
    verdict: str
    server_version: str = ""
    server_major: int = 0
    guide: GuideFigure = field(default_factory=lambda: figure(19))

    def comparison(self) -> list[Comparison]:
        return [
            ("commits/s at peak", self.guess_cell, self.commits_per_s, None),
            (f"measured commits/s at batch {self.batch}", None, self.measured.commits_per_s, None),
            ("share of measured commits", None, percent(self.commit_share), None),
            ("share of measured WAL bytes/s", None, percent(self.wal_share), None),
        ]

    def lines(self) -> list[str]:
        m = self.measured
        return [
            f"load: {fmt(self.jobs_per_s)} jobs/s at peak ({fmt(self.avg_jobs_per_s)} on average), "
            f"claimed and completed in batches of {self.batch}",
            f"workers: {fmt(self.jobs_per_s)}/s x {fmt(self.work_ms / 1000)} s = "
            f"{self.workers:,} jobs in flight (Little's law)",
            f"commits: {fmt(self.jobs_per_s)} x 2 / {self.batch} = {fmt(self.commits_per_s)} commits/s "
            "(a claim and a completion per batch; the enqueue rides the order's commit)",
            f"rows: {fmt(self.row_writes_per_s)} row writes/s (insert, claim, completion, delete), "
            f"{fmt(self.dead_per_s)} dead versions/s for autovacuum",
            f"WAL: {fmt(self.jobs_per_s)} x {fmt(m.wal_bytes_per_job + m.insert_wal_bytes_per_job)} bytes = "
            f"{fmt(self.wal_bytes_per_s / 1e6)} MB/s (insert, claim and completion as measured; "
            "the cleanup's delete adds its own)",
            f"storage: {fmt(self.storage_bytes_per_day / 1e6)} MB a day "
            f"at {fmt(m.bytes_per_job)} bytes a job; "
            f"{fmt(self.rows_kept)} rows kept, so autovacuum starts every "
            f"{fmt(self.autovacuum_trigger_rows)} dead rows once jobs has the guide's settings "
            "(1,000 + 0.01 x rows; the defaults wait for 50 + 0.2 x rows)",
            f"against the server at batch {self.batch}: {fmt(m.commits_per_s)} commits/s and "
            f"{fmt(m.wal_bytes_per_s / 1e6)} MB/s of WAL ({m.source}): "
            f"{percent(self.commit_share)} of the commits, {percent(self.wal_share)} of the WAL",
            f"verdict: {self.verdict}",
        ]

    def summary(self) -> str:
        return "\n".join(
            [*self.lines(), f"your guess: {guess_text(self.guess, ' commits/s')}", *self.footer()]
        )

    def footer(self) -> list[str]:
        return [f"  {self.guide}", "  worked out from the stored capacity run, not measured again"]


def estimate(
    jobs_per_s: float,
    *,
    measured: Measured,
    avg_jobs_per_s: float | None = None,
    work_ms: float = 100,
    keep_minutes: float = 60,
    guess: float | None = None,
) -> Estimate:
    """Commits, rows, WAL and storage for `jobs_per_s` at `measured.batch`, set
    against what the server measured at that batch."""
    avg = jobs_per_s if avg_jobs_per_s is None else avg_jobs_per_s
    for name, value in (("jobs_per_s", jobs_per_s), ("avg_jobs_per_s", avg), ("work_ms", work_ms)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value <= 0
        ):
            raise BadInput(f"{name} must be a positive number, got {value!r}")
    if not isinstance(keep_minutes, (int, float)) or keep_minutes <= 0:
        raise BadInput(f"keep_minutes must be a positive number, got {keep_minutes!r}")
    m = measured
    commits = jobs_per_s * 2 / m.batch
    wal = jobs_per_s * (m.wal_bytes_per_job + m.insert_wal_bytes_per_job)
    rows_kept = avg * 60 * keep_minutes
    commit_share = commits / m.commits_per_s
    wal_share = wal / m.wal_bytes_per_s if m.wal_bytes_per_s else 0.0
    share = max(commit_share, wal_share)
    if share <= HEADROOM:
        verdict = (
            f"fits: at most {percent(share)} of one session's measured rate, "
            f"inside the {HEADROOM:.0%} headroom"
        )
    elif share <= 1:
        verdict = (
            f"tight: {share:.0%} of one session's measured rate, past the {HEADROOM:.0%} headroom; "
            "bigger batches, more sessions measured, or the queue in its own database"
        )
    else:
        verdict = (
            f"does not fit: {share:.0%} of one session's measured rate; measure more sessions, "
            "batch harder, or move the queue off this primary (its own database or a broker, via an outbox)"
        )
    return Estimate(
        jobs_per_s=jobs_per_s,
        avg_jobs_per_s=avg,
        batch=m.batch,
        work_ms=work_ms,
        keep_minutes=keep_minutes,
        measured=m,
        workers=math.ceil(jobs_per_s * work_ms / 1000),
        commits_per_s=commits,
        row_writes_per_s=ROW_WRITES_PER_JOB * jobs_per_s,
        dead_per_s=DEAD_VERSIONS_PER_JOB * jobs_per_s,
        wal_bytes_per_s=wal,
        storage_bytes_per_day=avg * 86_400 * m.bytes_per_job,
        rows_kept=rows_kept,
        autovacuum_trigger_rows=1000 + 0.01 * rows_kept,
        commit_share=commit_share,
        wal_share=wal_share,
        verdict=verdict,
        guess=guess,
    )


def scenario_estimate(key: str, *, guess: float | None = None) -> Estimate:
    """The estimate for a scenario's profile at its batch size, from the stored capacity."""
    s = scenario_named(key)
    return estimate(
        s.peak_orders_per_s * s.jobs_per_order,
        measured=measured_at(s.batch),
        avg_jobs_per_s=s.avg_orders_per_s * s.jobs_per_order,
        work_ms=s.work_ms,
        keep_minutes=s.retention_days * 24 * 60,
        guess=guess,
    )


def model_answer(step_key: str, scenario_key: str) -> str:
    """A step's model answer; the estimation step's is worked from the stored measurements."""
    text = step(step_key).model
    if "{estimate}" in text:
        try:
            worked = "; ".join(scenario_estimate(scenario_key).lines()) + "."
        except BadInput as exc:
            worked = f"(the worked estimate needs your server's numbers: {exc})"
        drain = drain_quote()
        if drain is not None:
            worked += (
                f" As a ceiling check: lesson 11 drained {fmt(float(drain.value))} {drain.unit} "
                f"({drain.source}; empty jobs, batches of 100, four sessions)."
            )
        text = text.replace("{estimate}", worked)
    return text


# --- the learner's rehearsal, saved as they go ---------------------------------------


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` between processes (flock), for one read-change-write.
    Where flock does not exist (Windows), one process at a time is the learner's to keep."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        if fcntl is not None:
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(f, fcntl.LOCK_UN)


def fresh_attempt(
    now: float, rng: random.Random, *, avoid: dict[str, Any] | None, forced: str | None, minutes: float
) -> dict[str, Any]:
    """A new attempt: a scenario (not last time's, unless asked for) and follow-ups (none of last time's)."""
    last_scenario = (avoid or {}).get("scenario")
    last_asked = set((avoid or {}).get("follow_ups") or [])
    choices = sorted(k for k in SCENARIOS if k != last_scenario) or sorted(SCENARIOS)
    fresh = sorted(k for k in FOLLOW_UPS if k not in last_asked)
    return {
        "started": now,
        "scenario": forced or rng.choice(choices),
        "follow_ups": rng.sample(fresh, min(FOLLOW_UPS_PER_REHEARSAL, len(fresh))),
        "minutes": minutes,
        "questions": "",
        "answers": {},
        "ended": [],
        "scores": {},
        "flags": {},
        "hints": {},
        "spent_s": {},
        "follow_up_answers": {},
    }


# What each part of an attempt holds, as Rehearsal reads and writes it.
ATTEMPT_PARTS: dict[str, type] = {  # what fresh_attempt writes, part by part
    "scenario": str,
    "follow_ups": list,
    "questions": str,
    "answers": dict,
    "ended": list,
    "scores": dict,
    "flags": dict,
    "hints": dict,
    "spent_s": dict,
    "follow_up_answers": dict,
}


def rehearsal_check(data: dict[str, Any]) -> None:
    """The schema of the rehearsal file, for `learner.load`: ValueError naming
    the first part that is not what Rehearsal writes ({"current": attempt,
    "past": [attempt, ...]}), so a hand-edited file is set aside, not crashed on."""
    attempts = [("current", data.get("current") or {})]
    past = data.get("past") or []
    if not isinstance(past, list):
        raise ValueError(f"past is {type(past).__name__}, not a list")
    attempts += [(f"past[{i}]", a) for i, a in enumerate(past)]
    for where, attempt in attempts:
        if not isinstance(attempt, dict):
            raise ValueError(f"{where} is {type(attempt).__name__}, not an object")
        for part, kind in ATTEMPT_PARTS.items():
            if part in attempt and not isinstance(attempt[part], kind):
                raise ValueError(f"{where}.{part} is {type(attempt[part]).__name__}, not {kind.__name__}")
        if not isinstance(attempt.get("scores", {}), dict):
            raise ValueError(f"{where}.scores is not an object")


class Rehearsal:
    """One rehearsal in progress, and the ones finished before it.

    Every change re-reads the learner file, changes the one thing the learner did
    and writes the file back (`learner.save`, atomic), so a terminal and a
    notebook on the same attempt never undo each other, and nothing typed is lost
    to a crash or a kernel restart. `clock` and `seed` are parameters so tests can
    drive the timer and the draw."""

    def __init__(
        self,
        name: str = FILE,
        *,
        clock: Callable[[], float] = time.time,
        seed: int | None = None,
        scenario: str | None = None,
        minutes: float | None = None,
    ):
        learner.path_of(name)  # refuses a bad name before anything else
        if scenario is not None:
            scenario_named(scenario)  # refuses an unknown scenario
        if minutes is not None and (
            isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or not 5 <= minutes <= 180
        ):
            raise BadInput(f"minutes must be 5 to 180, got {minutes!r}")
        self.name, self.clock = name, clock
        self.rng = random.Random(seed)
        self.active: str | None = None
        self.active_since: float | None = None
        data = learner.load(name, rehearsal_check)
        if not data.get("current") or not self.has_progress(data["current"]) and scenario:
            self.begin(data, scenario=scenario, minutes=minutes)

    # the file

    def data(self) -> dict[str, Any]:
        data = learner.load(self.name, rehearsal_check)
        data.setdefault("past", [])
        return data

    @property
    def current(self) -> dict[str, Any]:
        return self.data().get("current") or {}

    @property
    def past(self) -> list[dict[str, Any]]:
        return list(self.data()["past"])

    def change(self, what: Callable[[dict[str, Any]], None]) -> None:
        """Re-read the file, apply one change to the current attempt, write it back, holding
        a lock that the other process (the terminal, or the notebook's kernel) waits for."""
        with file_lock(learner.path_of(self.name).with_suffix(".lock")):
            data = self.data()
            what(data["current"])
            learner.save(self.name, data)

    def begin(self, data: dict[str, Any], *, scenario: str | None, minutes: float | None) -> None:
        last = data["past"][-1] if data.get("past") else None
        data["current"] = fresh_attempt(
            self.clock(), self.rng, avoid=last, forced=scenario, minutes=minutes or DEFAULT_MINUTES
        )
        data.setdefault("past", [])
        learner.save(self.name, data)

    @staticmethod
    def has_progress(current: dict[str, Any]) -> bool:
        return bool(
            current.get("questions")
            or any(current.get("answers", {}).values())
            or current.get("ended")
            or current.get("scores")
            or any(current.get("follow_up_answers", {}).values())
        )

    def discard(self) -> None:
        """Delete this rehearsal's file (used by the notebook's own checks)."""
        learner.path_of(self.name).unlink(missing_ok=True)
        learner.path_of(self.name).with_suffix(".lock").unlink(missing_ok=True)

    # what the attempt is

    @property
    def scenario(self) -> content.Scenario:
        return scenario_named(self.current["scenario"])

    @property
    def follow_up_keys(self) -> list[str]:
        return list(self.current["follow_ups"])

    def seconds_for(self, step_key: str) -> float:
        """The step's suggested time, scaled to the attempt's total minutes."""
        return step(step_key).minutes * 60 * self.current.get("minutes", DEFAULT_MINUTES) / DEFAULT_MINUTES

    # the clarify step

    def ask(self, questions: str) -> None:
        """Keep the learner's clarifying questions; the interviewer's answers follow."""
        if not isinstance(questions, str):
            raise BadInput(f"questions are text, got {type(questions).__name__}")
        self.change(lambda c: c.update(questions=questions))

    def add_question(self, line: str) -> None:
        """Add one clarifying question (the terminal's way: saved as typed, what is there stays)."""
        self.change(lambda c: c.update(questions=f"{c['questions']}\n{line}" if c["questions"] else line))

    def interviewer_answers(self) -> list[tuple[str, str]]:
        """(topic, answer) for the attempt's scenario: what the interviewer says when asked."""
        return [(topic, self.scenario.answers[topic]) for topic in content.opening()["topics"]]

    # answers, hints, flags and scores

    def answer(self, step_key: str, text: str) -> None:
        step(step_key)
        if not isinstance(text, str):
            raise BadInput(f"an answer is text, got {type(text).__name__}")
        self.change(lambda c: c["answers"].__setitem__(step_key, text))

    def add_to_answer(self, step_key: str, line: str) -> None:
        """Add a line to the saved answer (the terminal's way: what is there stays)."""
        step(step_key)

        def add(c: dict[str, Any]) -> None:
            before = c["answers"].get(step_key, "")
            c["answers"][step_key] = f"{before}\n{line}" if before else line

        self.change(add)

    def answer_of(self, step_key: str) -> str:
        return self.current["answers"].get(step_key, "")

    def next_hint(self, step_key: str) -> str | None:
        """Reveal one more hint; None when all are shown."""
        hints = step(step_key).hints
        shown = self.current["hints"].get(step_key, 0)
        if shown >= len(hints):
            return None
        self.change(lambda c: c["hints"].__setitem__(step_key, shown + 1))
        return hints[shown]

    def hints_shown(self, step_key: str) -> list[str]:
        return list(step(step_key).hints[: self.current["hints"].get(step_key, 0)])

    def end_step(self, step_key: str) -> content.Rubric:
        """End the step: its rubric, model answer and red-flag checklist are shown from now on."""
        s = step(step_key)
        if self.active == step_key:
            self.stop()
        if step_key not in self.current["ended"]:
            self.change(lambda c: c["ended"].append(step_key))
        return s.rubric

    def ended(self, step_key: str) -> bool:
        return step_key in self.current["ended"]

    def model(self, step_key: str) -> str:
        """The model answer, only once the step has ended (an honest score needs that)."""
        if not self.ended(step_key):
            raise BadInput(f"end step {step_key!r} first: its model answer shows after your own")
        return model_answer(step_key, self.current["scenario"])

    def flag(self, step_key: str, index: int, on: bool = True) -> None:
        """Tick (or untick) red flag `index` of the step's checklist, about your own answer."""
        flags = step(step_key).red_flags
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(flags):
            raise BadInput(f"step {step_key!r} has red flags 0 to {len(flags) - 1}, got {index!r}")

        def set_flag(c: dict[str, Any]) -> None:
            ticked = set(c["flags"].get(step_key, []))
            ticked = ticked | {index} if on else ticked - {index}
            c["flags"][step_key] = sorted(ticked)

        self.change(set_flag)

    def flags(self, step_key: str) -> list[int]:
        return list(self.current["flags"].get(step_key, []))

    def score(self, dimension: str, level: int) -> None:
        """Score yourself on a dimension, 1 to 3, after its step has ended."""
        if dimension not in DIMENSIONS:
            raise BadInput(f"no dimension {dimension!r}; they are {', '.join(DIMENSIONS)}")
        if isinstance(level, bool) or level not in content.LEVELS:
            raise BadInput(f"a level is 1, 2 or 3, got {level!r}")
        owner = [s.key for s in STEPS if s.rubric.dimension == dimension]
        if owner and not self.ended(owner[0]):
            raise BadInput(f"end step {owner[0]!r} first: its rubric shows after your answer")
        self.change(lambda c: c["scores"].__setitem__(dimension, level))

    def scores(self) -> dict[str, int]:
        return dict(self.current["scores"])

    def answer_follow_up(self, key: str, text: str) -> None:
        follow_up(key)
        if not isinstance(text, str):
            raise BadInput(f"an answer is text, got {type(text).__name__}")
        self.change(lambda c: c["follow_up_answers"].__setitem__(key, text))

    def add_to_follow_up(self, key: str, line: str) -> None:
        """Add a line to a follow-up answer (the terminal's way: saved as typed)."""
        follow_up(key)

        def add(c: dict[str, Any]) -> None:
            before = c["follow_up_answers"].get(key, "")
            c["follow_up_answers"][key] = f"{before}\n{line}" if before else line

        self.change(add)

    def follow_up_answer(self, key: str) -> str:
        return self.current["follow_up_answers"].get(key, "")

    # the timer

    def start(self, step_key: str) -> None:
        """Start the step's timer (stopping any other)."""
        step(step_key)
        self.stop()
        self.active, self.active_since = step_key, self.clock()

    def stop(self) -> None:
        if self.active is not None and self.active_since is not None:
            key, spent = self.active, max(0.0, self.clock() - self.active_since)
            self.change(lambda c: c["spent_s"].__setitem__(key, round(c["spent_s"].get(key, 0.0) + spent, 1)))
        self.active, self.active_since = None, None

    def spent(self, step_key: str) -> float:
        total = float(self.current["spent_s"].get(step_key, 0.0))
        if self.active == step_key and self.active_since is not None:
            total += max(0.0, self.clock() - self.active_since)
        return total

    def over_time(self) -> list[str]:
        return [s.key for s in STEPS if self.spent(s.key) > self.seconds_for(s.key)]

    # the end

    def finish(self, *, seed: int | None = None) -> dict[str, Any]:
        """Close this rehearsal (only the learner asks for this): keep it, start a new one."""
        self.stop()
        if seed is not None:
            self.rng = random.Random(seed)
        data = self.data()
        c = data["current"]
        record = {
            "started": c.get("started"),
            "finished": self.clock(),
            "scenario": c["scenario"],
            "scores": dict(c["scores"]),
            "flags": dict(c["flags"]),
            "spent_s": dict(c["spent_s"]),
            "over_time": self.over_time(),
            "questions": c["questions"],
            "answers": dict(c["answers"]),
            "follow_ups": list(c["follow_ups"]),
            "follow_up_answers": dict(c["follow_up_answers"]),
        }
        data["past"].append(record)
        self.begin(data, scenario=None, minutes=c.get("minutes"))
        return record

    def trend(self) -> list[tuple[str, list[int | None]]]:
        """(dimension, [score in each finished rehearsal..., this one]) for every dimension."""
        attempts = [*self.past, self.current]
        return [(d, [a.get("scores", {}).get(d) for a in attempts]) for d in DIMENSIONS]


def merged(shown: str, saved: str, typed: str) -> str:
    """What to save when a view that showed `shown` now holds `typed`, but the file
    holds `saved` (the other view changed it meanwhile): keep the other view's text
    and add what was typed here, so neither view undoes the other."""
    if saved == shown:
        return typed
    added = typed[len(shown) :] if typed.startswith(shown) else typed
    return f"{saved}\n{added.lstrip(chr(10))}" if saved and added else saved or added


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
            if cell.source not in sources:
                sources.append(cell.source)
            cells.append(f"{cell.text} [{sources.index(cell.source) + 1}]")
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
    out += [f"- **{s.title}**: {model_answer(s.key, 'flash-sale')}" for s in STEPS if s.key != "estimation"]
    out += ["", "## My numbers", ""]
    drain = drain_quote()
    out.append(
        f"- drain (lesson 11): {fmt(float(drain.value))} {drain.unit}, {drain.source}"
        if drain
        else "- drain: not measured yet (lesson 11)"
    )
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


# --- the same rehearsal in a terminal (`pgq-teach interview`) --------------------------

# One line typed, or None when input ends. A reader may also have `waiting()`: whether more
# lines are already there to read (the CLI's does), so a paste is saved in one write.
Read = Callable[[], "str | None"]
Say = Callable[[str], None]


class InputEnded(Exception):
    """The learner's input ended: everything typed so far is saved, the attempt stays open."""


def read_line(read: Read) -> str:
    line = read()
    if line is None:
        raise InputEnded
    return line.rstrip("\n")


NOTHING_TYPED = "(nothing typed here yet: type your answer, or press Enter again to go on without one)"


def read_until_empty(read: Read, say: Say, keep: Callable[[str], None], *, has_text: bool) -> None:
    """Hand the lines typed to `keep` up to an empty line: each line as it comes, or, while
    `read.waiting()` says more lines are already there (a paste), all of them at once, so a
    paste of thousands of lines is saved in one write, not one write a line. What is kept
    when Ctrl-C or Ctrl-D arrives is saved too. An empty line before anything was typed only
    warns: the next one ends, so a stray Enter does not skip a step and show its model answer."""
    waiting: Callable[[], bool] = getattr(read, "waiting", lambda: False)
    pending: list[str] = []
    warned = False
    try:
        while True:
            line = read_line(read)
            if line.strip():
                pending.append(line)
                has_text = True
                if not waiting():
                    keep("\n".join(pending))
                    pending = []
            elif has_text or warned:
                return
            else:
                say(NOTHING_TYPED)
                warned = True
    finally:
        if pending:
            keep("\n".join(pending))


def rubric_text(rubric: content.Rubric) -> list[str]:
    out = [f"How an interviewer scores {rubric.dimension}:"]
    for lv in rubric.levels:
        out += [f"  {lv.level} ({lv.name}): {lv.says}", f"     e.g. {lv.example}"]
    return out


def ask_score(
    r: Rehearsal, dimension: str, read: Read, say: Say, keep_stray: Callable[[str], None] | None = None
) -> None:
    """Ask a self-score; an empty line keeps what is saved. A line of words (a paste that
    ran on past the empty line) goes to `keep_stray`, the step's answer, not away."""
    now = r.scores().get(dimension)
    say(f"Your score for {dimension}: 1, 2 or 3 (empty line keeps {now or 'no score'}).")
    while True:
        word = read_line(read).strip()
        if not word:
            return
        if word in ("1", "2", "3"):
            r.score(dimension, int(word))
            return
        if keep_stray is not None and not number_words(word):
            keep_stray(word)
            say("(not a score, so it is added to your answer: type 1, 2 or 3, or an empty line)")
        else:
            say(f"(no score {word!r}: type 1, 2 or 3, or an empty line)")


def number_words(line: str) -> list[str] | None:
    """The words of a line of flag numbers ('1 3', '-2', '1, 2'), or None if any word is not one."""
    words = line.replace(",", " ").split()
    return words if all(w.lstrip("-").isdigit() for w in words) else None


def ask_flags(r: Rehearsal, key: str, read: Read, say: Say) -> None:
    """Ticks only what the learner types: N ticks flag N, -N unticks it; an empty line keeps all.
    A line is applied whole or not at all, so text that happens to hold a number (a paste
    that ran on past the empty line) never ticks or unticks a flag: it goes to the answer."""
    flags = step(key).red_flags
    say("Red flags: did your answer do any of these? (N ticks, -N unticks, empty line keeps)")
    for n, text in enumerate(flags, 1):
        say(f"  [{'x' if n - 1 in r.flags(key) else ' '}] {n}. {text}")
    while line := read_line(read).strip():
        words = number_words(line)
        if words is None:
            r.add_to_answer(key, line)
            say(
                "(not flag numbers, so nothing ticked; the line is added to your answer: "
                f"type 1 to {len(flags)}, -N to untick, or an empty line)"
            )
        elif any(not 1 <= int(w.lstrip("-")) <= len(flags) for w in words):
            say(f"(nothing ticked: the flags are 1 to {len(flags)}; type them again, or an empty line)")
        else:
            for w in words:
                r.flag(key, int(w.lstrip("-")) - 1, not w.startswith("-"))
            return


def terminal_step(r: Rehearsal, key: str, read: Read, say: Say) -> None:
    s = step(key)
    say("")
    say(f"== {s.title}  (suggested {clock_text(r.seconds_for(key))}) ==")
    say(s.prompt)
    if r.answer_of(key):
        say("(your saved answer, kept; what you type is added to it):")
        say(r.answer_of(key))
    say("Type your answer; ? on a line shows a hint; an empty line ends the step.")
    r.start(key)

    def keep(lines: str) -> None:
        text = []
        for line in lines.split("\n"):
            if line.strip() != "?":
                text.append(line)
                continue
            if text:
                r.add_to_answer(key, "\n".join(text))
                text = []
            hint = r.next_hint(key)
            say(f"hint: {hint}" if hint else "no more hints for this step")
        if text:
            r.add_to_answer(key, "\n".join(text))

    try:
        read_until_empty(read, say, keep, has_text=bool(r.answer_of(key)))
    finally:
        r.stop()
    r.end_step(key)
    over = " (over time)" if r.spent(key) > r.seconds_for(key) else ""
    say(f"time {clock_text(r.spent(key))} of {clock_text(r.seconds_for(key))}{over}")
    for line in rubric_text(s.rubric):
        say(line)
    say("A model answer: " + r.model(key))
    ask_flags(r, key, read, say)
    ask_score(r, s.rubric.dimension, read, say, lambda line: r.add_to_answer(key, line))


def rehearse_in_terminal(read: Read, say: Say, rehearsal: Rehearsal | None = None) -> dict[str, Any] | None:
    """Run (or continue) the open rehearsal on lines of text. Returns the finished
    record if the learner finished it, else None (everything stays saved, and the
    notebook or the next run continues it)."""
    r = rehearsal or Rehearsal()
    try:
        return terminal_rehearsal(r, read, say)
    except InputEnded:
        r.stop()
        say("(input ended: your answers are saved; run `pgq-teach interview` again to go on)")
        return None
    except KeyboardInterrupt:
        r.stop()
        say("(interrupted: everything you typed is saved; run `pgq-teach interview` again to go on)")
        return None


def terminal_rehearsal(r: Rehearsal, read: Read, say: Say) -> dict[str, Any] | None:
    c = r.current
    minutes = fmt(c.get("minutes", DEFAULT_MINUTES))
    say(f"The interview rehearsal: {r.scenario.title}, about {minutes} minutes.")
    if Rehearsal.has_progress(c):
        say("(continuing your open rehearsal; steps you ended are kept)")
    say("")
    say("Interviewer: " + content.opening()["opening"])
    if not c["questions"]:
        say(content.opening()["clarify_instructions"])
        read_until_empty(read, say, r.add_question, has_text=False)
    else:
        say("Your questions: " + c["questions"].replace("\n", "; "))
    say("The interviewer answers:")
    for topic, answer in r.interviewer_answers():
        say(f"  {topic}: {answer}")
    for key in STEP_KEYS:
        if r.ended(key):
            say(f"({step(key).title}: ended before, score {r.scores().get(step(key).rubric.dimension, '–')})")
            continue
        terminal_step(r, key, read, say)
    for key in r.follow_up_keys:
        say("")
        say(f"Follow-up: {follow_up(key).question}")
        if r.follow_up_answer(key):  # answered before (here, or in the notebook): its model answer shows
            say("(your saved answer: " + r.follow_up_answer(key).replace("\n", "; ") + ")")
        else:
            read_until_empty(read, say, functools.partial(r.add_to_follow_up, key), has_text=False)
        say("A model answer: " + follow_up(key).model())
    say("")
    for line in rubric_text(COMMUNICATION):
        say(line)
    ask_score(r, COMMUNICATION.dimension, read, say)
    say("")
    for line in summary_lines(r):
        say(line)
    say("Type finish to close this rehearsal (anything else keeps it open to go on later).")
    if read_line(read).strip().lower() != "finish":
        say("(kept open: the notebook and the next run continue it)")
        return None
    return r.finish()
