"""The figures about claiming (guide #1 to #7, #16 and #19): the naive race,
the two-session lock replays, batch claims, the five ways, zero work, the
claim's plan, and the batched drain's throughput."""

from __future__ import annotations

from ..experiments import claims, locks, race, switching
from .entry import Entry, Values, both, seconds
from .verdicts import Verdict, differs, explained, reproduced

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
        "workers": result.workers,
        "batches": result.batches,
        "largest": result.largest_batch,
        "every_job_once": result.every_job_once,
    }


def describe_batches(v: Values) -> str:
    once = "each job once" if v["every_job_once"] else "NOT each job once"
    return (
        f"{v['batches']:,} batches, largest {v['largest']:,} rows, {once} ({v['workers']} sessions at once)"
    )


def judge_batches(v: Values, major: int) -> Verdict:
    expected = -(-v["jobs"] // v["batch"])
    if v["largest"] > v["batch"]:
        return differs(f"a batch of {v['largest']:,} rows, over its LIMIT {v['batch']:,}")
    if not v["every_job_once"]:
        return differs("some job was claimed twice, or never")
    if v["batches"] == expected:
        return reproduced()
    if expected < v["batches"] <= expected + v["workers"]:
        short = v["batches"] - expected
        return explained(
            f"{v['workers']} sessions drained at once and split the last rows, so "
            f"{short} more {'batch' if short == 1 else 'batches'} than the guide's came back (lesson 03)"
        )
    return differs(f"{v['batches']:,} batches, not {expected:,}")


# --- 6: five ways -----------------------------------------------------------------


FIVE_WAYS_SHOWN = ("hold_for_update", "lease_skip_locked")  # the two the guide's claim sets apart


def run_five_ways(db, sizes, progress, stop):
    return claims.five_way(db, progress=progress, stop=stop, **sizes)


def measure_five_ways(result, sizes) -> Values:
    serial = sizes["jobs"] * sizes["work_ms"] / 1000
    return {
        "rounds": sizes["rounds"],
        "serial_ideal_s": serial,
        "shared_ideal_s": serial / sizes["workers"],
        "median_s": {mode: result.median(mode) for mode in FIVE_WAYS_SHOWN},
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


# --- 19: throughput -------------------------------------------------------------

GUIDE_JOBS_PER_S = 100_000 / 4.0  # guide #19: 100,000 batched jobs in about 4 s on 2 CPUs


def run_throughput(db, sizes, progress, stop):
    return switching.drain_rate(db, progress=progress, stop=stop, **sizes)


def measure_throughput(result, sizes) -> Values:
    return {
        "jobs": sizes["jobs"],
        "workers": sizes["workers"],
        "completed": result.completed,
        "seconds": result.seconds,
        "jobs_per_s": result.jobs_per_s,
    }


def describe_throughput(v: Values) -> str:
    return (
        f"{v['completed']:,} jobs in {v['seconds']:.2f} s, {v['jobs_per_s']:,.0f} jobs/s "
        f"({v['workers']} threads, batches of 100)"
    )


def judge_throughput(v: Values, major: int) -> Verdict:
    if v["completed"] != v["jobs"]:
        return differs(f"{v['completed']:,} of {v['jobs']:,} jobs completed")
    if v["jobs_per_s"] >= GUIDE_JOBS_PER_S * 0.75:
        return reproduced()
    return explained(
        "throughput is the machine's: its CPUs, its disk and what else runs on it "
        "(the load on the machine line; lesson 11)"
    )


# --- the entries --------------------------------------------------------------------


def waited_on_a(v: Values) -> bool:
    return bool(
        v["waiting_when_sampled"] and v["wait_event"] == ["Lock", "transactionid"] and v["blocked_by_a"]
    )


def failed_at_once(v: Values) -> bool:
    return v["sqlstate"] == "55P03" and v["b_s"] < v["hold_s"] / 2


HOLD_FULL, HOLD_QUICK, HOLD_SHRUNK = {"hold_s": 2.0}, {"hold_s": 1.0}, "A holds 1 s, not 2 s"

ENTRIES = [
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
        both("B waits on Lock / transactionid, job 2 after 2.01 s"),
        run_replay("for_update"),
        measure_replay,
        describe_for_update,
        judge_for_update,
        full=HOLD_FULL,
        quick=HOLD_QUICK,
        shrunk=HOLD_SHRUNK,
        must=waited_on_a,
        must_claim="B waits on Lock / transactionid behind A",
    ),
    Entry(
        3,
        "locks: the same with NOWAIT",
        both("error 55P03 at once"),
        run_replay("nowait"),
        measure_replay,
        describe_nowait,
        judge_nowait,
        full=HOLD_FULL,
        quick=HOLD_QUICK,
        shrunk=HOLD_SHRUNK,
        must=failed_at_once,
        must_claim="error 55P03 at once",
    ),
    Entry(
        4,
        "locks: the same with SKIP LOCKED",
        both("job 2 in under 10 ms"),
        run_replay("skip_locked"),
        measure_replay,
        describe_skip_locked,
        judge_skip_locked,
        full=HOLD_FULL,
        quick=HOLD_QUICK,
        shrunk=HOLD_SHRUNK,
        timing=True,
    ),
    Entry(
        5,
        "claims: batch drain",
        both("1,000 batches, none over 100 rows"),
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
        both("hold + FOR UPDATE slower than the 4.0 s serial ideal"),
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
        both("1.90-2.07 s SKIP LOCKED, 2.06-2.47 s without"),
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
        16,
        "claims: EXPLAIN of the claim",
        both("Index Scan using jobs_ready_idx under LockRows"),
        run_plans,
        measure_plans,
        describe_plans,
        judge_plans,
    ),
    Entry(
        19,
        "switching: batched drain rate",
        both("100,000 batched jobs in about 4 s on 2 CPUs"),
        run_throughput,
        measure_throughput,
        describe_throughput,
        judge_throughput,
        full={"jobs": 100_000, "batch": 100, "workers": 4},
        quick={"jobs": 10_000, "batch": 100, "workers": 4},
        shrunk="10,000 jobs, not 100,000",
        timing=True,
    ),
]
