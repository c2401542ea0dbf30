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


def describe_crash(values: Values) -> str:
    held = (
        f"held job claimed by another worker after {seconds(values['held_claim_s'])}"
        if values["held_job_free"]
        else "held job not free"
    )
    return (
        f"{held}; leased job {values['leased_status']}, handed back {values['back_after_s']:.2f} s later "
        f"({values['lease_left_s']:.2f} s of lease left)"
    )


def judge_crash(values: Values, major: int) -> FigureVerdict:
    if not values["held_job_free"]:
        return differs("the hold worker's job was not free once its session ended")
    if values["leased_status"] != "running" or values["reaped_at_once"]:
        return differs("the leased job came back before its lease ended")
    if not values["reaped_after_lease"] or values["back_after_s"] < values["lease_left_s"] - 0.05:
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


def none_removed_while_held(values: Values) -> bool:
    return values["removed_while_held"] == 0


def judge_cleanup(values: Values, major: int) -> FigureVerdict:
    if not none_removed_while_held(values):
        return differs(
            f"VACUUM removed {values['removed_while_held']:,} rows while the worker held its transaction"
        )
    if values["dead_while_held"] != values["others"]:
        return differs(
            f"{values['dead_while_held']:,} dead rows held back, not the {values['others']:,} updated"
        )
    if values["removed_after"] < values["others"]:
        return differs(
            f"after the commit VACUUM removed {values['removed_after']:,}, not all {values['others']:,}"
        )
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


def stale_updates_nothing(values: Values) -> bool:
    return values["a_rows"] == 0


def judge_fencing(values: Values, major: int) -> FigureVerdict:
    if not stale_updates_nothing(values):
        return differs(f"the stale worker's completion updated {tables.count(values['a_rows'], 'row')}")
    if values["b_rows"] != 1:
        return differs(
            f"the current holder's completion updated {tables.count(values['b_rows'], 'row')}, not 1"
        )
    return reproduced()


def describe_fencing(values: Values) -> str:
    return (
        f"A's completion updated {tables.count(values['a_rows'], 'row')}, B's {values['b_rows']} "
        f"(fencing tokens {values['a_token']} then {values['b_token']})"
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


def describe_schedule(values: Values) -> str:
    waits = ", ".join(str(w) for w in values["waits_s"])
    return f"waits {waits} s; failure {len(values['statuses'])} leaves it {values['statuses'][-1]}"


def judge_schedule(values: Values, major: int) -> FigureVerdict:
    if values["waits_s"][:4] != GUIDE_WAITS_S:
        return differs(f"waits {values['waits_s'][:4]}, not {GUIDE_WAITS_S}")
    if len(values["statuses"]) < 5 or values["statuses"][4] != "dead":
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
