"""The relay's fenced batch completion (lesson 11): the learner's statement
marks a relay's batch done after the broker accepted it. The checker plays
four relays against a stand-in broker in the scratch database:

- A claims jobs 1-6, publishes them, and stalls past its lease. Jobs 1-5 are
  reaped and claimed again by B; job 6 went dead, was requeued (attempts back
  to 0) and claimed again by B. Then A wakes and completes its batch: stale.
  The jobs had been claimed different numbers of times before, so A's tokens
  are mixed (drawn afresh each check), and B's token for most jobs is one A
  holds for another job: a statement that matches `fence_token =
  ANY(:fence_tokens)`, not each id with its own token, lets A finish them.
- B publishes 1-6 and completes them: the current claim.
- C claimed 7-9 and crashed before publishing: nothing may mark them done,
  or the reaper never returns them and they are never published (lost).
- D claims what the reaper returned (their second claim: token 2) and the
  jobs never claimed (token 1), publishes and completes them: one batch with
  different tokens, so a statement that fences every row on one token fails.

At the end every job must be done and in the broker at least once, and the
broker's duplicates must be exactly the batch A published before stalling,
which the consumer's de-duplication by job id absorbs."""

from __future__ import annotations

from .. import tables
from ..outbox import Consumer, StandInBroker
from ..statements import run
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, sessions, stage
from .scenes import draw
from .verdict import Evidence, Verdict

JOBS = 12
A_BATCH = [1, 2, 3, 4, 5, 6]
REQUEUED = 6  # dead, requeued (attempts reset to 0), claimed again: attempts no longer proves the claim
C_BATCH = [7, 8, 9]


def statuses(owner) -> dict[int, str]:
    return {row[0]: row[3] for row in run(owner, "lab/all_jobs").fetchall()}


def complete(conn, learner: LearnerSQL, batch: list[tuple[int, int, int]]) -> int:
    """The learner's statement for a batch of (id, attempts, fence_token) as a claim returned them."""
    values = {
        "ids": [b[0] for b in batch],
        "attempts": [b[1] for b in batch],
        "fence_tokens": [b[2] for b in batch],
    }
    return execute(conn, learner, values).rowcount


def check_relay_completion(
    scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None
) -> Verdict:
    if learner.first_word not in ("UPDATE", "WITH"):
        raise Refused("the batch completion is one UPDATE of the batch's rows")
    broker, consumer = StandInBroker(), Consumer()
    rng = draw()
    # Each job's token counts its claims: A's batch holds tokens next to one another in a
    # random order, and each reclaim adds one, so B holds the tokens A holds, on other jobs.
    first = rng.randrange(1, 1_000)
    a_tokens = dict(zip(A_BATCH, rng.sample(range(first, first + len(A_BATCH)), len(A_BATCH)), strict=True))
    with sessions(scratch, learner, "order_event", JOBS) as (owner, conn):
        # A claimed 1-6 (attempts 1, its tokens) and published them, then stalled.
        a_batch = [(i, 1, a_tokens[i]) for i in A_BATCH]
        for job_id in A_BATCH:
            stage(owner, [job_id], "running", 1, a_tokens[job_id])
            broker.publish(job_id, {"n": job_id})
        # C claimed 7-9 and crashed before publishing.
        c_tokens = {i: rng.randrange(1, 1_000) for i in C_BATCH}
        for job_id in C_BATCH:
            stage(owner, [job_id], "running", 1, c_tokens[job_id])
        # B holds 1-6 now: 1-5 reaped and claimed again, 6 requeued (attempts 0) and claimed again.
        b_batch = [(i, 1 if i == REQUEUED else 2, a_tokens[i] + 1) for i in A_BATCH]
        for job_id, attempts, token in b_batch:
            stage(owner, [job_id], "running", attempts, token)
        if progress:
            progress(1, 4)
        stale = complete(conn, learner, a_batch)
        after_stale = statuses(owner)
        stale_done = [i for i in A_BATCH if after_stale[i] == "done"]
        for job_id in A_BATCH:
            broker.publish(job_id, {"n": job_id})
        current = complete(conn, learner, b_batch)
        after_b = statuses(owner)
        c_touched = [i for i in C_BATCH if after_b[i] != "running"]
        if progress:
            progress(2, 4)
        # C's lease runs out: the reaper returns whatever is still running; D claims
        # those and the jobs never claimed, publishes them, and completes them.
        reaped = [i for i in C_BATCH if after_b[i] == "running"]
        # Each row's token is its own claim count: one more for a reaped job's next claim,
        # 1 for a job claimed the first time, so one batch holds different tokens.
        fresh = list(range(C_BATCH[-1] + 1, JOBS + 1))
        d_batch = [(i, 2, c_tokens[i] + 1) for i in reaped] + [(i, 1, 1) for i in fresh]
        for job_id, attempts, token in d_batch:
            stage(owner, [job_id], "running", attempts, token)
        d_ids = [b[0] for b in d_batch]
        for job_id in d_ids:
            broker.publish(job_id, {"n": job_id})
        d_done = complete(conn, learner, d_batch)
        final = statuses(owner)
        if progress:
            progress(3, 4)
    consumer.consume(broker)
    published = {m for m, _ in broker.messages}
    lost = [i for i in range(1, JOBS + 1) if i not in published]
    not_done = [i for i in range(1, JOBS + 1) if final.get(i) != "done"]
    duplicates = len(broker.messages) - len(published)
    evidence = [
        Evidence(
            "stale relay A's completion (its lease ran out)",
            f"matched {tables.count(stale, 'row')}; marked done: {stale_done or 'none'}",
            stale == 0 and not stale_done,
        ),
        Evidence(
            "current relay B's completion",
            f"matched {current} of {len(b_batch)}",
            current == len(b_batch) and all(after_b[i] == "done" for i in A_BATCH),
        ),
        Evidence(
            "crashed relay C's unpublished jobs left for the reaper",
            f"{len(C_BATCH) - len(c_touched)} of {len(C_BATCH)} still running",
            not c_touched,
        ),
        Evidence("relay D's completion", f"matched {d_done} of {len(d_ids)}", d_done == len(d_ids)),
        Evidence("nothing lost: every job in the broker", f"{JOBS - len(lost)} of {JOBS}", not lost),
        Evidence("every job done", f"{JOBS - len(not_done)} of {JOBS}", not not_done),
        Evidence(
            "duplicates only from the stalled relay, absorbed by de-duplication",
            f"{tables.count(duplicates, 'duplicate')}; consumer processed {len(consumer.processed)}",
            duplicates == len(A_BATCH) and len(consumer.processed) == JOBS,
        ),
    ]
    if progress:
        progress(4, 4)
    return Verdict.from_evidence(
        exercise,
        evidence,
        _hint(stale_done, c_touched, batch_short=d_done < len(d_ids)),
        numbers={
            "stale_matched": stale,
            "lost": len(lost),
            "duplicates": duplicates,
            "broker_messages": len(broker.messages),
        },
        passed_headline="nothing lost, no duplicate beyond the stalled relay's, and the fence held",
        passed_hint=(
            "the fence holds per job: a stale relay finishes nothing, and nothing unpublished is marked done."
        ),
        server_version=scratch.db.server.version,
    )


def _hint(stale_done: list[int], c_touched: list[int], *, batch_short: bool) -> str:
    """What to fix, from the crashed relay's jobs touched, whether relay D (whom no stale relay
    or requeue stands in the way of) finished only part of its batch, and the jobs the stale
    relay finished."""
    if c_touched:
        return (
            "it marked jobs done that were not in the batch it was given, so the reaper never returned them "
            "and they were never published: match only the batch's ids (unnest(:ids, ...))."
        )
    if batch_short:
        return (
            "a relay finished only part of its own batch: each job of the batch needs status 'running' "
            "and its own fence_token, paired with its id (unnest(:ids, :fence_tokens)), not one token "
            "for the whole batch."
        )
    if stale_done == [REQUEUED]:
        return (
            f"job {REQUEUED} was requeued after going dead, so its attempts went back to 0 and the new claim "
            "has the same attempts as the stale one. Fence on fence_token, which only ever goes up."
        )
    if stale_done:
        return (
            "a stale relay finished someone else's claim: fence each job on its own fence_token, paired "
            "with its id (unnest(:ids, :fence_tokens)), not on any token of the batch."
        )
    return (
        "each job of the batch needs status 'running' and its own fence_token: pair :ids with "
        ":fence_tokens (unnest(:ids, :fence_tokens)), not one token for the whole batch."
    )


# --- the relay's hand-back while the broker is down (no-burn, per-key order) ------------

ORDERS = 3  # jobs 1-3 are orders 1-3's first events, jobs 4-6 their second events
OUTAGE_ROUNDS = 4  # claims the relay makes, and hands back, while the broker is down
HAND_BACK_MAX_ATTEMPTS = 2  # so two spent tries are already one too many


def check_relay_hand_back(
    scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None
) -> Verdict:
    """The broker is down for `OUTAGE_ROUNDS` rounds: each round the relay claims the
    head event of each order (claim_in_key_order) and hands the batch back with the
    learner's statement. Meanwhile relay S holds order 3's head under a newer claim.
    Then the broker is back: the next claim must take each order's first event.

    The events were claimed different numbers of times before (tokens drawn
    afresh each check), so R's first batch holds mixed tokens, and the token S
    takes for order 3's head is the one R holds for order 1's: a hand-back that
    matches `fence_token = ANY(:fence_tokens)`, not each id with its own token,
    hands S's claim back too."""
    if learner.first_word not in ("UPDATE", "WITH"):
        raise Refused("the hand-back is one UPDATE of the batch's rows")
    rng = draw()
    head = rng.randrange(1_000, 1_000_000)  # order 3's head; order 1's is one claim ahead
    tokens = {i: rng.randrange(1_000, 1_000_000) for i in range(1, 2 * ORDERS + 1)} | {
        ORDERS: head,
        1: head + 1,
    }
    with sessions(scratch, learner, "order_event", 2 * ORDERS) as (owner, conn):
        for n in range(ORDERS):
            run(owner, "exercise/stage_order_event", {"id": n + 1, "order_id": n + 1, "seq": 1})
            run(owner, "exercise/stage_order_event", {"id": ORDERS + n + 1, "order_id": n + 1, "seq": 2})
        for job_id, token in tokens.items():
            stage(owner, [job_id], "ready", 0, token, None, max_attempts=HAND_BACK_MAX_ATTEMPTS)
        claim = {"kind": "order_event", "batch": 10, "lease": "30 seconds"}
        s_token = 0
        for n in range(OUTAGE_ROUNDS):
            batch = run(owner, "claim_in_key_order", claim).fetchall()  # (id, ..., fence_token) rows
            if n == 0:  # order 3's head: R's lease runs out, S claims it again and is publishing it
                s_token = (
                    next((r[6] for r in batch if r[0] == ORDERS), head + 1) + 1
                )  # R's token for order 1's head
                stage(owner, [ORDERS], "running", 1, s_token)
            values = {
                "ids": [r[0] for r in batch],
                "fence_tokens": [r[6] for r in batch],
                "error": "broker down",
            }
            execute(conn, learner, values)
            if progress:
                progress(n + 1, OUTAGE_ROUNDS + 1)
        # lab/all_jobs: id, kind, payload, status, run_at, attempts, fence_token, ...
        after = {row[0]: (row[3], row[5], row[6]) for row in run(owner, "lab/all_jobs").fetchall()}
        back = run(owner, "claim_in_key_order", claim).fetchall()
    heads = {1, 2}  # order 3's head is S's
    got = {r[0] for r in back}
    statuses_now = {i: after[i][0] for i in after}
    tries = {i: after[i][1] for i in heads}
    evidence = [
        Evidence(
            "no try spent on the outage (orders 1-2's first events)",
            f"attempts after {OUTAGE_ROUNDS} refused rounds: {tries}",
            all(t == 0 for t in tries.values()),
        ),
        Evidence(
            "nothing dead",
            f"dead: {[i for i, s in statuses_now.items() if s == 'dead'] or 'none'}",
            "dead" not in statuses_now.values(),
        ),
        Evidence(
            "relay S's claim of order 3's first event left alone",
            f"status {statuses_now[ORDERS]}, fence token {after[ORDERS][2]}",
            statuses_now[ORDERS] == "running" and after[ORDERS][2] == s_token,
        ),
        Evidence(
            "broker back: the next claim takes each order's first event, and no second one",
            f"claimed {sorted(got) or 'nothing'}",
            got == heads,
        ),
    ]
    if progress:
        progress(OUTAGE_ROUNDS + 1, OUTAGE_ROUNDS + 1)
    return Verdict.from_evidence(
        exercise,
        evidence,
        _hand_back_hint(tries, statuses_now, got, heads),
        numbers={"max_tries": max(tries.values()), "claimed_after": len(got)},
        passed_headline="no try spent, nothing dead, S's claim untouched, and the order kept",
        passed_hint="an outage is not the event's fault: the try goes back, and the event keeps its place.",
        server_version=scratch.db.server.version,
    )


def _hand_back_hint(
    tries: dict[int, int], statuses_now: dict[int, str], got: set[int], heads: set[int]
) -> str:
    """What to fix, from what the rounds left behind."""
    if any(t > 0 for t in tries.values()):
        return (
            "each round spent a try: the claim counted one, and the hand-back kept it. Give it back "
            "(attempts - 1): these events have used up their 2 tries, so their next failure of their own, "
            "or a relay crash the reaper cleans up, makes them dead."
        )
    if statuses_now[ORDERS] != "running":
        return (
            "it handed back relay S's claim too: fence each row on its own token "
            "(unnest :ids with :fence_tokens)."
        )
    if "dead" in statuses_now.values():
        return "an outage is not the event's fault: put the batch back to 'ready', never 'dead'."
    if got - heads:
        return (
            "an order's second event was claimed while its first was not sent: put the batch back to "
            "'ready' (not done), so it stays ahead of its order's later events."
        )
    return (
        "once the broker is back, the events must be claimable at once: keep their run_at (the relay's "
        "own pause is the backoff), status 'ready', lease cleared."
    )
