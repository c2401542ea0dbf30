"""The index (lesson 08): among 100,000 done jobs and 100 ready ones (guide
#14), the learner's CREATE INDEX runs, and the claim's plan must use it. Its
size is measured: an index that skips done rows stays tiny."""

from __future__ import annotations

from datetime import timedelta

from ..guide import figure
from ..statements import explain, run
from .learner_sql import LearnerSQL, Refused
from .sandbox import ROLE, Scratch, execute, parse
from .verdict import Evidence, Verdict

READY, DONE = 100, 100_000
SMALL_BYTES = 64 * 1024  # the guide's partial index is 16 kB here; a full one 3,104 kB
COURSE_INDEXES = {"jobs_pkey", "jobs_running_idx"}


def check_index(scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None) -> Verdict:
    if learner.leading[:2] != ("CREATE", "INDEX") and learner.leading != ("CREATE", "UNIQUE", "INDEX"):
        raise Refused("this exercise runs one CREATE INDEX statement on jobs")
    with scratch.db.connection() as owner:
        run(owner, "lab/seed_jobs", {"kind": "send_receipt", "count": READY + DONE})
        run(owner, "exercise/stage_done_beyond", {"keep": READY})
        run(owner, "exercise/drop_ready_index")
        run(owner, "exercise/give_jobs_to_learner", idents={"role": ROLE})
        if progress:
            progress(1, 3)
        with scratch.connect() as conn:
            parse(conn, learner)
            execute(conn, learner, {})
        run(owner, "lab/analyze_jobs")
        sizes = {name: (size, definition) for name, size, definition in run(owner, "exercise/index_sizes")}
        plan = explain(owner, "claim", {"batch": 1, "lease": timedelta(minutes=5)})
    if progress:
        progress(3, 3)
    mine = {name: v for name, v in sizes.items() if name not in COURSE_INDEXES}
    scan = next((line.strip().lstrip("-> ").strip() for line in plan if " on jobs jobs_1" in line), "")
    used = [name for name in mine if f" using {name} " in f" {scan} "]
    size = sum(v[0] for v in mine.values())
    evidence = [
        Evidence("the claim's plan uses your index", scan or "no scan found", bool(used)),
        Evidence(
            f"your index's size with {DONE:,} done and {READY} ready jobs",
            f"{size / 1024:,.0f} kB (the guide: 16 kB partial, 3,104 kB full)",
            size <= SMALL_BYTES,
        ),
    ]
    if not used:
        hint = (
            "the planner uses a partial index only when the claim's WHERE implies the index's predicate: "
            "status = 'ready', written as a literal."
        )
    else:
        hint = (
            "it works, but it holds every done job too: a WHERE on the index keeps only the ready rows in it."
        )
    return Verdict.from_evidence(
        exercise,
        evidence,
        hint,
        numbers={"bytes": size, "used": used},
        passed_headline="the claim uses your index, and it stays small",
        passed_hint="the claim reads your index, and it holds only the rows the claim looks for.",
        server_version=scratch.db.server.version,
        guide=figure(14),
    )
