"""The back of the envelope (lesson 12): not SQL but a small form of numbers.
The learner works out what a target rate needs, and the checker compares each
number with `interview.estimate()`, the calculator the rehearsal uses, so the
lesson, the rehearsal and the check can never disagree.

The form is lines of `name = number`; `#` starts a comment. Commas and
underscores in numbers are allowed (`400,000`, `400_000`)."""

from __future__ import annotations

import math
import re

from ..interview.estimation import Measured, estimate
from .learner_sql import Refused
from .verdict import Evidence, Verdict

# The case the form asks about (not a scenario of the rehearsal): a load and what
# a server measured at the same batch size, in the estimate's units.
TARGET_PER_S, WORK_MS, BATCH, KEEP_MINUTES, COMMITS_PER_S = 2_000, 200, 20, 30, 1_000
TOLERANCE = 0.02  # 2 %: room for rounding, none for a wrong formula
MEASURED = Measured(
    batch=BATCH,
    commits_per_s=COMMITS_PER_S,
    wal_bytes_per_s=0.0,  # the form asks for commits only
    wal_bytes_per_job=0.0,
    insert_wal_bytes_per_job=0.0,
    bytes_per_job=0.0,
    source="the form's server",
)

TASK = (
    f"# {TARGET_PER_S:,} jobs a second, {WORK_MS} ms of work each, "
    f"claimed and completed in batches of {BATCH},\n"
    f"# {KEEP_MINUTES} minutes of done jobs kept, on a server that measured {COMMITS_PER_S:,} commits/s\n"
    f"# for the course's claim and batched completion at batch {BATCH}. Work out each number.\n"
)
ATTEMPT = TASK + (
    "workers = 400,000            # 2,000 x 200\n"
    "commits_per_s = 200\n"
    "dead_per_s = 4,000           # claim and complete: an UPDATE each\n"
    "autovacuum_trigger_rows = 37,000\n"
    "server_share_percent = 20\n"
)
ANSWER = TASK + (
    "workers = 400                # Little's law: 2,000/s x 0.2 s in flight\n"
    "commits_per_s = 200          # a claim and a completion per batch: 2,000 x 2 / 20\n"
    "dead_per_s = 6,000           # claim, complete, cleanup's DELETE: three a job\n"
    "autovacuum_trigger_rows = 37,000   # 1,000 + 0.01 x (2,000 x 60 x 30) rows\n"
    "server_share_percent = 20    # 200 / 1,000 commits/s, the same batch size\n"
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
    "commits_per_s": (
        "commits a second",
        lambda e: e.commits_per_s,
        "each batch is two commits, its claim and its completion; the enqueue rides the order's commit.",
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
        "share of the measured commits a second, in percent",
        lambda e: e.commit_share * 100,
        "the commits a second you need divided by the commits a second measured at the same batch size.",
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
    expected = estimate(TARGET_PER_S, measured=MEASURED, work_ms=WORK_MS, keep_minutes=KEEP_MINUTES)
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
        " ".join(h[0].upper() + h[1:] for h in hints),
        numbers={name: given.get(name) for name in FIELDS},
        passed_headline="every number matches the rehearsal's calculator",
        passed_hint="the envelope adds up: say it aloud with where each number comes from.",
    )
