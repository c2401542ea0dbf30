"""Lesson 10d's experiments: changing the schema under a live queue. One module a lab:

- `freeze`: `freeze`, a plain `ALTER TABLE jobs ADD COLUMN` behind one open
  report, with Workers running: the lock queue, claims per second dropping to 0,
  leases that ran out and jobs run again; and `fix`, the same migration through
  `pgq_teach.migrate` (lock_timeout, retries, backoff): the queue keeps moving.
- `locks`: `which_locks`, what each kind of schema change locks and how long it
  takes at two table sizes: a constant default, a volatile default (a rewrite),
  CREATE INDEX beside CREATE INDEX CONCURRENTLY and what a failed concurrent
  build leaves, and a constraint added NOT VALID then validated.

`rules` holds what they stand beside: the guide's lease rule, and its silence on
schema changes.
"""

from .freeze import LiveMigration, QueuedLock, claims_chart, fix, freeze
from .locks import Change, LockSurvey, which_locks

__all__ = [
    "Change",
    "LiveMigration",
    "LockSurvey",
    "QueuedLock",
    "claims_chart",
    "fix",
    "freeze",
    "which_locks",
]
