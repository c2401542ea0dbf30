"""The guide's own figures, in its order, so each experiment can show them
beside the learner's measurement. Source: "Postgres Job Queue: SKIP LOCKED,
Leases, Retries and When to Switch", measured on PostgreSQL 16.15 and 18.4
on a 2-CPU machine.

Each figure's numbers are written once, in its `values`: its words (`figure`,
`experiment`, and `short`, the few words reproduce's table shows) are
templates whose blanks (str.format fields such as `{full_kb:,}`) are filled
from them, and everything else that quotes a figure reads it from here
(`tests/test_guide.py` looks for copies elsewhere). A value in seconds,
`x_s`, can also be written in milliseconds as `{x_ms:g}`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GuideFigure:
    """One figure of the guide: what was run, what it showed, and its numbers."""

    number: int
    experiment: str
    figure: str
    values: dict = field(default_factory=dict)
    short: str | dict[int, str] = ""  # in a few words, per major (16, 18) where they differ; "" is figure
    by_major: dict[int, str] = field(init=False, default_factory=dict)  # short, filled in, for 16 and 18

    def __post_init__(self) -> None:
        known = blanks(self.values)

        def fill(text: str) -> str:
            return text.format_map(known)

        object.__setattr__(self, "experiment", fill(self.experiment))
        object.__setattr__(self, "figure", fill(self.figure))
        short = self.short or self.figure
        if isinstance(short, str):
            short = {16: short, 18: short}
        object.__setattr__(self, "by_major", {major: fill(text) for major, text in short.items()})

    def __str__(self) -> str:
        return f"guide #{self.number}: {self.figure}"


def blanks(values: dict[str, Any]) -> dict[str, Any]:
    """A figure's values, and each one in seconds (`x_s`) in milliseconds too (`x_ms`)."""
    ms = {k[:-2] + "_ms": v * 1000 for k, v in values.items() if k.endswith("_s") and isinstance(v, float)}
    return {**values, **ms}


FIGURES = {
    f.number: f
    for f in [
        GuideFigure(
            1,
            "naive read-then-update, {workers} workers, {jobs} jobs, {work_ms} ms each",
            "{pg16[0]}, {pg16[1]} and {pg16[2]} jobs claimed more than once on PostgreSQL 16; "
            "{pg18[0]} to {pg18[1]} on 18",
            {"pg16": (244, 251, 260), "pg18": (212, 238), "workers": 8, "jobs": 400, "work_ms": 10},
            {
                16: "{pg16[0]}, {pg16[1]}, {pg16[2]} of {jobs} twice",
                18: "{pg18[0]} to {pg18[1]} of {jobs} twice",
            },
        ),
        GuideFigure(
            2,
            "A holds job 1 for {hold_s:g} s; B runs plain FOR UPDATE",
            "B waits ({wait_event[0]} / {wait_event[1]}) and returns job {job} after {waited_s} s",
            {"hold_s": 2.0, "waited_s": 2.01, "wait_event": ("Lock", "transactionid"), "job": 2},
            "B waits on {wait_event[0]} / {wait_event[1]}, job {job} after {waited_s} s",
        ),
        GuideFigure(
            3,
            "the same with NOWAIT",
            "B fails at once with error {sqlstate}",
            {"sqlstate": "55P03"},
            "error {sqlstate} at once",
        ),
        GuideFigure(
            4,
            "the same with SKIP LOCKED",
            "B returns job {job} in under {under_ms:g} ms",
            {"under_s": 0.010, "job": 2},
            "job {job} in under {under_ms:g} ms",
        ),
        GuideFigure(
            5,
            "batch claim, {jobs:,} jobs in batches of {batch}",
            "{batches:,} batches, none over {batch} rows",
            {"jobs": 100_000, "batch": 100, "batches": 1_000},
        ),
        GuideFigure(
            6,
            "five ways, 400 jobs, 8 workers, 10 ms, 3 rounds",
            "ideal {serial_s} s serial, {shared_s} s shared; hold + FOR UPDATE slower than serial",
            {"serial_s": 4.0, "shared_s": 0.5, "rounds": 3},
            "hold + FOR UPDATE slower than the {serial_s} s serial ideal",
        ),
        GuideFigure(
            7,
            "zero work, {jobs:,} jobs, lease claims",
            "{skip_locked_s[0]:.2f} to {skip_locked_s[1]:.2f} s with SKIP LOCKED, "
            "{for_update_s[0]:.2f} to {for_update_s[1]:.2f} s without",
            {"skip_locked_s": (1.90, 2.07), "for_update_s": (2.06, 2.47), "jobs": 3_000},
            "{skip_locked_s[0]:.2f}-{skip_locked_s[1]:.2f} s SKIP LOCKED, "
            "{for_update_s[0]:.2f}-{for_update_s[1]:.2f} s without",
        ),
        GuideFigure(
            8,
            "pg_terminate_backend on a hold worker and a lease worker",
            "held job ready at once; leased job running until its lease ends",
        ),
        GuideFigure(
            9,
            "hold-style worker open, 1,000 other jobs updated, VACUUM (VERBOSE)",
            "0 removed, {dead:,} dead not yet removable; all removed after commit",
            {"dead": 1_000},
        ),
        GuideFigure(
            10,
            "1-second lease, stale worker A then B",
            "A's completion updates {a_rows} rows, B's {b_rows}",
            {"a_rows": 0, "b_rows": 1},
        ),
        GuideFigure(
            11,
            "one job through five failures",
            "waits {waits_s[0]}, {waits_s[1]}, {waits_s[2]}, {waits_s[3]} s (cap 1 h); "
            "the fifth failure is dead",
            {"waits_s": (20, 40, 80, 160), "cap_s": 3600},
            "waits {waits_s[0]}, {waits_s[1]}, {waits_s[2]}, {waits_s[3]} s; the fifth failure is dead",
        ),
        GuideFigure(
            12,
            "NOTIFY rules",
            "a NOTIFY in a rolled-back transaction is never delivered; one in a committed transaction "
            "arrives after COMMIT; three identical notifications in one transaction arrive as one, "
            "three different ones as three; a listener inside a transaction gets nothing until "
            "it ends; with no listener, a notification is lost",
            short="rolled back: never delivered; after COMMIT; 3 identical -> 1, 3 distinct -> 3; "
            "busy listener: nothing until it ends; no listener: lost",
        ),
        GuideFigure(
            13,
            "pickup latency",
            "with NOTIFY within {notify_ms:g} ms; without, at the {poll_s:g} s poll",
            {"notify_s": 0.010, "poll_s": 5.0},
        ),
        GuideFigure(
            14,
            "100,000 done + 100 ready, indexes rebuilt",
            "partial ready index {partial_kb} kB; full (status, run_at) {full_kb:,} kB (about {ratio}x)",
            {"partial_kb": 16, "full_kb": 3104, "ratio": 194},
            "partial ready index {partial_kb} kB; full {full_kb:,} kB (about {ratio}x)",
        ),
        GuideFigure(
            15,
            "after 100,000 queued jobs drained",
            "ready index stays {kb:,} kB until rebuilt",
            {"kb": 2208},
            "stays {kb:,} kB until rebuilt",
        ),
        GuideFigure(16, "EXPLAIN of the claim", "Index Scan using jobs_ready_idx under LockRows"),
        GuideFigure(
            17,
            "drain 100,000 through claim and done",
            "table {table_mb} MB (PG 16); empty claim reads {buffers_pg16} buffers "
            "({buffers_pg18} on PG 18), {after_vacuum} after VACUUM",
            {"table_mb": 29, "buffers_pg16": 275, "buffers_pg18": 196, "after_vacuum": 1},
            {
                16: "table {table_mb} MB; empty claim {buffers_pg16} buffers, {after_vacuum} after VACUUM",
                18: "empty claim {buffers_pg18} buffers, {after_vacuum} after VACUUM",
            },
        ),
        GuideFigure(
            18,
            "the same drain with an idle REPEATABLE READ transaction open",
            "VACUUM: 0 removed, {dead:,} dead not removable; empty claim {buffers:,} buffers, "
            "8 to 11 ms; after: {after_buffers} buffer, about 0.2 ms",
            {"dead": 200_000, "buffers": 1_609, "after_buffers": 1},
            "0 removed, {dead:,} dead not removable; {buffers:,} buffers, 8-11 ms; "
            "after: {after_buffers} buffer",
        ),
        GuideFigure(
            19,
            "throughput",
            "{jobs:,} batched jobs drained in about {seconds:g} s on 2 CPUs",
            {"jobs": 100_000, "seconds": 4.0},
            "{jobs:,} batched jobs in about {seconds:g} s on 2 CPUs",
        ),
    ]
}


def figure(number: int) -> GuideFigure:
    return FIGURES[number]
