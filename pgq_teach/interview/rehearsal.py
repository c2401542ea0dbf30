"""The learner's rehearsal, saved as they go: one attempt, and the ones finished
before it, in the learner file `rehearsal`. The widget and `pgq-teach interview` are
two views of one attempt: every change re-reads the file under a lock and changes
only what the learner just did, so the terminal and the notebook continue the same
attempt until the learner finishes it."""

from __future__ import annotations

import contextlib
import math
import random
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from ..errors import BadInput
from ..infra import learner
from . import content
from .answers import model_answer
from .catalog import (
    DEFAULT_MINUTES,
    DIMENSIONS,
    FOLLOW_UPS,
    SCENARIOS,
    STEPS,
    follow_up,
    rubric_for,
    scenario_key,
    scenario_named,
    step,
)

FILE = "rehearsal"
FOLLOW_UPS_PER_REHEARSAL = 5


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
        "board": {},
    }


# What the file may hold of the learner's text: anything but the C0 and C1 controls (a
# terminal obeys them: ESC [ 2 J clears the screen, ESC ] retitles the window) and lone
# surrogates (UTF-8 cannot encode them, so no terminal could print them). Newline and
# tab are text. `kept_text` saves each other one as U+FFFD, so Rehearsal never writes
# what its own check would set aside.
UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def kept_text(text: str) -> str:
    """`text` as the file keeps it: a Windows line end as a newline, any unprintable character as U+FFFD."""
    return UNPRINTABLE.sub("\ufffd", text.replace("\r\n", "\n"))


def _text(where: str, value: Any) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{where} is {type(value).__name__}, not text")
    bad = UNPRINTABLE.search(value)
    if bad:
        raise ValueError(f"{where} holds the character {bad.group()!r}, which pgq-teach never saves")


def _number(where: str, value: Any, low: float, high: float = math.inf) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{where} is {type(value).__name__} {str(value)[:20]!r}, not a number")
    if not low <= value <= high:
        raise ValueError(f"{where} is {value!r}, outside {low:g} to {high:g}")


def _each(kind: type, item: Callable[[str, Any], None]) -> Callable[[str, Any], None]:
    """A check of a list (kind list) or an object (kind dict, keys text) whose every item passes `item`."""

    def check(where: str, value: Any) -> None:
        if not isinstance(value, kind):
            raise ValueError(
                f"{where} is {type(value).__name__}, not {'a list' if kind is list else 'an object'}"
            )
        held: Any = value  # a list or a dict, as just checked
        pairs = enumerate(held) if kind is list else held.items()
        for key, one in pairs:
            if kind is dict:
                _text(f"{where} key", key)
            item(f"{where}[{key!r}]", one)

    return check


def _optional_time(where: str, value: Any) -> None:
    if value is not None:
        _number(where, value, 0)


# Each part an attempt (or a finished attempt's record, in past) may hold, with its check;
# `fresh_attempt` writes every one but `finished` and `over_time`, which `finish` adds.
ATTEMPT_PARTS: dict[str, Callable[[str, Any], None]] = {
    "started": _optional_time,
    "finished": _optional_time,
    "scenario": _text,
    "follow_ups": _each(list, _text),
    "minutes": lambda where, v: _number(where, v, 5, 180),
    "questions": _text,
    "answers": _each(dict, _text),
    "ended": _each(list, _text),
    "scores": _each(dict, lambda where, v: _number(where, v, 1, 3)),
    "flags": _each(dict, _each(list, lambda where, v: _number(where, v, 0))),
    "hints": _each(dict, lambda where, v: _number(where, v, 0)),
    "spent_s": _each(dict, lambda where, v: _number(where, v, 0)),
    "follow_up_answers": _each(dict, _text),
    "board": _each(dict, _text),
    "over_time": _each(list, _text),
}


def rehearsal_check(data: dict[str, Any]) -> None:
    """The schema of the rehearsal file, for `learner.load`: ValueError naming
    the first part that is not what Rehearsal writes ({"current": attempt,
    "past": [attempt, ...]}, each part of the type and range above, its text
    printable), so a hand-edited or damaged file is set aside, never crashed on
    or printed raw. A part that is missing is not wrong: `Rehearsal` fills it in."""
    attempts = [("current", data.get("current") or {})]
    past = data.get("past") or []
    if not isinstance(past, list):
        raise ValueError(f"past is {type(past).__name__}, not a list")
    attempts += [(f"past[{i}]", a) for i, a in enumerate(past)]
    for where, attempt in attempts:
        if not isinstance(attempt, dict):
            raise ValueError(f"{where} is {type(attempt).__name__}, not an object")
        for part, check in ATTEMPT_PARTS.items():
            if part in attempt:
                check(f"{where}.{part}", attempt[part])
    scenario = (data.get("current") or {}).get("scenario")
    if scenario is not None and scenario not in SCENARIOS:
        raise ValueError(f"current.scenario is {scenario!r}, not one of the course's scenarios")


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
            scenario = scenario_key(scenario)  # the full key; refuses an unknown scenario
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
        """The file, its open attempt given any part it lacks (a file from an older
        pgq-teach, or edited by hand), so a missing part is empty, not a KeyError."""
        data = learner.load(self.name, rehearsal_check)
        data.setdefault("past", [])
        if data.get("current"):
            # a draw of its own, so reading never moves the draw of the next attempt
            fresh = fresh_attempt(
                self.clock(), random.Random(0), avoid=None, forced=None, minutes=DEFAULT_MINUTES
            )
            data["current"] = {**fresh, **data["current"]}
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
        self.change(lambda c: c.update(questions=kept_text(questions)))

    def add_question(self, line: str) -> None:
        """Add one clarifying question (the terminal's way: saved as typed, what is there stays)."""
        line = kept_text(line)
        self.change(lambda c: c.update(questions=f"{c['questions']}\n{line}" if c["questions"] else line))

    def interviewer_answers(self) -> list[tuple[str, str]]:
        """(topic, answer) for the attempt's scenario: what the interviewer says when asked."""
        return [(topic, self.scenario.answers[topic]) for topic in content.opening()["topics"]]

    # answers, hints, flags and scores

    def answer(self, step_key: str, text: str) -> None:
        step(step_key)
        if not isinstance(text, str):
            raise BadInput(f"an answer is text, got {type(text).__name__}")
        self.change(lambda c: c["answers"].__setitem__(step_key, kept_text(text)))

    def add_to_answer(self, step_key: str, line: str) -> None:
        """Add a line to the saved answer (the terminal's way: what is there stays)."""
        step(step_key)
        line = kept_text(line)

        def add(c: dict[str, Any]) -> None:
            before = c["answers"].get(step_key, "")
            c["answers"][step_key] = f"{before}\n{line}" if before else line

        self.change(add)

    def answer_of(self, step_key: str) -> str:
        return self.current["answers"].get(step_key, "")

    def write_on_board(self, key: str, sql: str) -> None:
        """Keep the learner's SQL for one of the deep dive's mechanisms (`board.BOARD_KEYS`)."""
        from .board import mechanism  # the board's graders load the checker: only when written

        mechanism(key)
        self.change(lambda c: c["board"].__setitem__(key, kept_text(sql)))

    def board(self) -> dict[str, str]:
        """The mechanisms written on the board so far, by key."""
        return dict(self.current["board"])

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

    def rubric(self, step_key: str) -> content.Rubric:
        """The step's rubric as it is scored for this rehearsal's scenario."""
        return rubric_for(step_key, self.current["scenario"])

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
        self.change(lambda c: c["follow_up_answers"].__setitem__(key, kept_text(text)))

    def add_to_follow_up(self, key: str, line: str) -> None:
        """Add a line to a follow-up answer (the terminal's way: saved as typed)."""
        follow_up(key)
        line = kept_text(line)

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
