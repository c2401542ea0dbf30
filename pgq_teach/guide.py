"""The guide's own figures, in its order, so each experiment can show them
beside the learner's measurement. Source: "Postgres Job Queue: SKIP LOCKED,
Leases, Retries and When to Switch", measured on PostgreSQL 16.15 and 18.4
on a 2-CPU machine."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class GuideFigure:
    number: int
    experiment: str
    figure: str
    values: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return f"guide #{self.number}: {self.figure}"


FIGURES = {
    f.number: f
    for f in [
        GuideFigure(
            1,
            "naive read-then-update, 8 workers, 400 jobs, 10 ms each",
            "244, 251 and 260 jobs claimed more than once on PostgreSQL 16; 212 to 238 on 18",
            {"pg16": (244, 251, 260), "pg18": (212, 238), "workers": 8, "jobs": 400, "work_ms": 10},
        ),
        GuideFigure(
            2,
            "A holds job 1 for 2 s; B runs plain FOR UPDATE",
            "B waits (Lock / transactionid) and returns job 2 after 2.01 s",
            {"hold_s": 2.0, "waited_s": 2.01, "wait_event": ("Lock", "transactionid"), "job": 2},
        ),
        GuideFigure(3, "the same with NOWAIT", "B fails at once with error 55P03", {"sqlstate": "55P03"}),
        GuideFigure(
            4, "the same with SKIP LOCKED", "B returns job 2 in under 10 ms", {"under_s": 0.010, "job": 2}
        ),
        GuideFigure(
            5,
            "batch claim, 100,000 jobs in batches of 100",
            "1,000 batches, none over 100 rows",
            {"jobs": 100_000, "batch": 100, "batches": 1_000},
        ),
        GuideFigure(
            6,
            "five ways, 400 jobs, 8 workers, 10 ms, 3 rounds",
            "ideal 4.0 s serial, 0.5 s shared; hold + FOR UPDATE slower than serial",
            {"serial_s": 4.0, "shared_s": 0.5, "rounds": 3},
        ),
        GuideFigure(
            7,
            "zero work, 3,000 jobs, lease claims",
            "1.90 to 2.07 s with SKIP LOCKED, 2.06 to 2.47 s without",
            {"skip_locked_s": (1.90, 2.07), "for_update_s": (2.06, 2.47), "jobs": 3_000},
        ),
        GuideFigure(
            8,
            "pg_terminate_backend on a hold worker and a lease worker",
            "held job ready at once; leased job running until its lease ends",
        ),
        GuideFigure(
            9,
            "hold-style worker open, 1,000 other jobs updated, VACUUM (VERBOSE)",
            "0 removed, 1,000 dead not yet removable; all removed after commit",
            {"dead": 1_000},
        ),
        GuideFigure(
            10,
            "1-second lease, stale worker A then B",
            "A's completion updates 0 rows, B's 1",
            {"a_rows": 0, "b_rows": 1},
        ),
        GuideFigure(
            11,
            "one job through five failures",
            "waits 20, 40, 80, 160 s (cap 1 h); the fifth failure is dead",
            {"waits_s": (20, 40, 80, 160), "cap_s": 3600},
        ),
        GuideFigure(
            12,
            "NOTIFY rules",
            "a NOTIFY in a rolled-back transaction is never delivered; one in a committed transaction "
            "arrives after COMMIT; three identical notifications in one transaction arrive as one, "
            "three different ones as three; a listener inside a transaction gets nothing until "
            "it ends; with no listener, a notification is lost",
        ),
        GuideFigure(
            13,
            "pickup latency",
            "with NOTIFY within 10 ms; without, at the 5 s poll",
            {"notify_s": 0.010, "poll_s": 5.0},
        ),
        GuideFigure(
            14,
            "100,000 done + 100 ready, indexes rebuilt",
            "partial ready index 16 kB; full (status, run_at) 3,104 kB (about 194x)",
            {"partial_kb": 16, "full_kb": 3104},
        ),
        GuideFigure(
            15, "after 100,000 queued jobs drained", "ready index stays 2,208 kB until rebuilt", {"kb": 2208}
        ),
        GuideFigure(16, "EXPLAIN of the claim", "Index Scan using jobs_ready_idx under LockRows"),
        GuideFigure(
            17,
            "drain 100,000 through claim and done",
            "table 29 MB (PG 16); empty claim reads 275 buffers (196 on PG 18), 1 after VACUUM",
            {"table_mb": 29, "buffers_pg16": 275, "buffers_pg18": 196, "after_vacuum": 1},
        ),
        GuideFigure(
            18,
            "the same drain with an idle REPEATABLE READ transaction open",
            "VACUUM: 0 removed, 200,000 dead not removable; empty claim 1,609 buffers, "
            "8 to 11 ms; after: 1 buffer, about 0.2 ms",
            {"dead": 200_000, "buffers": 1_609, "after_buffers": 1},
        ),
        GuideFigure(
            19,
            "throughput",
            "100,000 batched jobs drained in about 4 s on 2 CPUs",
            {"jobs": 100_000, "seconds": 4.0},
        ),
    ]
}


def figure(number: int) -> GuideFigure:
    return FIGURES[number]
