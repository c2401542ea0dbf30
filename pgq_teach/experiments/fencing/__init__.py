"""Lesson 05, the stalled worker: a slow worker is not a dead one. One module a
lab:

- `sequence`: `stale_worker()` runs the guide's sequence (figure #10) with a
  1 s lease: A claims the job and sends the receipt email, then stalls; the
  reaper hands the job back and B claims it; A's completion updates 0 rows,
  B's 1. It also counts the customer's inbox, with a plain handler (two
  receipts) or an idempotent one (one). Every step is an `Event` for the
  timeline.
- `heartbeat`: `long_job()` runs a job longer than its lease on two library
  `Worker`s, with and without `heartbeat=True`, and samples the lease deadline
  as it moves.
- `tokens`: `token_after_requeue()` shows whether the fencing token repeats
  once a dead job is put back by hand; `token_after_release()`, what the next
  claim's attempts and token are after sql/release_many.sql hands a job back.
- `batch`: `pool_batch()`, a batch of long jobs claimed at once under one
  heartbeat, with a second worker beside; `first_beats()`, how soon after each
  claim its job's first beat lands.

`lab` holds what they share: the receipt job, the limits, the lab's sessions,
a claim and its fenced completion.

A, B, the reaper and the person who requeues are scripted `Session`s
(pgq_teach.experiments.sessions), each statement its own transaction unless
the story opens one; the long job runs on the library's own `Worker`s.

The names below are what lessons, widgets, reproduce and tests reach as
`fencing.NAME`.
"""

from .batch import first_beats, pool_batch
from .heartbeat import LongJobResult, long_job
from .sequence import HANDLERS, Event, FencingResult, stale_worker
from .tokens import token_after_release, token_after_requeue

__all__ = [
    "HANDLERS",
    "Event",
    "FencingResult",
    "LongJobResult",
    "first_beats",
    "long_job",
    "pool_batch",
    "stale_worker",
    "token_after_release",
    "token_after_requeue",
]
