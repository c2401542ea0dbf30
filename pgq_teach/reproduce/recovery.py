"""The figures about failure (guide #8 to #11): a crashed worker with a held
transaction against one with a lease, cleanup held back by a hold-style
worker, the stale worker fenced out, and the retry schedule."""

from __future__ import annotations

from .. import tables
from ..experiments import crash, fencing, retries
from ..guide import figure
from .entry import Entry, Values, calls, reads, says, seconds
from .verdicts import FigureVerdict, differs, reproduced

# --- 8: crashed workers ---------------------------------------------------------------


def measure_crash(result, sizes) -> Values:
    return {
        "lease_s": sizes["lease_s"],
        "held_job_free": result.held_job_claimed == result.hold_job,
        "held_claim_s": result.held_job_claim_s,
        "leased_status": result.lease_status_after_end,
        "reaped_at_once": result.reaped_at_once,
        "lease_left_s": result.lease_left_at_end_s,
        "back_after_s": result.back_after_s,
        "reaped_after_lease": result.reaped_after_lease,
    }


def describe_crash(v: Values) -> str:
    held = (
        f"held job claimed by another worker after {seconds(v['held_claim_s'])}"
        if v["held_job_free"]
        else "held job not free"
    )
    return (
        f"{held}; leased job {v['leased_status']}, handed back {v['back_after_s']:.2f} s later "
        f"({v['lease_left_s']:.2f} s of lease left)"
    )


def judge_crash(v: Values, major: int) -> FigureVerdict:
    if not v["held_job_free"]:
        return differs("the hold worker's job was not free once its session ended")
    if v["leased_status"] != "running" or v["reaped_at_once"]:
        return differs("the leased job came back before its lease ended")
    if not v["reaped_after_lease"] or v["back_after_s"] < v["lease_left_s"] - 0.05:
        return differs("the reaper did not hand the leased job back when its lease ended")
    return reproduced()


CRASH = Entry(
    8,
    "crash: hold against lease worker",
    figure(8).by_major,
    calls(crash.crash_both),
    measure_crash,
    describe_crash,
    judge_crash,
    full={"lease_s": 2.0},
)

# --- 9: cleanup held back -------------------------------------------------------------


def none_removed_while_held(v: Values) -> bool:
    return v["removed_while_held"] == 0


def judge_cleanup(v: Values, major: int) -> FigureVerdict:
    if not none_removed_while_held(v):
        return differs(
            f"VACUUM removed {v['removed_while_held']:,} rows while the worker held its transaction"
        )
    if v["dead_while_held"] != v["others"]:
        return differs(f"{v['dead_while_held']:,} dead rows held back, not the {v['others']:,} updated")
    if v["removed_after"] < v["others"]:
        return differs(f"after the commit VACUUM removed {v['removed_after']:,}, not all {v['others']:,}")
    return reproduced()


CLEANUP = Entry(
    9,
    "crash: cleanup held back",
    figure(9).by_major,
    calls(crash.cleanup_held_back),
    reads(
        sizes=["others"],
        removed_while_held="during.removed",
        dead_while_held="during.not_removable",
        removed_after="after.removed",
    ),
    says(
        "VACUUM while held: {removed_while_held:,} removed, {dead_while_held:,} dead not yet removable; "
        "after commit: {removed_after:,} removed"
    ),
    judge_cleanup,
    full={"others": 1_000},
    must=none_removed_while_held,
    must_claim="0 removed while a transaction holds back VACUUM",
)

# --- 10: the stale worker, fenced ---------------------------------------------------------


def stale_updates_nothing(v: Values) -> bool:
    return v["a_rows"] == 0


def judge_fencing(v: Values, major: int) -> FigureVerdict:
    if not stale_updates_nothing(v):
        return differs(f"the stale worker's completion updated {tables.count(v['a_rows'], 'row')}")
    if v["b_rows"] != 1:
        return differs(f"the current holder's completion updated {tables.count(v['b_rows'], 'row')}, not 1")
    return reproduced()


def describe_fencing(v: Values) -> str:
    return (
        f"A's completion updated {tables.count(v['a_rows'], 'row')}, B's {v['b_rows']} "
        f"(fencing tokens {v['a_token']} then {v['b_token']})"
    )


FENCING = Entry(
    10,
    "fencing: stale worker A, then B",
    figure(10).by_major,
    calls(fencing.stale_worker),
    reads("a_rows", "b_rows", "a_token", "b_token"),
    describe_fencing,
    judge_fencing,
    full={"lease_s": 1.0},
    must=stale_updates_nothing,
    must_claim="a stale completion updates 0 rows",
)

# --- 11: the retry schedule ---------------------------------------------------------------

GUIDE_WAITS_S = list(figure(11).values["waits_s"])


def measure_schedule(result, sizes) -> Values:
    return {"waits_s": result.waits_s, "statuses": [s.status for s in result.steps]}


def describe_schedule(v: Values) -> str:
    waits = ", ".join(str(w) for w in v["waits_s"])
    return f"waits {waits} s; failure {len(v['statuses'])} leaves it {v['statuses'][-1]}"


def judge_schedule(v: Values, major: int) -> FigureVerdict:
    if v["waits_s"][:4] != GUIDE_WAITS_S:
        return differs(f"waits {v['waits_s'][:4]}, not {GUIDE_WAITS_S}")
    if len(v["statuses"]) < 5 or v["statuses"][4] != "dead":
        return differs("the fifth failure did not leave the job dead")
    return reproduced()


SCHEDULE = Entry(
    11,
    "retries: one job through five failures",
    figure(11).by_major,
    calls(retries.schedule),
    measure_schedule,
    describe_schedule,
    judge_schedule,
    full={"failures": 5},
)

ENTRIES = [CRASH, CLEANUP, FENCING, SCHEDULE]
