"""Staged scenes for the "Your turn" checkers: every check draws new ids,
fence tokens, leases and batch sizes, so a statement that writes one story's
value into its text (`:fence_token = 2`, `LIMIT 500`, `attempts >= 5`) fails
on the next scene instead of passing for the wrong reason."""

from __future__ import annotations

import random
import secrets

import psycopg

from ..statements import run


def draw() -> random.Random:
    """A random source for one check, seeded afresh each time."""
    return random.Random(secrets.randbits(64))


def fence_tokens(rng: random.Random, count: int) -> list[int]:
    """`count` distinct fence tokens, far from the small numbers a story uses."""
    return rng.sample(range(1_000, 1_000_000), count)


def falls_due(owner: psycopg.Connection, run_in_s: dict[int, float]) -> None:
    """Set each job's run_at to now() plus its seconds (negative: due that long ago)."""
    for job_id, seconds in run_in_s.items():
        run(owner, "exercise/stage_run_at", {"id": job_id, "run_in_s": seconds})
