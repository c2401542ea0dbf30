"""Lesson 04's experiments, the crashed worker: what happens to a job when its
worker's session ends, what a held transaction costs VACUUM, and the reaper's
plan. One module a lab:

- `scene`: `CrashScene`, the lab itself: a hold-style and a lease-style
  worker, each on one job, and a third session that ends their sessions,
  claims, reaps and reads the board; with the sessions and readers the other
  labs share (`lab_session`, `answer`, `claim_one`).
- `sequence`: `crash_both`, the guide's sequence (figure #8).
- `cleanup`: `cleanup_held_back`, the VACUUM experiment (figure #9) and what
  the held transaction does to another database; `older_id_commits_later`.
- `reaper`: `reaper_plan` plans sql/reap.sql and runs it once on a few passed
  leases, `two_reapers` runs two at once, `reaper_backlog` measures an empty
  reaper pass as jobs run beside a held transaction and after VACUUM, and
  `reaper_cadence` counts how often one library Worker reaps over several
  seconds of work.

The names below are what lessons, widgets, reproduce, the fencing lab and tests
reach as `crash.NAME`.
"""

from .cleanup import CleanupResult, cleanup_held_back, older_id_commits_later
from .reaper import reaper_backlog, reaper_cadence, reaper_plan, two_reapers
from .scene import (
    DEFAULT_LEASE_S,
    HANDS_ON_LEASE_S,
    HANDS_ON_LIMITS,
    LAB_PREFIX,
    BoardRow,
    CrashScene,
    LockHolder,
    answer,
    claim_one,
)
from .sequence import CrashResult, crash_both

__all__ = [
    "DEFAULT_LEASE_S",
    "HANDS_ON_LEASE_S",
    "HANDS_ON_LIMITS",
    "LAB_PREFIX",
    "BoardRow",
    "CleanupResult",
    "CrashResult",
    "CrashScene",
    "LockHolder",
    "answer",
    "claim_one",
    "cleanup_held_back",
    "crash_both",
    "older_id_commits_later",
    "reaper_backlog",
    "reaper_cadence",
    "reaper_plan",
    "two_reapers",
]
