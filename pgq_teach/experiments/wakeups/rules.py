"""The rules of guide #12 that lesson 00 does not already check, each run live
with its verdict (identical notifications fold into one, distinct ones do not;
a listener inside its own transaction hears nothing until it ends; a
notification nobody listens for is gone), and `heard_after_busy`: a listening
session whose client reads nothing for a while still gets every notification,
at the client's next read."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ... import checks, tables
from ...databases import Database
from ...errors import BadInput
from ...guide import GuideFigure, figure
from ...statements import run
from ..results import Comparison, Progress, Result, finish, tell
from .listening import DELIVERY_S, KIND, QUIET_S, heard, listen, notify_in_one_transaction


@dataclass(frozen=True)
class Rule:
    name: str
    question: str
    expected: str
    observed: str
    holds: bool


def one_transaction_rule(
    db: Database, name: str, question: str, payloads: list[str], arrive: list[str]
) -> Rule:
    """Send `payloads` in one transaction; the rule holds when exactly `arrive` arrives, in order."""
    with listen(db) as listener:
        notify_in_one_transaction(db, payloads)
        got = heard(listener, QUIET_S)
    return Rule(name, question, str(len(arrive)), str(len(got)), got == arrive)


def rule_identical(db: Database) -> Rule:
    """Three NOTIFYs with the same payload in one transaction arrive as one."""
    question = "Three identical notifications in one transaction: how many arrive?"
    return one_transaction_rule(db, "identical", question, [KIND] * 3, [KIND])


def rule_distinct(db: Database) -> Rule:
    """Three with different payloads arrive as three, in order."""
    question = "Three different payloads in one transaction: how many arrive?"
    return one_transaction_rule(db, "distinct", question, ["1", "2", "3"], ["1", "2", "3"])


def rule_busy_listener(db: Database) -> Rule:
    """A listener inside its own transaction hears nothing until it ends."""
    with listen(db) as listener:
        with listener.transaction():
            run(listener, "lab/open_transaction")
            notify_in_one_transaction(db, ["while you were busy"])
            during = heard(listener, QUIET_S)
        after = [n.payload for n in listener.notifies(timeout=DELIVERY_S, stop_after=1)]
    observed = f"{len(during)} while its transaction was open, {len(after)} after it ended"
    return Rule(
        "busy listener",
        "A listener inside its own transaction: when does it hear?",
        "0 while its transaction was open, 1 after it ended",
        observed,
        not during and len(after) == 1,
    )


def rule_nobody_listening(db: Database) -> Rule:
    """A notification sent while nobody listens is gone: a worker that
    reconnects and listens again sees nothing."""
    listener = listen(db)
    listener.close()  # the worker's connection drops
    notify_in_one_transaction(db, ["sent to nobody"])
    with listen(db) as again:  # the worker reconnects and listens again
        got = heard(again, QUIET_S)
    return Rule(
        "nobody listening",
        "Sent while the worker was disconnected: what does it see on reconnecting?",
        "nothing",
        "nothing" if not got else tables.count(len(got), "notification"),
        not got,
    )


@dataclass(frozen=True)
class LateRead:
    """Notifications sent while a listening session's client read nothing, and
    what that client read once it looked."""

    sent: list[str]
    busy_s: float  # how long the client read nothing
    heard: list[str]


def heard_after_busy(db: Database, count: int = 3, busy_s: float = 1.0) -> LateRead:
    """A listening session (autocommit, outside any transaction) whose client
    reads nothing for `busy_s`, as a worker busy on its other connection,
    while `count` notifications are sent, each in a transaction of its own from
    another session; then the client reads. The server delivers each to the
    listening session as it commits; the client finds them at its next read."""
    count = checks.whole_number("count", count, 1, 100)
    busy_s = checks.seconds("busy_s", busy_s, 0.0, 10.0)
    sent = [f"sent while the client was busy ({n})" for n in range(1, count + 1)]
    with listen(db) as listener:
        began = time.monotonic()
        for payload in sent:
            notify_in_one_transaction(db, [payload])
        time.sleep(max(0.0, busy_s - (time.monotonic() - began)))
        got = heard(listener, QUIET_S)
    return LateRead(sent, busy_s, got)


RULES: dict[str, Callable[[Database], Rule]] = {
    "identical": rule_identical,
    "distinct": rule_distinct,
    "busy listener": rule_busy_listener,
    "nobody listening": rule_nobody_listening,
}


@dataclass(kw_only=True)
class RulesResult(Result):
    rules: list[Rule]
    guide: GuideFigure = field(default_factory=lambda: figure(12))

    @property
    def all_hold(self) -> bool:
        return bool(self.rules) and all(r.holds for r in self.rules)

    def rule(self, name: str) -> Rule:
        return next(r for r in self.rules if r.name == name)

    def comparison(self) -> list[Comparison]:
        """One row per rule run: what this server did beside what the guide says (the expected)."""
        return [(r.question, None, r.observed, r.expected) for r in self.rules]

    def summary(self) -> str:
        lines = ["NOTIFY rules, run live" + self.stopped_note]
        lines += [
            f"  {r.name:<17} expected {r.expected}; observed {r.observed}: "
            f"{'holds' if r.holds else 'DOES NOT HOLD'}"
            for r in self.rules
        ]
        return "\n".join(lines + self.footer())


def notify_rules(
    db: Database,
    names: list[str] | None = None,
    *,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> RulesResult:
    """Run the named rules (all by default), in order."""
    names = list(RULES) if names is None else names
    unknown = [n for n in names if n not in RULES]
    if unknown or not names:
        raise BadInput(f"rules must be some of {list(RULES)}, got {names!r}")
    stop = stop or threading.Event()
    done: list[Rule] = []
    for n, name in enumerate(names):
        if stop.is_set():
            break
        done.append(RULES[name](db))
        tell(progress, n + 1, len(names))
    return finish(RulesResult, db, rules=done, stopped=len(done) < len(names))
