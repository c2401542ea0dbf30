"""One entry per guide figure: which experiment measures it, at which sizes
(full, and smaller with --quick where the figure scales), how its result
becomes "this server's measurement", and the verdict on it.

An entry's three steps are separate so each can be tested alone:
`measure(result, sizes)` reads plain values off an experiment's result object;
`describe(values)` says them in one line; `judge(values, major)` gives the
verdict (see verdicts.py). `must` marks the figures every server must
reproduce (the command exits 1, and CI fails, when one does not); `timing`
marks figures about time, which are reported and never failed on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..databases import Database
from ..experiments import claims, enqueue, locks, race
from .verdicts import Verdict, differs, explained, reproduced

Progress = Callable[[int, int], None]
Values = dict[str, Any]
GUIDE_VERSIONS = {16: "16.15", 18: "18.4"}  # the guide measured on these two


def guide_major(major: int) -> int:
    """The guide's major to set beside a server's: 16 up to 16, else 18."""
    return 16 if major <= 16 else 18


@dataclass(frozen=True)
class Entry:
    number: int
    experiment: str  # what runs, as the table names it
    guide: dict[int, str]  # the guide's figure in short, on 16 and on 18
    run: Callable[[Database, Values, Progress | None, threading.Event], Any]
    measure: Callable[[Any, Values], Values]
    describe: Callable[[Values], str]
    judge: Callable[[Values, int], Verdict]
    full: Values = field(default_factory=dict)
    quick: Values | None = None  # None: the figure does not scale, --quick runs it in full
    shrunk: str = ""  # what --quick changed, said on every row it shrank
    must: bool = False
    timing: bool = False

    def sizes(self, quick: bool) -> Values:
        return dict(self.quick) if quick and self.quick is not None else dict(self.full)

    def shrinks(self, quick: bool) -> bool:
        return quick and self.quick is not None

    def verdict(self, result: Any, sizes: Values, major: int) -> tuple[Values, str, Verdict]:
        values = self.measure(result, sizes)
        return values, self.describe(values), self.judge(values, major)


def seconds(value: float) -> str:
    return f"{value * 1000:.1f} ms" if value < 0.1 else f"{value:.2f} s"


# --- 1: the naive claim runs jobs twice ------------------------------------------

# How many jobs the guide saw run more than once, of 400, on both majors.
NAIVE_LOW, NAIVE_HIGH = 212, 260
NAIVE_SLACK = 0.25  # a run within a quarter of the guide's range counts as its figure


def run_naive(db, sizes, progress, stop):
    return race.run_race(db, mode="naive", progress=progress, stop=stop, **sizes)


def measure_naive(result, sizes) -> Values:
    return {
        "jobs": sizes["jobs"],
        "workers": sizes["workers"],
        "run_more_than_once": result.run_more_than_once,
    }


def describe_naive(v: Values) -> str:
    return f"{v['run_more_than_once']:,} of {v['jobs']:,} jobs run more than once ({v['workers']} workers)"


def judge_naive(v: Values, major: int) -> Verdict:
    twice, scale = v["run_more_than_once"], v["jobs"] / 400
    if twice == 0:
        return differs("no job ran twice: the race never hit the window between read and update")
    low, high = NAIVE_LOW * scale * (1 - NAIVE_SLACK), NAIVE_HIGH * scale * (1 + NAIVE_SLACK)
    if low <= twice <= high:
        return reproduced()
    return explained(
        "how many claims collide depends on thread scheduling and the CPU count "
        "(lesson 01); any job run twice is the bug"
    )


# --- 2, 3, 4: two sessions, one locked row -----------------------------------------


def run_replay(clause: str):
    def run(db, sizes, progress, stop):
        return locks.replay(db, clause, sizes["hold_s"])

    return run


def measure_replay(result, sizes) -> Values:
    event = result.wait_event
    return {
        "hold_s": sizes["hold_s"],
        "b_job": result.b_job,
        "b_s": result.b_seconds,
        "sqlstate": result.sqlstate,
        "waiting_when_sampled": result.still_waiting_at_sample,
        "wait_event": list(event) if event else None,
        "blocked_by_a": result.blocked_by_a,
    }


def describe_for_update(v: Values) -> str:
    event = (
        " / ".join(str(p) for p in v["wait_event"])
        if v["wait_event"] and v["waiting_when_sampled"]
        else "none"
    )
    return f"B waited on {event}, got job {v['b_job']} after {seconds(v['b_s'])} (A held {v['hold_s']:g} s)"


def judge_for_update(v: Values, major: int) -> Verdict:
    waited = v["waiting_when_sampled"] and v["wait_event"] == ["Lock", "transactionid"] and v["blocked_by_a"]
    if not waited:
        return differs(f"B was not seen waiting on Lock / transactionid behind A (saw {v['wait_event']})")
    if v["b_job"] != 2:
        return differs(f"after A committed, B got job {v['b_job']}, not job 2")
    return reproduced()


def describe_nowait(v: Values) -> str:
    return f"B: error {v['sqlstate'] or 'none'} after {seconds(v['b_s'])}"


def judge_nowait(v: Values, major: int) -> Verdict:
    if v["sqlstate"] != "55P03":
        return differs(f"B got {v['sqlstate'] or 'no error'} (job {v['b_job']}), not 55P03")
    if v["b_s"] >= v["hold_s"] / 2:  # waiting for A would take the whole hold
        return differs(f"55P03 came only after {seconds(v['b_s'])}, not at once")
    return reproduced()


SKIP_LOCKED_UNDER_S = 0.010


def describe_skip_locked(v: Values) -> str:
    return f"B got job {v['b_job']} after {seconds(v['b_s'])}"


def judge_skip_locked(v: Values, major: int) -> Verdict:
    if v["b_job"] != 2 or v["sqlstate"]:
        return differs(f"B got job {v['b_job']} ({v['sqlstate'] or 'no error'}), not job 2")
    if v["b_s"] < SKIP_LOCKED_UNDER_S:
        return reproduced()
    if v["b_s"] < v["hold_s"] / 2:
        return explained(
            "B skipped the locked row without waiting for A; the milliseconds "
            "depend on a busy machine's scheduling (lesson 02)"
        )
    return differs(f"B took {seconds(v['b_s'])}: as long as A's hold")


# --- 5: batch claims --------------------------------------------------------------


def run_batches(db, sizes, progress, stop):
    return claims.batch_drain(db, jobs=sizes["jobs"], batch=sizes["batch"], progress=progress, stop=stop)


def measure_batches(result, sizes) -> Values:
    return {
        "jobs": sizes["jobs"],
        "batch": sizes["batch"],
        "batches": result.batches,
        "largest": result.largest_batch,
        "every_job_once": result.every_job_once,
    }


def describe_batches(v: Values) -> str:
    once = "each job once" if v["every_job_once"] else "NOT each job once"
    return f"{v['batches']:,} batches, largest {v['largest']:,} rows, {once}"


def judge_batches(v: Values, major: int) -> Verdict:
    expected = -(-v["jobs"] // v["batch"])
    if v["largest"] > v["batch"]:
        return differs(f"a batch of {v['largest']:,} rows, over its LIMIT {v['batch']:,}")
    if not v["every_job_once"]:
        return differs("some job was claimed twice, or never")
    if v["batches"] != expected:
        return differs(f"{v['batches']:,} batches, not {expected:,}")
    return reproduced()


# --- 6: five ways -----------------------------------------------------------------


def run_five_ways(db, sizes, progress, stop):
    return claims.five_way(db, progress=progress, stop=stop, **sizes)


def measure_five_ways(result, sizes) -> Values:
    serial = sizes["jobs"] * sizes["work_ms"] / 1000
    return {
        "rounds": sizes["rounds"],
        "serial_ideal_s": serial,
        "shared_ideal_s": serial / sizes["workers"],
        "median_s": {mode: result.median(mode) for mode in race.MODES},
    }


def describe_five_ways(v: Values) -> str:
    m = v["median_s"]
    return (
        f"hold + FOR UPDATE {m['hold_for_update']:.2f} s, lease + SKIP LOCKED {m['lease_skip_locked']:.2f} s "
        f"(ideal {v['serial_ideal_s']:.1f} serial, {v['shared_ideal_s']:.1f} shared)"
    )


def judge_five_ways(v: Values, major: int) -> Verdict:
    held = v["median_s"]["hold_for_update"]
    if held > v["serial_ideal_s"]:
        return reproduced()
    return differs(f"hold + FOR UPDATE took {held:.2f} s, under the {v['serial_ideal_s']:.1f} s serial ideal")


# --- 7: zero work -----------------------------------------------------------------


def run_zero_work(db, sizes, progress, stop):
    return claims.zero_work(db, progress=progress, stop=stop, **sizes)


def measure_zero_work(result, sizes) -> Values:
    return {
        "jobs": sizes["jobs"],
        "rounds": sizes["rounds"],
        "skip_locked_s": result.median("lease_skip_locked"),
        "for_update_s": result.median("lease_for_update"),
        "saving": result.skip_locked_saving,
    }


def describe_zero_work(v: Values) -> str:
    return f"SKIP LOCKED {v['skip_locked_s']:.2f} s, without {v['for_update_s']:.2f} s (medians)"


def judge_zero_work(v: Values, major: int) -> Verdict:
    saving = v["saving"]
    if saving >= claims.TOO_CLOSE_TO_CALL:
        return reproduced(f"SKIP LOCKED {saving:.0%} faster")
    if saving > -claims.TOO_CLOSE_TO_CALL:
        return explained(
            f"the medians are {abs(saving):.0%} apart: too close to call on a shared "
            "machine, as the guide's own ranges nearly touch (lesson 03)"
        )
    return differs(f"SKIP LOCKED was {-saving:.0%} slower")


# --- 12: NOTIFY and transactions ---------------------------------------------------


def run_enqueue(db, sizes, progress, stop):
    return enqueue.transactional_enqueue(db)


def measure_enqueue(result, sizes) -> Values:
    rb, ok = result.rolled_back, result.committed
    return {
        "rolled_back_heard": rb.heard,
        "committed_heard_while_open": len(ok.heard_while_open),
        "committed_heard_after": len(ok.heard_after),
        "rules_measured": 2,
    }


def describe_enqueue(v: Values) -> str:
    return (
        f"rolled back: {v['rolled_back_heard']} heard; committed: {v['committed_heard_while_open']} "
        f"while open, {v['committed_heard_after']} after COMMIT (2 of the 5 rules)"
    )


def judge_enqueue(v: Values, major: int) -> Verdict:
    if v["rolled_back_heard"]:
        return differs("a rolled-back transaction's NOTIFY was delivered")
    if v["committed_heard_while_open"] or not v["committed_heard_after"]:
        return differs("the committed NOTIFY did not arrive after COMMIT and only then")
    return reproduced()


# --- 16: the claim's plan -----------------------------------------------------------


def run_plans(db, sizes, progress, stop):
    return claims.explain_claims(db)


def measure_plans(result, sizes) -> Values:
    return {"uses_ready_index": result.uses_ready_index, "lockrows_above": result.lockrows_above_index_scan}


def describe_plans(v: Values) -> str:
    if v["uses_ready_index"] and v["lockrows_above"]:
        return "Index Scan using jobs_ready_idx under LockRows"
    return "jobs_ready_idx " + ("used, but not under LockRows" if v["uses_ready_index"] else "not used")


def judge_plans(v: Values, major: int) -> Verdict:
    if v["uses_ready_index"] and v["lockrows_above"]:
        return reproduced()
    return differs("the locking read does not scan jobs_ready_idx under LockRows")


# --- the registry -----------------------------------------------------------------

ENTRIES: dict[int, Entry] = {
    e.number: e
    for e in [
        Entry(
            1,
            "race: naive read-then-update",
            {16: "244, 251, 260 of 400 twice", 18: "212 to 238 of 400 twice"},
            run_naive,
            measure_naive,
            describe_naive,
            judge_naive,
            full={"workers": 8, "jobs": 400, "work_ms": 10},
        ),
        Entry(
            2,
            "locks: A holds job 1, B runs FOR UPDATE",
            {m: "B waits on Lock / transactionid, job 2 after 2.01 s" for m in GUIDE_VERSIONS},
            run_replay("for_update"),
            measure_replay,
            describe_for_update,
            judge_for_update,
            full={"hold_s": 2.0},
            quick={"hold_s": 1.0},
            shrunk="A holds 1 s, not 2 s",
            must=True,
        ),
        Entry(
            3,
            "locks: the same with NOWAIT",
            {m: "error 55P03 at once" for m in GUIDE_VERSIONS},
            run_replay("nowait"),
            measure_replay,
            describe_nowait,
            judge_nowait,
            full={"hold_s": 2.0},
            quick={"hold_s": 1.0},
            shrunk="A holds 1 s, not 2 s",
            must=True,
        ),
        Entry(
            4,
            "locks: the same with SKIP LOCKED",
            {m: "job 2 in under 10 ms" for m in GUIDE_VERSIONS},
            run_replay("skip_locked"),
            measure_replay,
            describe_skip_locked,
            judge_skip_locked,
            full={"hold_s": 2.0},
            quick={"hold_s": 1.0},
            shrunk="A holds 1 s, not 2 s",
            timing=True,
        ),
        Entry(
            5,
            "claims: batch drain",
            {m: "1,000 batches, none over 100 rows" for m in GUIDE_VERSIONS},
            run_batches,
            measure_batches,
            describe_batches,
            judge_batches,
            full={"jobs": 100_000, "batch": 100},
            quick={"jobs": 10_000, "batch": 100},
            shrunk="10,000 jobs, not 100,000 (so 100 batches)",
        ),
        Entry(
            6,
            "claims: five ways",
            {m: "hold + FOR UPDATE slower than the 4.0 s serial ideal" for m in GUIDE_VERSIONS},
            run_five_ways,
            measure_five_ways,
            describe_five_ways,
            judge_five_ways,
            full={"rounds": 3, "workers": 8, "jobs": 400, "work_ms": 10},
            quick={"rounds": 1, "workers": 8, "jobs": 400, "work_ms": 10},
            shrunk="1 round, not 3",
            timing=True,
        ),
        Entry(
            7,
            "claims: zero work, lease claims",
            {m: "1.90-2.07 s SKIP LOCKED, 2.06-2.47 s without" for m in GUIDE_VERSIONS},
            run_zero_work,
            measure_zero_work,
            describe_zero_work,
            judge_zero_work,
            full={"jobs": 3_000, "workers": 8, "rounds": 3},
            quick={"jobs": 1_000, "workers": 8, "rounds": 1},
            shrunk="1,000 jobs and 1 round, not 3,000 and 3",
            timing=True,
        ),
        Entry(
            12,
            "enqueue: NOTIFY in a transaction",
            {m: "rolled back: never delivered; delivered after COMMIT" for m in GUIDE_VERSIONS},
            run_enqueue,
            measure_enqueue,
            describe_enqueue,
            judge_enqueue,
        ),
        Entry(
            16,
            "claims: EXPLAIN of the claim",
            {m: "Index Scan using jobs_ready_idx under LockRows" for m in GUIDE_VERSIONS},
            run_plans,
            measure_plans,
            describe_plans,
            judge_plans,
        ),
    ]
}

# Figures with no experiment here yet, and the lesson that will bring it.
MISSING = {
    8: "lesson 04's crash experiment",
    9: "lesson 04's held-back cleanup experiment",
    10: "lesson 05's fencing experiment",
    11: "lesson 06's retry schedule experiment",
    13: "lesson 07's pickup latency experiment",
    14: "lesson 08's index size experiment",
    15: "lesson 08's drained index experiment",
    17: "lesson 09's drain and VACUUM experiment",
    18: "lesson 09's idle transaction experiment",
    19: "the throughput benchmark",
}
