"""Lesson 11's checklist: the guide's five signals to move, and its reasons to
stay, turned into a recommendation with its reasons. `Recommendation` is worked
out from the learner's ticks without a server, so it stays a plain record."""

from __future__ import annotations

from dataclasses import dataclass

from ... import tables
from ...errors import BadInput

SIGNALS = {
    "fan_out": "Many consumers need the same message: one event goes to billing, email and analytics.",
    "replay": "Consumers need to replay history from an offset (a position in a log).",
    "teams": "Producers and consumers belong to different teams or services "
    "that should not share a database.",
    "churn": "Queue churn makes autovacuum fall behind, or claims slow down, even after fixing long "
    "transactions and indexing.",
    "connections": "Workers hold so many database connections that the queue competes with the app for them.",
}
WHY = {
    "fan_out": "a table queue hands each job to one worker; fan-out is a broker's (or a log's) job",
    "replay": "replay from an offset is a log-based broker's core feature; done jobs are deleted here",
    "teams": "a shared database couples two teams' schemas, deploys and outages",
    "churn": "when tuned autovacuum still cannot keep up, the table is the wrong shape for the load",
    "connections": "the queue's connections are taken from the application's budget",
}
FIXES = {
    "churn": "first end long transactions (idle_in_transaction_session_timeout), keep the partial indexes, "
    "tune autovacuum on jobs and delete in batches (lesson 10); move only if it still falls behind",
    "connections": "first put the claims behind a pooler in transaction mode and claim in batches; LISTEN "
    "stays on one direct connection per worker process",
}
STAY = (
    "jobs are tied to your database writes (the enqueue commits with the order)",
    "volumes fit comfortably (measure your own claim time and dead tuples)",
    "one team owns both the producer and the workers",
)


@dataclass(frozen=True)
class Recommendation:
    verdict: str  # "stay", "fix first" or "move"
    reasons: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.verdict}: " + "; ".join(self.reasons)


def recommend(signals: set[str] | frozenset[str], *, fixes_tried: bool = False) -> Recommendation:
    """The guide's signals to move, weighed: fan-out, replay and team lines
    are things a table cannot do; churn and connections have fixes to try first."""
    unknown = set(signals) - set(SIGNALS)
    if unknown:
        raise BadInput(
            f"unknown {tables.plural(len(unknown), 'signal')} {sorted(unknown)}; "
            f"the signals are {', '.join(SIGNALS)}"
        )
    hard = [s for s in SIGNALS if s in signals and s not in FIXES]
    soft = [s for s in SIGNALS if s in signals and s in FIXES]
    if hard or (soft and fixes_tried):
        reasons = [WHY[s] for s in hard + soft]
        reasons.append("keep the transactional enqueue: an outbox relay forwards jobs to the broker")
        return Recommendation("move", tuple(reasons))
    if soft:
        return Recommendation("fix first", tuple(FIXES[s] for s in soft))
    return Recommendation("stay", tuple(f"stay while {r}" for r in STAY))
