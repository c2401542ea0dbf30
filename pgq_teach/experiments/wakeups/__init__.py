"""Lesson 07's experiments: wake-ups with LISTEN/NOTIFY, on the live server. One
module a lab:

- `rules`: `notify_rules`, the rules of guide #12 that lesson 00 does not
  already check, each run live with its verdict (identical notifications fold
  into one, distinct ones do not; a listener inside its own transaction hears
  nothing until it ends; a notification nobody listens for is gone); and
  `heard_after_busy`, a listening session whose client reads nothing for a
  while still gets every notification, at the client's next read.
- `payload`: `payload_limit`, the server's own error for a payload of 8,000
  bytes or more.
- `latency`: `pickup_latency`, the library's Worker, idle, and jobs enqueued at
  random moments with and without NOTIFY (guide #13, the poll scaled down).
- `poolers`: `listen_is_per_session` and `through_pooler`, LISTEN through a
  pooler in transaction mode.
- `cost`: `notify_cost`, enqueue throughput of 8 producers with a NOTIFY per
  job, one per transaction, or none.
- `wakeup_herd`: `herd`, N idle Workers against one Worker with N executors.

`listening` holds what they share: a listening session of their own, what it
heard, and a sender that notifies in one transaction. Lab notifications use
their own channel, so they never wake real workers.

The names below are what lessons, widgets, reproduce and tests reach as
`wakeups.NAME`.
"""

from .cost import COST_MODES, CostResult, notify_cost
from .latency import LatencyResult, pickup_latency
from .listening import heard, listen, notify_in_one_transaction
from .payload import block_size, payload_limit
from .poolers import listen_is_per_session, pooler_installed, through_pooler
from .rules import RULES, RulesResult, heard_after_busy, notify_rules
from .wakeup_herd import herd

__all__ = [
    "COST_MODES",
    "RULES",
    "CostResult",
    "LatencyResult",
    "RulesResult",
    "block_size",
    "heard",
    "heard_after_busy",
    "herd",
    "listen",
    "listen_is_per_session",
    "notify_cost",
    "notify_in_one_transaction",
    "notify_rules",
    "payload_limit",
    "pickup_latency",
    "pooler_installed",
    "through_pooler",
]
