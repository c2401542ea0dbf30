"""The back of the envelope (lesson 12): not SQL but a small form of numbers.
The learner works out what a target rate needs, and the checker compares each
number with `interview.envelope()`, the calculator the rehearsal uses, so the
lesson, the rehearsal and the check can never disagree.

The form is lines of `name = number`; `#` starts a comment. Commas and
underscores in numbers are allowed (`400,000`, `400_000`)."""

from __future__ import annotations

import math
import re

from .. import interview
from .learner_sql import Refused
from .verdict import Evidence, Verdict

# The case the form asks about (not the notebook's worked 10,000/s example).
TARGET_PER_S, WORK_MS, BATCH, KEEP_MINUTES, DRAIN_PER_S = 2_000, 200, 20, 30, 25_000
TOLERANCE = 0.02  # 2 %: room for rounding, none for a wrong formula

TASK = (
    f"# {TARGET_PER_S:,} jobs a second, {WORK_MS} ms of work each, claimed in batches of {BATCH},\n"
    f"# {KEEP_MINUTES} minutes of done jobs kept, on a server that drained {DRAIN_PER_S:,} jobs/s.\n"
    "# Work out each number (a statement holds its connection about 1 ms).\n"
)
ATTEMPT = TASK + (
    "workers = 400,000            # 2,000 x 200\n"
    "busy_connections = 2.1\n"
    "dead_per_s = 4,000           # two dead versions a job: claim and complete\n"
    "autovacuum_trigger_rows = 37,000\n"
    "server_share_percent = 8\n"
)
ANSWER = TASK + (
    "workers = 400                # Little's law: 2,000/s x 0.2 s in flight\n"
    "busy_connections = 2.1       # 2,000 completions + 100 claims a second, 1 ms each\n"
    "dead_per_s = 6,000           # claim, complete, cleanup's DELETE: three a job\n"
    "autovacuum_trigger_rows = 37,000   # 1,000 + 0.01 x (2,000 x 60 x 30) rows\n"
    "server_share_percent = 8     # 2,000 / 25,000\n"
)
FORMS = {"envelope/attempt": ATTEMPT, "envelope/answer": ANSWER}

# name in the form -> (what it is, how to get the expected value, the hint when it is wrong)
FIELDS = {
    "workers": (
        "workers (jobs in flight)",
        lambda e: e.workers,
        (
            "Little's law: jobs in flight = arrival rate x time per job, with the time in seconds "
            "(200 ms is 0.2 s)."
        ),
    ),
    "busy_connections": (
        "connections busy at once",
        lambda e: e.connections_busy,
        "statements a second (one claim per batch, one completion per job) x 1 ms each.",
    ),
    "dead_per_s": (
        "dead row versions a second",
        lambda e: e.dead_per_s,
        (
            "each job leaves three dead versions: the claim's UPDATE, the completion's UPDATE and the "
            "cleanup's DELETE (the guide counts the two updates; the DELETE makes the last version dead too)."
        ),
    ),
    "autovacuum_trigger_rows": (
        "dead rows before autovacuum starts (scale factor 0.01, threshold 1000)",
        lambda e: e.autovacuum_trigger_rows,
        "threshold + scale factor x rows, where the table holds the done jobs kept: rate x 60 x minutes.",
    ),
    "server_share_percent": (
        "share of the measured drain rate, in percent",
        lambda e: e.server_share * 100,
        "the target divided by the measured drain rate, as a percentage.",
    ),
}


def read_form(text: str) -> dict[str, float | None]:
    """{name: number, or None if it is there but not a number}; Refused for a name the form has not got."""
    if not isinstance(text, str) or not text.strip():
        raise Refused("fill in the form first: it is empty")
    values: dict[str, float | None] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, value = (part.strip() for part in line.partition("="))
        if not sep or name not in FIELDS:
            raise Refused(f"{line!r} is not one of the form's lines ({', '.join(FIELDS)}), as name = number")
        cleaned = re.sub(r"[,_\s]", "", value)
        try:
            number = float(cleaned)
            values[name] = number if math.isfinite(number) else None
        except ValueError:
            values[name] = None
    return values


def check_envelope(text: str, *, exercise: str, progress=None, stop=None) -> Verdict:
    given = read_form(text)
    expected = interview.envelope(
        TARGET_PER_S, drain_per_s=DRAIN_PER_S, work_ms=WORK_MS, batch=BATCH, keep_done_minutes=KEEP_MINUTES
    )
    evidence, hints = [], []
    for name, (what, value_of, hint) in FIELDS.items():
        want = float(value_of(expected))
        got = given.get(name)
        ok = got is not None and math.isclose(got, want, rel_tol=TOLERANCE)
        shown = "not filled in" if name not in given else ("not a number" if got is None else f"{got:,.6g}")
        evidence.append(Evidence(what, shown, ok))  # the expected value is not shown: no answer given away
        if not ok:
            hints.append(hint)
    return Verdict.from_evidence(
        exercise,
        evidence,
        " ".join(hints),
        numbers={name: given.get(name) for name in FIELDS},
        passed_headline="every number matches the rehearsal's calculator",
        passed_hint="the envelope adds up: say it aloud with where each number comes from.",
    )
