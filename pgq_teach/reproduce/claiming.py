"""The figures about claiming (guide #1 to #7, #16 and #19): the naive race,
the two-session lock replays, batch claims, the five ways, zero work, the
claim's plan, and the batched drain's throughput."""

from __future__ import annotations

from typing import Any

from ..experiments import claims, locks, race, switching
from ..guide import figure
from .entry import Describe, Entry, Judge, Sizes, Values, calls, reads, says, seconds
from .verdicts import FigureVerdict, differs, explained, reproduced

# --- 1: the naive claim runs jobs twice ------------------------------------------

# How many jobs the guide saw run more than once, of 400, on both majors.
NAIVE_LOW = min(figure(1).values["pg16"] + figure(1).values["pg18"])
NAIVE_HIGH = max(figure(1).values["pg16"] + figure(1).values["pg18"])
NAIVE_SLACK = 0.25  # a run within a quarter of the guide's range counts as its figure


def judge_naive(values: Values, major: int) -> FigureVerdict:
    twice, scale = values["run_more_than_once"], values["jobs"] / figure(1).values["jobs"]
    if twice == 0:
        return differs("no job ran twice: the race never hit the window between read and update")
    low, high = NAIVE_LOW * scale * (1 - NAIVE_SLACK), NAIVE_HIGH * scale * (1 + NAIVE_SLACK)
    if low <= twice <= high:
        return reproduced()
    return explained(
        "how many claims collide depends on thread scheduling and the CPU count "
        "(lesson 01); any job run twice is the bug"
    )


NAIVE = Entry(
    1,
    "race: naive read-then-update",
    figure(1).by_major,
    calls(race.run_race, mode="naive"),
    reads("run_more_than_once", sizes=["jobs", "workers"]),
    says("{run_more_than_once:,} of {jobs:,} jobs run more than once ({workers} workers)"),
    judge_naive,
    full={"workers": 8, "jobs": 400, "work_ms": 10},
)


# --- 2, 3, 4: two sessions, one locked row -----------------------------------------

# The three replays share their sizes: A holds job 1 for 2 s (1 s with --quick).
HOLDS: Sizes = {
    "full": {"hold_seconds": 2.0},
    "quick": {"hold_seconds": 1.0},
    "shrunk": "A holds 1 s, not 2 s",
}


def measure_replay(result, sizes) -> Values:
    event = result.wait_event
    return {
        "hold_s": sizes["hold_seconds"],
        "b_job": result.b_job,
        "b_s": result.b_seconds,
        "sqlstate": result.sqlstate,
        "waiting_when_sampled": result.still_waiting_at_sample,
        "wait_event": list(event) if event else None,
        "blocked_by_a": result.blocked_by_a,
    }


def replay_figure(
    number: int, clause: str, what: str, describe: Describe, judge: Judge, **more: Any
) -> Entry:
    """Figures 2 to 4: the same two sessions, B's claim ending in `clause`."""
    return Entry(
        number,
        f"locks: {what}",
        figure(number).by_major,
        calls(locks.replay, steps=False, clause=clause),
        measure_replay,
        describe,
        judge,
        **HOLDS,
        **more,
    )


def waited_on_a(values: Values) -> bool:
    return bool(
        values["waiting_when_sampled"]
        and values["wait_event"] == ["Lock", "transactionid"]
        and values["blocked_by_a"]
    )


def describe_for_update(values: Values) -> str:
    event = (
        " / ".join(str(p) for p in values["wait_event"])
        if values["wait_event"] and values["waiting_when_sampled"]
        else "none"
    )
    got = f"got job {values['b_job']} after {seconds(values['b_s'])}"
    return f"B waited on {event}, {got} (A held {values['hold_s']:g} s)"


def judge_for_update(values: Values, major: int) -> FigureVerdict:
    if not waited_on_a(values):
        return differs(
            f"B was not seen waiting on Lock / transactionid behind A (saw {values['wait_event']})"
        )
    if values["b_job"] != 2:
        return differs(f"after A committed, B got job {values['b_job']}, not job 2")
    return reproduced()


FOR_UPDATE = replay_figure(
    2,
    "for_update",
    "A holds job 1, B runs FOR UPDATE",
    describe_for_update,
    judge_for_update,
    must=waited_on_a,
    must_claim="B waits on Lock / transactionid behind A",
)


def failed_at_once(values: Values) -> bool:
    return values["sqlstate"] == "55P03" and values["b_s"] < values["hold_s"] / 2


def describe_nowait(values: Values) -> str:
    return f"B: error {values['sqlstate'] or 'none'} after {seconds(values['b_s'])}"


def judge_nowait(values: Values, major: int) -> FigureVerdict:
    if values["sqlstate"] != "55P03":
        return differs(f"B got {values['sqlstate'] or 'no error'} (job {values['b_job']}), not 55P03")
    if values["b_s"] >= values["hold_s"] / 2:  # waiting for A would take the whole hold
        return differs(f"55P03 came only after {seconds(values['b_s'])}, not at once")
    return reproduced()


NOWAIT = replay_figure(
    3,
    "nowait",
    "the same with NOWAIT",
    describe_nowait,
    judge_nowait,
    must=failed_at_once,
    must_claim="error 55P03 at once",
)

SKIP_LOCKED_UNDER_S = figure(4).values["under_s"]


def judge_skip_locked(values: Values, major: int) -> FigureVerdict:
    if values["b_job"] != 2 or values["sqlstate"]:
        return differs(f"B got job {values['b_job']} ({values['sqlstate'] or 'no error'}), not job 2")
    if values["b_s"] < SKIP_LOCKED_UNDER_S:
        return reproduced()
    if values["b_s"] < values["hold_s"] / 2:
        return explained(
            "B skipped the locked row without waiting for A; the milliseconds "
            "depend on a busy machine's scheduling (lesson 02)"
        )
    return differs(f"B took {seconds(values['b_s'])}: as long as A's hold")


SKIP_LOCKED = replay_figure(
    4,
    "skip_locked",
    "the same with SKIP LOCKED",
    lambda values: f"B got job {values['b_job']} after {seconds(values['b_s'])}",
    judge_skip_locked,
    timing=True,
)


# --- 5: batch claims --------------------------------------------------------------


def describe_batches(values: Values) -> str:
    once = "each job once" if values["every_job_once"] else "NOT each job once"
    sessions = f"{values['workers']} sessions at once"
    return f"{values['batches']:,} batches, largest {values['largest']:,} rows, {once} ({sessions})"


def judge_batches(values: Values, major: int) -> FigureVerdict:
    expected = -(-values["jobs"] // values["batch"])
    if values["largest"] > values["batch"]:
        return differs(f"a batch of {values['largest']:,} rows, over its LIMIT {values['batch']:,}")
    if not values["every_job_once"]:
        return differs("some job was claimed twice, or never")
    if values["batches"] == expected:
        return reproduced()
    if expected < values["batches"] <= expected + values["workers"]:
        short = values["batches"] - expected
        return explained(
            f"{values['workers']} sessions drained at once and split the last rows, so "
            f"{short} more {'batch' if short == 1 else 'batches'} than the guide's came back (lesson 03)"
        )
    return differs(f"{values['batches']:,} batches, not {expected:,}")


BATCHES = Entry(
    5,
    "claims: batch drain",
    figure(5).by_major,
    calls(claims.batch_drain),
    reads("workers", "batches", "every_job_once", sizes=["jobs", "batch"], largest="largest_batch"),
    describe_batches,
    judge_batches,
    full={"jobs": 100_000, "batch": 100},
    quick={"jobs": 10_000, "batch": 100},
    shrunk="10,000 jobs, not 100,000 (so 100 batches)",
)


# --- 6: five ways -----------------------------------------------------------------


FIVE_WAYS_SHOWN = ("hold_for_update", "lease_skip_locked")  # the two the guide's claim sets apart


def measure_five_ways(result, sizes) -> Values:
    serial = sizes["jobs"] * sizes["work_ms"] / 1000
    return {
        "rounds": sizes["rounds"],
        "serial_ideal_s": serial,
        "shared_ideal_s": serial / sizes["workers"],
        "median_s": {mode: result.median(mode) for mode in FIVE_WAYS_SHOWN},
    }


def judge_five_ways(values: Values, major: int) -> FigureVerdict:
    held = values["median_s"]["hold_for_update"]
    if held > values["serial_ideal_s"]:
        return reproduced()
    return differs(
        f"hold + FOR UPDATE took {held:.2f} s, under the {values['serial_ideal_s']:.1f} s serial ideal"
    )


FIVE_WAYS = Entry(
    6,
    "claims: five ways",
    figure(6).by_major,
    calls(claims.five_way),
    measure_five_ways,
    says(
        "hold + FOR UPDATE {median_s[hold_for_update]:.2f} s, "
        "lease + SKIP LOCKED {median_s[lease_skip_locked]:.2f} s "
        "(ideal {serial_ideal_s:.1f} serial, {shared_ideal_s:.1f} shared)"
    ),
    judge_five_ways,
    full={"rounds": 3, "workers": 8, "jobs": 400, "work_ms": 10},
    quick={"rounds": 1, "workers": 8, "jobs": 400, "work_ms": 10},
    shrunk="1 round, not 3",
    timing=True,
)


# --- 7: zero work -----------------------------------------------------------------


def measure_zero_work(result, sizes) -> Values:
    return {
        "jobs": sizes["jobs"],
        "rounds": sizes["rounds"],
        "skip_locked_s": result.median("lease_skip_locked"),
        "for_update_s": result.median("lease_for_update"),
        "saving": result.skip_locked_saving,
    }


def judge_zero_work(values: Values, major: int) -> FigureVerdict:
    saving = values["saving"]
    if saving >= claims.TOO_CLOSE_TO_CALL:
        # One run's saving is not the gain to expect: the guide's ranges nearly touch (lesson 03).
        return reproduced(
            f"SKIP LOCKED {saving:.0%} faster in this one run; the guide saw a modest gain, "
            "near its run-to-run spread"
        )
    if saving > -claims.TOO_CLOSE_TO_CALL:
        return explained(
            f"the medians are {abs(saving):.0%} apart: too close to call on a shared "
            "machine, as the guide's own ranges nearly touch (lesson 03)"
        )
    return differs(f"SKIP LOCKED was {-saving:.0%} slower")


ZERO_WORK = Entry(
    7,
    "claims: zero work, lease claims",
    figure(7).by_major,
    calls(claims.zero_work),
    measure_zero_work,
    says("SKIP LOCKED {skip_locked_s:.2f} s, without {for_update_s:.2f} s (medians)"),
    judge_zero_work,
    full={"jobs": 3_000, "workers": 8, "rounds": 3},
    quick={"jobs": 1_000, "workers": 8, "rounds": 1},
    shrunk="1,000 jobs and 1 round, not 3,000 and 3",
    timing=True,
)


# --- 16: the claim's plan -----------------------------------------------------------


def describe_plans(values: Values) -> str:
    if values["uses_ready_index"] and values["lockrows_above"]:
        return "Index Scan using jobs_ready_idx under LockRows"
    return "jobs_ready_idx " + ("used, but not under LockRows" if values["uses_ready_index"] else "not used")


def judge_plans(values: Values, major: int) -> FigureVerdict:
    if values["uses_ready_index"] and values["lockrows_above"]:
        return reproduced()
    return differs("the locking read does not scan jobs_ready_idx under LockRows")


PLANS = Entry(
    16,
    "claims: EXPLAIN of the claim",
    figure(16).by_major,
    calls(claims.explain_claims, steps=False),
    reads("uses_ready_index", lockrows_above="lockrows_above_index_scan"),
    describe_plans,
    judge_plans,
)


# --- 19: throughput -------------------------------------------------------------

GUIDE_JOBS_PER_S = figure(19).values["jobs"] / figure(19).values["seconds"]


def judge_throughput(values: Values, major: int) -> FigureVerdict:
    if values["completed"] != values["jobs"]:
        return differs(f"{values['completed']:,} of {values['jobs']:,} jobs completed")
    if values["jobs_per_s"] >= GUIDE_JOBS_PER_S * 0.75:
        return reproduced()
    return explained(
        "throughput is the machine's: its CPUs, its disk and what else runs on it "
        "(the load on the machine line; lesson 11)"
    )


THROUGHPUT = Entry(
    19,
    "switching: batched drain rate",
    figure(19).by_major,
    calls(switching.drain_rate),
    reads("completed", "jobs_per_s", sizes=["jobs", "workers"], seconds="elapsed_s"),
    says(
        "{completed:,} jobs in {seconds:.2f} s, {jobs_per_s:,.0f} jobs/s ({workers} threads, batches of 100)"
    ),
    judge_throughput,
    full={"jobs": 100_000, "batch": 100, "workers": 4},
    quick={"jobs": 10_000, "batch": 100, "workers": 4},
    shrunk="10,000 jobs, not 100,000",
    timing=True,
)


ENTRIES = [NAIVE, FOR_UPDATE, NOWAIT, SKIP_LOCKED, BATCHES, FIVE_WAYS, ZERO_WORK, PLANS, THROUGHPUT]
