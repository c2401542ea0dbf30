"""The rehearsal's content by key: the steps (with the communication rubric, scored
at the end), the scenarios and the follow-ups, read once from `content`, and the
lookups that refuse an unknown key with the known ones named."""

from __future__ import annotations

from ..errors import BadInput
from . import content

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


def rubric_for(step_key: str, scenario_key: str) -> content.Rubric:
    """A step's rubric as an interviewer holds it for one scenario: the strong-hire
    level's notes and example are that scenario's."""
    rubric = step(step_key).rubric
    written = scenario_named(scenario_key).steps[step_key]
    top = rubric.levels[-1]
    strong = content.Level(top.level, top.name, f"{top.says} {written.notes}", written.strong_hire)
    return content.Rubric(rubric.dimension, (*rubric.levels[:-1], strong))


def scenario_key(name: str) -> str:
    """A scenario's key from its key or one word of it that names no other ("saas" for
    multi-tenant-saas, "flash" for flash-sale), so the command line takes the short name."""
    if name in SCENARIOS:
        return name
    matches = [key for key in SCENARIOS if name in key.split("-")]
    if len(matches) != 1:
        raise BadInput(f"no scenario {name!r}; the scenarios are {', '.join(SCENARIOS)}")
    return matches[0]


def scenario_named(key: str) -> content.Scenario:
    return SCENARIOS[scenario_key(key)]


def quoted_sql(key: str) -> tuple[content.SqlStep, ...]:
    """The SQL a step's model answer (the deep dive's mechanisms) or a follow-up's quotes."""
    return step(key).sql if key in STEP_KEYS else follow_up(key).sql


def follow_up(key: str) -> content.FollowUp:
    if key not in FOLLOW_UPS:
        raise BadInput(f"no follow-up {key!r}; known: {', '.join(FOLLOW_UPS)}")
    return FOLLOW_UPS[key]
