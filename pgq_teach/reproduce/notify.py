"""The figures about wake-ups (guide #12 and #13): NOTIFY's rules, and how
soon an idle worker picks a job up with and without it."""

from __future__ import annotations

from ..experiments import enqueue, wakeups
from ..guide import figure
from .entry import Entry, Values, calls, says
from .verdicts import FigureVerdict, differs, explained, reproduced

# --- 12: NOTIFY's rules -------------------------------------------------------------


def perform_rules(db, sizes, progress, stop):
    """The transactional enqueue (rolled back, committed), then the four rules of lesson 07."""
    in_transactions = enqueue.transactional_enqueue(db)
    return in_transactions, wakeups.notify_rules(db, progress=progress, stop=stop)


def measure_rules(result, sizes) -> Values:
    in_transactions, rules = result
    rb, ok = in_transactions.rolled_back, in_transactions.committed
    return {
        "rolled_back_heard": rb.heard,
        "committed_heard_while_open": len(ok.heard_while_open),
        "committed_heard_after": len(ok.heard_after),
        "rules": {r.name: r.holds for r in rules.rules},
        "observed": {r.name: r.observed for r in rules.rules},
    }


def describe_rules(values: Values) -> str:
    seen = values["observed"]
    return (
        f"rolled back: {values['rolled_back_heard']} heard; committed: "
        f"{values['committed_heard_while_open']} while open, {values['committed_heard_after']} after; "
        f"3 identical -> {seen.get('identical')}, "
        f"3 distinct -> {seen.get('distinct')}; busy listener: {seen.get('busy listener')}; "
        f"nobody listening: {seen.get('nobody listening')}"
    )


def judge_rules(values: Values, major: int) -> FigureVerdict:
    broken = [name for name, holds in values["rules"].items() if not holds]
    if values["rolled_back_heard"]:
        broken.insert(0, "rolled back")
    if values["committed_heard_while_open"] or not values["committed_heard_after"]:
        broken.insert(0, "delivered after COMMIT")
    if broken:
        return differs("these rules did not hold: " + ", ".join(broken))
    return reproduced()


RULES = Entry(
    12,
    "wakeups: NOTIFY rules",
    figure(12).by_major,
    perform_rules,
    measure_rules,
    describe_rules,
    judge_rules,
)

# --- 13: pickup latency ---------------------------------------------------------------

NOTIFY_WITHIN_S = figure(13).values["notify_s"]


def measure_latency(result, sizes) -> Values:
    return {
        "jobs": sizes["jobs"],
        "poll_s": sizes["poll_s"],
        "notify_ms": result.median_ms(True),
        "notify_max_ms": result.max_ms(True),
        "poll_ms": result.median_ms(False),
        "poll_max_ms": result.max_ms(False),
    }


def judge_latency(values: Values, major: int) -> FigureVerdict:
    notify, poll, poll_max = values["notify_ms"], values["poll_ms"], values["poll_max_ms"]
    if poll_max > values["poll_s"] * 1000 + 500:
        return differs(f"a job waited {poll_max:,.0f} ms without NOTIFY, longer than the poll")
    if notify >= poll:
        return differs("NOTIFY did not wake the worker sooner than the poll")
    if notify < NOTIFY_WITHIN_S * 1000:
        return reproduced()
    return explained(
        "NOTIFY still woke the worker long before the poll; the milliseconds are a busy machine's (lesson 07)"
    )


LATENCY = Entry(
    13,
    "wakeups: pickup latency",
    figure(13).by_major,
    calls(wakeups.pickup_latency, seed=1),
    measure_latency,
    says(
        "with NOTIFY median {notify_ms:,.1f} ms; without, median {poll_ms:,.0f} ms, "
        "up to {poll_max_ms:,.0f} ms (poll {poll_s:g} s: the guide's 5 s, shortened)"
    ),
    judge_latency,
    full={"jobs": 12, "poll_s": 1.0},
    quick={"jobs": 6, "poll_s": 1.0},
    shrunk="6 jobs, not 12",
    timing=True,
)

ENTRIES = [RULES, LATENCY]
